package instrument

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/merge"
)

// TestMergeMetricsFromResults: the metrics merge.Rewrite recorded itself before it returned its
// measurements are the same when recorded from its result: per path, from the start.
func TestMergeMetricsFromResults(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMergeMetrics(reg)
	if n := testutil.CollectAndCount(m.Duration); n != 4 {
		t.Fatalf("duration histogram has %d series, want one per merge path (exported from the start)", n)
	}
	res := merge.RewriteResult{Path: merge.PathKWay, BytesRead: 1000, BytesWritten: 700, Took: 1500 * time.Millisecond,
		Outputs: []merge.Output{{Size: 300, SkippedIndexes: []string{"trace_id"}}, {Size: 400}}}
	m.Rewrite(res)
	m.Rewrite(merge.RewriteResult{Path: merge.PathSplice, BytesRead: 10, BytesWritten: 9, SplicedBytes: 8})
	m.CountSkipped([]merge.Output{{SkippedIndexes: []string{"trace_id", "service"}}})
	for _, c := range []struct {
		what string
		c    prometheus.Collector
		want float64
	}{
		{"rewrites{k_way}", m.Rewrites.WithLabelValues("k_way"), 1},
		{"rewrites{splice}", m.Rewrites.WithLabelValues("splice"), 1},
		{"rewrites{in_memory}", m.Rewrites.WithLabelValues("in_memory"), 0},
		{"input_bytes{k_way}", m.InputBytes.WithLabelValues("k_way"), 1000},
		{"output_bytes{k_way}", m.OutputBytes.WithLabelValues("k_way"), 700},
		{"spliced_bytes", m.SplicedBytes, 8},
		{"index_skipped{trace_id}", m.IndexSkipped.WithLabelValues("trace_id"), 2},
		{"index_skipped{service}", m.IndexSkipped.WithLabelValues("service"), 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", c.what, got, c.want)
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	var none *MergeMetrics // records nothing, and does not panic
	none.Rewrite(res)
	none.CountSkipped(res.Outputs)
}
