package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/siglake/siglake/localwal"
)

// TestWalgenVersion1: `siglake walgen --wal-version 1` writes segments a drain older than
// version 2 reads (a mixed rollout); another version is refused naming the flag.
func TestWalgenVersion1(t *testing.T) {
	wal := filepath.Join(t.TempDir(), "wal")
	if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "2000", "--wal-version", "1"); r.code != 0 {
		t.Fatalf("walgen: exit %d\n%s", r.code, r.stderr)
	}
	segs, err := localwal.Scan(wal)
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	for _, s := range segs {
		seg, err := localwal.ReadAll(s.Path, localwal.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if seg.Header.Version != 1 {
			t.Fatalf("%s: version %d, want 1", s.Name, seg.Header.Version)
		}
		seg.Release()
	}
	if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "10", "--wal-version", "3"); r.code == 0 || !strings.Contains(r.stderr, "--wal-version 3: accepted: 1 or 2") {
		t.Fatalf("--wal-version 3: exit %d\n%s", r.code, r.stderr)
	}
}
