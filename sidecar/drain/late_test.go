package drain

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestDrainWritesLateRowsApart: with density cuts on, a batch's late rows go to late-stream files
// (merge.LateFileName) and its dense on-time window to an on-time file with a tight range. The
// batch starts 30 s after midnight, so some late rows belong to the day before: cut on that day's
// rows alone they would be too few to cut, and would make an on-time file minutes wide; cut with
// the whole batch's density they are late too. Every sealed row is in the table exactly once.
func TestDrainWritesLateRowsApart(t *testing.T) {
	e := newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0
		c.SplitSparse = density.DefaultSplitSparse
	})
	w, err := walwriter.New(e.cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 11, 29, 0, 0, 30, 0, time.UTC)
	g := walgen.New(walgen.Options{Seed: 3, LateFraction: 0.05, MaxLateness: 2 * time.Minute})
	var sum RowSum
	rec := g.Batch(memory.DefaultAllocator, start, 80_000, 100*time.Microsecond) // an 8 s on-time window
	if err := sum.Add(rec, eventColumns...); err != nil {
		t.Fatal(err)
	}
	if err := w.Append("events", rec); err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != sum {
		t.Fatalf("table holds %+v, want the sealed rows %+v", got, sum)
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	var onTime, late int
	for _, f := range files {
		switch {
		case f.Partition == "2026-11-28":
			if !f.Late {
				t.Errorf("the closed day's file %s is on-time", f.Path)
			}
		case f.Late:
			late++
			if f.MaxTime >= start.UnixMicro() {
				t.Errorf("late file %s reaches into the on-time window", f.Path)
			}
		default:
			onTime++
			if f.MinTime < start.Add(-time.Second).UnixMicro() || f.Rows < 75_000 {
				t.Errorf("on-time file %s: from %s, %d rows; want the dense window only", f.Path, time.UnixMicro(f.MinTime).UTC(), f.Rows)
			}
		}
	}
	if onTime != 1 || late == 0 || len(files) < 3 {
		t.Fatalf("%d files, %d on-time and %d late today: want the late rows apart on both days", len(files), onTime, late)
	}
}
