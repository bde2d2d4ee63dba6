package maintain

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

var retentionNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// sealDays seals `per` segments of 300 rows for each day D-from..D-to (from >= to), spread over
// the day, without late rows, and returns them (released at cleanup).
func sealDays(e *env, seed uint64, from, to, per int) []arrow.RecordBatch {
	e.t.Helper()
	g := walgen.New(walgen.Options{Seed: seed})
	d0 := retentionNow.Truncate(24 * time.Hour)
	var recs []arrow.RecordBatch
	for d := from; d >= to; d-- {
		for i := 0; i < per; i++ {
			start := d0.Add(-time.Duration(d)*24*time.Hour + time.Duration(i)*(24*time.Hour/time.Duration(per)))
			recs = append(recs, g.Batch(memory.DefaultAllocator, start, 300, (24*time.Hour/time.Duration(per))/300))
		}
	}
	e.te.Seal("events", recs...)
	e.t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	return recs
}

// expect fingerprints the rows of recs that keep says stay.
func expect(recs []arrow.RecordBatch, keep func(ts time.Time, service string) bool) rowsum.Sum {
	var sum rowsum.Sum
	for _, rec := range recs {
		tsc := rec.Column(0).(*array.Timestamp)
		svc := rec.Column(rec.Schema().FieldIndices("service")[0]).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			if keep(time.UnixMicro(int64(tsc.Value(i))).UTC(), svc.Value(i)) {
				s := rec.NewSlice(int64(i), int64(i+1))
				_ = sum.Add(s, walgen.Columns...)
				s.Release()
			}
		}
	}
	return sum
}

// TestRetentionInTheCycle: the process default period applies to a table without its own
// policy; retention runs at its interval, not every cycle; a table this process does not own is
// left alone.
func TestRetentionInTheCycle(t *testing.T) {
	e := newEnv(t, func(c *testConfig) {
		c.ReclusterInterval = 0
		c.RetentionInterval = time.Hour
		c.Retention = retention.Config{DefaultPeriod: 30 * 24 * time.Hour, DeleteDelay: 2 * time.Hour, MaxFiles: 8, MaxBytes: 1 << 30, Metadata: metadata}
	})
	recs := sealDays(e, 3, 33, 28, 1)
	e.te.DrainAll()
	now := retentionNow
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	m.Owns = func(string) bool { return false }
	if _, err := m.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	all := expect(recs, func(time.Time, string) bool { return true })
	if e.tableSum("events") != all {
		t.Fatal("retention ran on a table this process does not own")
	}
	m = newMaintainer(t, e, e.lake, func() time.Time { return now })
	rep, err := m.Cycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cutoff := now.Add(-30 * 24 * time.Hour).Truncate(24 * time.Hour)
	want := expect(recs, func(ts time.Time, _ string) bool { return !ts.Before(cutoff) })
	if len(rep.Retention) != 1 || rep.Retention[0].Outcome != "dropped" || e.tableSum("events") != want {
		t.Fatalf("first cycle: %+v; want one retention run that dropped the days before the cutoff", rep.Retention)
	}
	now = now.Add(10 * time.Second)
	if rep, err = m.Cycle(context.Background()); err != nil || len(rep.Retention) != 0 {
		t.Fatalf("a cycle 10 s later ran retention (%d runs, %v); want none before the interval", len(rep.Retention), err)
	}
	now = now.Add(time.Hour)
	if rep, err = m.Cycle(context.Background()); err != nil || len(rep.Retention) != 1 {
		t.Fatalf("a cycle an interval later: %d retention runs, %v; want one", len(rep.Retention), err)
	}
}

// TestRetentionRacesDrainRewriteDeleteTask: retention runs while the drain appends (including old
// rows already past retention, from a replayed WAL), level rewrites merge the same partitions and
// a delete task rewrites the same files. Whatever interleaving the catalog sees, no row is lost,
// none is duplicated and none past retention or deleted comes back. Run under the race detector.
func TestRetentionRacesDrainRewriteDeleteTask(t *testing.T) {
	e := newEnv(t, func(c *testConfig) {
		c.RetentionInterval = 0 // the test runs retention itself, concurrently
		c.DeleteTasks = false
		c.Retention = retention.Config{DefaultPeriod: 30 * 24 * time.Hour, MaxFiles: 8, MaxBytes: 1 << 30, Metadata: metadata}
	})
	old := sealDays(e, 5, 31, 29, 8) // 8 L0 files a day: level rewrites have work in each
	e.te.DrainAll()
	req, err := deletes.Record(context.Background(), e.lake, "events", deletes.Request{
		Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}, To: retentionNow.Add(-20 * 24 * time.Hour).Format(time.RFC3339)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	_ = req
	clock := func() time.Time { return retentionNow }
	m := newMaintainer(t, e, e.lake, clock)
	r := m.Retention()
	sweeper := m.Deletes()
	var fresh, replayed []arrow.RecordBatch
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 3; i++ {
				if err := f(); err != nil {
					errs <- err
				}
			}
		}()
	}
	// The drain, from now on with retention wired as the process wires it: segments of today and,
	// replayed, of day D-31 (past retention, dropped on arrival).
	e.drain.Cfg.PastRetention = retention.DrainFilter(e.cfg.Retention.DefaultPeriod)
	e.drain.Now = clock
	fresh = sealDays(e, 11, 0, 0, 3)
	replayed = sealDays(e, 13, 31, 31, 1)
	run(func() error { _, err := e.drain.Cycle(context.Background(), true); return err })
	run(func() error { _, err := m.Cycle(context.Background()); return err })
	run(func() error {
		_, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
		return err
	})
	run(func() error {
		_, err := sweeper.Sweep(context.Background(), "events", sweep.Options{Apply: true})
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Logf("concurrent step failed (retried below): %v", err)
	}
	// Quiesce: everything once more, one at a time, until nothing is left to do.
	for i := 0; i < 3; i++ {
		e.te.DrainAll()
		if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := sweeper.SweepTables(context.Background(), []string{"events"}, true); err != nil {
			t.Fatal(err)
		}
	}
	cutoff := retentionNow.Add(-30 * 24 * time.Hour).Truncate(24 * time.Hour)
	reqTo := retentionNow.Add(-20 * 24 * time.Hour)
	want := expect(old, func(ts time.Time, svc string) bool {
		return !ts.Before(cutoff) && !(svc == "billing" && ts.Before(reqTo))
	})
	want.Merge(expect(fresh, func(time.Time, string) bool { return true }))
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after the race the table holds %+v, want %+v", got, want)
	}
	all := expect(replayed, func(time.Time, string) bool { return true })
	if got := testutil.ToFloat64(e.drain.Metrics.RowsPastRetention.WithLabelValues("events")); got != float64(all.Rows) {
		t.Fatalf("the drain dropped %v rows past retention, want the %d replayed ones", got, all.Rows)
	}
}
