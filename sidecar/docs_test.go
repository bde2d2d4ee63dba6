package sidecar

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/siglake/siglake/sidecar/membership"
)

const (
	metricsDoc = "../docs/metrics.md"
)

// TestMetricsDocumented keeps docs/metrics.md and the registered metrics in step, and lints them.
func TestMetricsDocumented(t *testing.T) {
	m := NewMetrics()
	var names []string
	descs := make(chan *prometheus.Desc, 1000)
	m.Reg.Describe(descs)
	membership.Collector(nil).Describe(descs) // registered only when gossip runs
	close(descs)
	re := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range descs {
		if n := re.FindStringSubmatch(d.String()); n != nil && strings.HasPrefix(n[1], "siglake_") {
			names = append(names, n[1])
		}
	}
	sort.Strings(names)
	raw, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, n := range names {
		if !strings.Contains(doc, "| `"+n+"`") {
			t.Errorf("metric %s has no row in %s", n, metricsDoc)
		}
	}
	documented := regexp.MustCompile("(?m)^\\| `(siglake_[a-z_]+)`").FindAllStringSubmatch(doc, -1)
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	for _, d := range documented {
		if !have[d[1]] && !externalMetric(d[1]) {
			t.Errorf("%s documents %s, which no code registers", metricsDoc, d[1])
		}
	}
	// Give every vector a child so promlint sees it.
	m.Drain.Commits.WithLabelValues("t", "committed").Inc()
	m.Drain.SegmentsDrained.WithLabelValues("t").Inc()
	m.Drain.RowsCommitted.WithLabelValues("t").Inc()
	m.Drain.BytesCommitted.WithLabelValues("t").Inc()
	m.Drain.CommitDuration.WithLabelValues("t").Observe(1)
	m.Drain.Quarantined.WithLabelValues("corrupt").Inc()
	m.Drain.DrainErrors.WithLabelValues("commit").Inc()
	m.Drain.LastCommitSeconds.WithLabelValues("t").Set(1)
	m.Merge.Rewrites.WithLabelValues("k_way").Inc()
	m.Merge.InputBytes.WithLabelValues("k_way").Inc()
	m.Merge.OutputBytes.WithLabelValues("k_way").Inc()
	m.Merge.Duration.WithLabelValues("k_way").Observe(1)
	m.Merge.IndexSkipped.WithLabelValues("raw").Inc()
	m.Maintain.OverlapDepth.WithLabelValues("t").Set(1)
	m.Maintain.LiveFiles.WithLabelValues("t", "L0").Set(1)
	m.Maintain.LiveBytes.WithLabelValues("t", "L0").Set(1)
	m.Maintain.GaugesSampledAt.WithLabelValues("t").Set(1)
	m.Rewrite.Rewrites.WithLabelValues("l0", "committed").Inc()
	m.Rewrite.BytesRead.WithLabelValues("l0").Inc()
	m.Rewrite.BytesWritten.WithLabelValues("l0").Inc()
	m.Maintain.Expirations.WithLabelValues("ok").Inc()
	m.Maintain.OutstandingBins.WithLabelValues("t").Set(1)
	m.Maintain.OutstandingBytes.WithLabelValues("t").Set(1)
	m.Maintain.LastSuccess.WithLabelValues().Set(1)
	m.SetBuildInfo("v", "r")
	for _, v := range []*prometheus.CounterVec{m.Rebuild.Files, m.Rebuild.Blobs, m.Rebuild.Bytes, m.Rebuild.Failures, m.Rebuild.Dropped} {
		v.WithLabelValues("t").Inc()
	}
	fams, err := m.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(fams).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "siglake_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}

// externalMetric names metrics registered by loops this test does not build (filled in as they land).
func externalMetric(name string) bool {
	for _, p := range externalMetricPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

var externalMetricPrefixes []string
