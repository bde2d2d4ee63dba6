package drain

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/drain/marker"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

func TestDrainCommitsEveryRowOnce(t *testing.T) {
	e := newEnv(t, nil)
	// Start just before midnight so rows span two day partitions.
	start := time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC)
	want := e.writeSegments("events", 6, 20000, 1, start)

	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 6 || res.Pending != 0 {
		t.Fatalf("cycle: %+v, want 6 segments drained and none pending", res)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table rows %+v, want %+v", got, want)
	}
	// A second cycle finds nothing and changes nothing.
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Batches != 0 {
		t.Fatalf("second cycle: %+v %v", res, err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after second cycle %+v, want %+v", got, want)
	}
	tbl, _ := e.lake.LoadTable(context.Background(), "events")
	m, ok, err := marks.ReadMark(tbl, "pod-0")
	if err != nil || !ok || m.Seq != 6 {
		t.Fatalf("mark %v %v %v, want seq 6", m, ok, err)
	}
}

// TestInflightMarkerWriteFailureDoesNotStopTheDrain: with the WAL disk full the marker cannot be
// written; the batch still commits and removes its segments (the one process that frees the disk
// must not stop on its informational marker), the failure is counted, and a marker write the
// previous run left half done is cleared at start.
func TestInflightMarkerWriteFailureDoesNotStopTheDrain(t *testing.T) {
	e := newEnv(t, nil)
	want := e.writeSegments("events", 3, 1000, 7, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	leftover := filepath.Join(e.cfg.WALDir, marker.Prefix+"events.json.tmp")
	if err := os.WriteFile(leftover, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if u := e.drain.CheckUncleanStop(context.Background()); u != nil {
		t.Fatalf("a half-written marker reported as an unclean stop: %+v", u)
	}
	if _, err := os.Stat(leftover); !os.IsNotExist(err) {
		t.Fatalf("leftover marker tmp not removed at start: %v", err)
	}
	if segs, _ := filepath.Glob(filepath.Join(e.cfg.WALDir, "*.wal")); len(segs) != 3 {
		t.Fatalf("sealed segments before the cycle: %v", segs)
	}
	e.drain.writeMarkerFile = func(string, []byte, os.FileMode) error { return syscall.ENOSPC }
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 3 || res.Pending != 0 {
		t.Fatalf("cycle with a full WAL disk: %+v, want 3 segments drained", res)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table rows %+v, want %+v", got, want)
	}
	if left, _ := filepath.Glob(filepath.Join(e.cfg.WALDir, "*.wal")); len(left) != 0 {
		t.Fatalf("segments left: %v", left)
	}
	if n := promtest.Counter(t, registryOf(e.drain.Metrics), "siglake_drain_inflight_marker_errors_total", ""); n != 2 {
		t.Fatalf("marker errors counted %v, want 2 (before the write and after it)", n)
	}
}
