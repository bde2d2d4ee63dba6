package drain

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/retention"
)

// TestDrainDropsRowsPastRetention: with a 30-day default period, a batch whose rows are all past
// retention commits no file, on a new table too (where the commit has no snapshot to report), yet
// moves the stream mark and removes its segments; a batch mixing old and new rows commits exactly
// the new ones. The dropped rows are counted.
func TestDrainDropsRowsPastRetention(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	e := newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0
		c.PastRetention = retention.DrainFilter(30 * 24 * time.Hour)
	})
	e.drain.Now = func() time.Time { return now }
	old := e.writeSegments("events", 2, 300, 1, now.Add(-40*24*time.Hour))
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if segs, err := localwal.Scan(e.cfg.WALDir); err != nil || len(segs) != 0 {
		t.Fatalf("%d segments left (%v), want the drained ones removed", len(segs), err)
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := marks.ReadMark(tbl, "pod-0"); !ok {
		t.Fatal("the stream mark did not move")
	}
	if tbl.CurrentSnapshot() != nil {
		t.Fatal("rows past retention were committed")
	}
	past := func() float64 { return testutil.ToFloat64(e.drain.Metrics.RowsPastRetention.WithLabelValues("events")) }
	if past() != float64(old.Rows) {
		t.Fatalf("siglake_drain_rows_past_retention_total = %v, want %d", past(), old.Rows)
	}
	// Now a table that exists: old rows beside fresh ones.
	fresh := e.writeSegments("events", 1, 300, 2, now.Add(-time.Hour))
	e.writeSegments("events", 1, 300, 3, now.Add(-35*24*time.Hour))
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != fresh {
		t.Fatalf("table holds %+v, want exactly the fresh rows %+v", got, fresh)
	}
	if past() != float64(old.Rows+300) {
		t.Fatalf("siglake_drain_rows_past_retention_total = %v, want %d", past(), old.Rows+300)
	}
}
