package localwal

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestScanIgnored: entries that look like segments but are not listed are
// reported with a reason; what is not meant as a segment is not.
func TestScanIgnored(t *testing.T) {
	dir := t.TempDir()
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	good := SegmentName("logs", 5, 9)
	touch(good)
	touch(segmentStem("logs", 5, 11) + OpenSuffix)
	target := filepath.Join(t.TempDir(), "elsewhere.wal")
	os.WriteFile(target, []byte("x"), 0o644)
	link := SegmentName("logs", 5, 10)
	if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, SegmentName("logs", 5, 16)), 0o755)
	for _, n := range []string{
		"logs.5.13.wal",
		"logs.00000000000000000005.0000000000000000001x.wal",
		"a.b." + SegmentName("logs", 5, 15),
		"logs.5.14.open",
		// Not meant as segments: not reported.
		"." + SegmentName("logs", 5, 12),
		SegmentName("logs", 5, 14) + ".tmp",
		StreamFile, "LOCK", "README",
	} {
		touch(n)
	}
	os.MkdirAll(filepath.Join(dir, QuarantineDir), 0o755)

	segs, ignored, err := ScanIgnored(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) != 1 || segs[0].Name != good {
		t.Fatalf("listed %v, want only %s", segs, good)
	}
	got := map[string]string{}
	for _, ig := range ignored {
		if ig.Path != filepath.Join(dir, ig.Name) {
			t.Errorf("%s: path %s", ig.Name, ig.Path)
		}
		got[ig.Name] = ig.Reason
	}
	want := map[string]string{
		link:                       IgnoredNotRegular,
		SegmentName("logs", 5, 16): IgnoredNotRegular,
		"logs.5.13.wal":            IgnoredMisnamed,
		"logs.00000000000000000005.0000000000000000001x.wal": IgnoredMisnamed,
		"a.b." + SegmentName("logs", 5, 15):                  IgnoredMisnamed,
		"logs.5.14.open":                                     IgnoredMisnamed,
	}
	if len(got) != len(want) {
		t.Fatalf("ignored %v, want %v", got, want)
	}
	for n, r := range want {
		if got[n] != r {
			t.Errorf("%s: reason %q, want %q", n, got[n], r)
		}
	}
	for _, r := range got {
		if !slices.Contains(IgnoredReasons, r) {
			t.Errorf("reason %q not in IgnoredReasons", r)
		}
	}
}
