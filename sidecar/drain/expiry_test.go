package drain

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestMarkSurvivesSnapshotExpiry (promise 1): after expiry has dropped every snapshot but the
// last, a segment that an early commit already holds reappears in the WAL (a crash between
// commit and removal, replayed late). The stream mark must still say it is in, so the drain
// removes it instead of appending its rows a second time.
func TestMarkSurvivesSnapshotExpiry(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	want := e.writeSegments("events", 5, 1000, 3, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	segs, err := localwal.Scan(e.cfg.WALDir)
	if err != nil || len(segs) != 5 {
		t.Fatalf("scan: %d segments, %v", len(segs), err)
	}
	// Keep a copy of the first segment, as a crash before its removal would have left it.
	saved, err := os.ReadFile(segs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	// Another pod's stream commits after it, so the snapshot that survives expiry is not one of
	// pod-0's: a mark kept in snapshot summaries would be gone now.
	other := *e
	other.cfg.WALDir = filepath.Join(e.dir, "wal-pod-1")
	d2 := *e.drain
	d2.Cfg = other.cfg.Config
	other.drain = &d2
	w, err := walwriter.New(other.cfg.WALDir, walwriter.Options{Stream: "pod-1"})
	if err != nil {
		t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: 99})
	rec := g.Batch(memory.DefaultAllocator, time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), 500, time.Millisecond)
	if err := want.Add(rec, eventColumns...); err != nil {
		t.Fatal(err)
	}
	if err := w.Append("events", rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d2.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if err := e.lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	if err := os.WriteFile(filepath.Join(e.cfg.WALDir, filepath.Base(segs[0].Path)), saved, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pending != 0 || res.Rows != 0 {
		t.Fatalf("replayed segment: %+v; want it removed without appending rows", res)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows %+v, want %+v: the replayed segment was appended again", got, want)
	}
}
