package maintain

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/plan"
)

// lastSuccess is siglake_maintenance_last_success_timestamp_seconds as exported, and whether it
// is exported at all.
func lastSuccess(t *testing.T, m *Metrics) (float64, bool) {
	t.Helper()
	reg, _ := registries.Load(m)
	fams, err := reg.(*prometheus.Registry).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "siglake_maintenance_last_success_timestamp_seconds" {
			return f.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// TestLastSuccessTimestamp: the per-process success gauge (the SiglakeMaintenanceNotSucceeding
// alert) is absent where no maintenance loop runs, 0 once one runs, set by a cycle that completes
// without error even when the process owns no table, and left alone by a cycle with an error.
func TestLastSuccessTimestamp(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	if _, ok := lastSuccess(t, m.Metrics); ok {
		t.Fatal("the gauge is exported before any maintenance loop ran (a drain-only process would alert)")
	}
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	m.Run(stop, context.Background(), time.Hour) // returns at once; the loop's start exports the gauge
	if v, ok := lastSuccess(t, m.Metrics); !ok || v != 0 {
		t.Fatalf("after the loop started: %v (exported %v), want 0", v, ok)
	}

	// An empty lake: nothing owned, and the cycle still counts.
	rep, err := m.Cycle(context.Background())
	if err != nil || !rep.Succeeded || rep.Tables != 0 {
		t.Fatalf("cycle over no table: %+v, %v; want a success with no table", rep, err)
	}
	if v, _ := lastSuccess(t, m.Metrics); v != float64(now.Unix()) {
		t.Fatalf("after a successful cycle owning nothing: %v, want %d", v, now.Unix())
	}
	// Tables owned by someone else: still a success.
	smallFilesTable(t, e, 3)
	m.Owns = func(string) bool { return false }
	now = now.Add(time.Minute)
	if rep, err := m.Cycle(context.Background()); err != nil || !rep.Succeeded {
		t.Fatalf("cycle owning none of the tables: %+v, %v", rep, err)
	}
	if v, _ := lastSuccess(t, m.Metrics); v != float64(now.Unix()) {
		t.Fatalf("after a cycle owning none of the tables: %v, want %d", v, now.Unix())
	}

	// An owned table whose pass fails: the gauge keeps the last success.
	m.Owns = nil
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimPrefix(tbl.CurrentSnapshot().ManifestList, "file://"), []byte("not avro"), 0o644); err != nil {
		t.Fatal(err)
	}
	was := now
	now = now.Add(time.Minute)
	if rep, err := m.Cycle(context.Background()); err == nil || rep.Succeeded {
		t.Fatalf("cycle over a broken table: %+v, %v; want an error", rep, err)
	}
	if v, _ := lastSuccess(t, m.Metrics); v != float64(was.Unix()) {
		t.Fatalf("after a failed cycle: %v, want the last success %d", v, was.Unix())
	}
}

// TestOutstandingWork: the outstanding-work gauges count the bins the planner found due and
// this process did not commit: what the pass budget deferred, and in a backlogged cycle what an
// unrestricted pass would plan. They fall to 0 once maintenance has caught up, and the pass
// report in /debug/status shows the same numbers.
func TestOutstandingWork(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	m.Plan.MaxBinsPerPass = 1 // one bin a pass: the rest is deferred
	gauges := func() (float64, float64) {
		return promtest.Gauge(m.Metrics.OutstandingBins.WithLabelValues("events")),
			promtest.Gauge(m.Metrics.OutstandingBytes.WithLabelValues("events"))
	}

	// Backlogged and skipped: nothing runs, everything due is outstanding.
	m.Backlog = func() int { return 1 << 20 }
	rep, err := m.Cycle(context.Background())
	if err != nil || rep.Decision != plan.DecisionSkippedBackpressure.String() {
		t.Fatalf("backlogged cycle: %+v, %v", rep, err)
	}
	bins, bytes := gauges()
	if bins < 2 || bytes <= 0 {
		t.Fatalf("skipped cycle: outstanding %v bins, %v bytes; want the work an unrestricted pass plans (at least 2 bins)", bins, bytes)
	}
	if p := m.State("events").LastPass; p.OutstandingBins != int(bins) || p.OutstandingBytes != int64(bytes) || rep.OutstandingBins != int(bins) {
		t.Fatalf("pass report %d bins / %d bytes, cycle %d bins; gauges %v / %v", p.OutstandingBins, p.OutstandingBytes, rep.OutstandingBins, bins, bytes)
	}
	skipped := bins

	// Not backlogged: one bin commits, the rest is deferred by the budget.
	m.Backlog = nil
	now = now.Add(5 * time.Minute)
	rep, err = m.Cycle(context.Background())
	if err != nil || rep.Rewrites != 1 {
		t.Fatalf("budgeted cycle: %+v, %v; want one rewrite", rep, err)
	}
	after, _ := gauges()
	if after < 1 || after >= skipped {
		t.Fatalf("after one of %v bins committed: outstanding %v bins, want fewer but above 0", skipped, after)
	}
	t.Logf("outstanding: %v bins in the skipped cycle, %v after the budgeted one", skipped, after)

	// Enough budget and cycles: maintenance catches up and nothing is outstanding.
	m.Plan.MaxBinsPerPass = plan.DefaultConfig().MaxBinsPerPass
	for i := 0; i < 30; i++ {
		now = now.Add(5 * time.Minute)
		rep, err = m.Cycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Planned == 0 && rep.Decision == plan.DecisionRun.String() {
			break
		}
	}
	if bins, bytes := gauges(); bins != 0 || bytes != 0 {
		t.Fatalf("after maintenance caught up (%+v): outstanding %v bins, %v bytes; want 0", rep, bins, bytes)
	}
}
