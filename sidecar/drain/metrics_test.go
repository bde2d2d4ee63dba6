package drain

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/lake"
)

// TestCommitOutcomesStartAtZero: once the drain has seen a table, its commit counter is exported
// for every outcome, so the table's first failed commit shows in increase().
func TestCommitOutcomesStartAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, nil)
	d := &Drain{Metrics: m, Log: zap.NewNop(), Now: time.Now}
	d.observe(BatchOutcome{Table: "events", Segments: 1, Removed: 1, Rows: 10, Commit: lake.CommitResult{Outcome: lake.Committed}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "siglake_drain_commits_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			if promtest.HasLabel(s, "table", "events") {
				for _, l := range s.GetLabel() {
					if l.GetName() == "outcome" {
						got[l.GetValue()] = s.GetCounter().GetValue()
					}
				}
			}
		}
	}
	want := map[string]float64{"committed": 1, "already_committed": 0, "failed": 0}
	for o, v := range want {
		if g, ok := got[o]; !ok || g != v {
			t.Errorf("siglake_drain_commits_total{table=events,outcome=%s} = %v (exported %v), want %v", o, g, ok, v)
		}
	}
}

// TestQuarantineReasonsListed: every reason the bad-input cases quarantine with is one the metric
// is exported for at start.
func TestQuarantineReasonsListed(t *testing.T) {
	for _, c := range badCases() {
		if !slices.Contains(metrics.QuarantineReasons, c.reason) {
			t.Errorf("case %s quarantines with reason %q, which metrics.QuarantineReasons does not list", c.name, c.reason)
		}
	}
}
