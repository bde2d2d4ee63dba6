// Package promtest reads metrics back in tests: counters summed over a label, gauges, labels.
// Only tests import it; it imports nothing of ours, so every package's tests can.
package promtest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Counter sums the counter name over the series whose label outcome is outcome ("" = all).
func Counter(t testing.TB, reg prometheus.Gatherer, name, outcome string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if outcome == "" || HasLabel(m, "outcome", outcome) {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return total
}

// NoneCounted fails the test, saying why, for each counter of names with a series of outcome
// outcome that is not 0.
func NoneCounted(t testing.TB, reg prometheus.Gatherer, why, outcome string, names ...string) {
	t.Helper()
	for _, name := range names {
		if n := Counter(t, reg, name, outcome); n != 0 {
			t.Errorf("%s: %s{outcome=%q} = %v, want 0", why, name, outcome, n)
		}
	}
}

// Gauge is the value of one gauge.
func Gauge(g interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

// HasLabel reports whether m has label name=value.
func HasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// HistogramCount is the number of observations of histogram name over every label set in reg.
func HistogramCount(t testing.TB, reg prometheus.Gatherer, name string) uint64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, f := range fams {
		if f.GetName() == name {
			for _, s := range f.GetMetric() {
				n += s.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}
