package localwal

import (
	"os"
	"path/filepath"
	"testing"
)

// TestQuarantineGroupReadable: the runbook tells an operator to read the
// reason file and the segment from a shell in the pod, which may run as
// another user of the pod's group. A segment written 0600 by a producer
// becomes 0640; one already 0644 keeps its other-read bit.
func TestQuarantineGroupReadable(t *testing.T) {
	dir := t.TempDir()
	for i, mode := range []os.FileMode{0o600, 0o644} {
		name := SegmentName("logs", 1, uint64(i+1))
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("bad"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
		moved, err := Quarantine(dir, SegmentInfo{Path: path}, ReasonCorrupt, "test")
		if err != nil {
			t.Fatal(err)
		}
		for file, want := range map[string]os.FileMode{moved: mode | 0o640, moved + ReasonSuffix: 0o640} {
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("%s has mode %v, want %v", filepath.Base(file), got, want)
			}
		}
	}
}

// TestQuarantinedCount counts segments in quarantine/, not their reason files,
// temp files or a missing directory.
func TestQuarantinedCount(t *testing.T) {
	dir := t.TempDir()
	if n, err := Quarantined(dir); err != nil || n != 0 {
		t.Fatalf("no quarantine dir: %d %v", n, err)
	}
	for i := 1; i <= 2; i++ {
		path := filepath.Join(dir, SegmentName("logs", 1, uint64(i)))
		os.WriteFile(path, []byte("bad"), 0o644)
		if _, err := Quarantine(dir, SegmentInfo{Path: path}, ReasonCorrupt, "test"); err != nil {
			t.Fatal(err)
		}
	}
	// The same name twice gets a suffix; a temp file of a reason being written is not a segment.
	path := filepath.Join(dir, SegmentName("logs", 1, 1))
	os.WriteFile(path, []byte("bad again"), 0o644)
	if _, err := Quarantine(dir, SegmentInfo{Path: path}, ReasonCorrupt, "test"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, QuarantineDir, ".x.reason.json.tmp-1"), nil, 0o600)
	if n, err := Quarantined(dir); err != nil || n != 3 {
		t.Fatalf("Quarantined = %d %v, want 3", n, err)
	}
}
