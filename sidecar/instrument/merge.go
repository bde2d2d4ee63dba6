package instrument

import (
	"time"

	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/merge"
)

// pathLabel is a merge path as a metric label value: snake_case like every label value
// (k_way, in_memory, page_bounded, splice); logs and /debug/status keep the path's own name.
func pathLabel(p merge.PathKind) string { return strings.ReplaceAll(string(p), "-", "_") }

// MergeMetrics are the merge engine's Prometheus collectors, fed from the results merge returns.
// A nil *MergeMetrics is valid and records nothing.
type MergeMetrics struct {
	Rewrites     *prometheus.CounterVec
	InputBytes   *prometheus.CounterVec
	OutputBytes  *prometheus.CounterVec
	Duration     *prometheus.HistogramVec
	IndexSkipped *prometheus.CounterVec
	SplicedBytes prometheus.Counter
}

// NewMergeMetrics creates the collectors and registers them with reg (if not nil).
func NewMergeMetrics(reg prometheus.Registerer) *MergeMetrics {
	m := &MergeMetrics{
		Rewrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_merge_rewrites_total",
			Help: "Completed merge rewrites, by merge path.",
		}, []string{"path"}),
		InputBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_merge_input_bytes_total",
			Help: "Bytes read from input data files by completed rewrites, by merge path.",
		}, []string{"path"}),
		OutputBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_merge_output_bytes_total",
			Help: "Bytes of output data files written by completed rewrites, by merge path.",
		}, []string{"path"}),
		Duration: prometheus.NewHistogramVec(NativeHistogram(prometheus.HistogramOpts{
			Name:    "siglake_merge_duration_seconds",
			Help:    "Wall time of completed rewrites, by merge path.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14),
		}), []string{"path"}),
		IndexSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_footer_skipped_total",
			Help: "Footer inverted indexes left out because they exceeded SIGLAKE_INDEX_FOOTER_MAX_BYTES, by column.",
		}, []string{"column"}),
		SplicedBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_merge_spliced_bytes_total",
			Help: "Bytes of output row groups the splice path copied from input files without re-encoding them.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Rewrites, m.InputBytes, m.OutputBytes, m.Duration, m.IndexSkipped, m.SplicedBytes)
	}
	for _, p := range []merge.PathKind{merge.PathInMemory, merge.PathKWay, merge.PathPageBounded, merge.PathSplice} { // at 0 from the start
		l := pathLabel(p)
		m.Rewrites.WithLabelValues(l)
		m.InputBytes.WithLabelValues(l)
		m.OutputBytes.WithLabelValues(l)
		m.Duration.WithLabelValues(l)
	}
	return m
}

// Rewrite records one completed merge.Rewrite (the caller records only successful ones: a failed
// merge counts in the rewrite's own failure metrics).
func (m *MergeMetrics) Rewrite(res merge.RewriteResult) {
	if m == nil {
		return
	}
	p := pathLabel(res.Path)
	m.Rewrites.WithLabelValues(p).Inc()
	m.InputBytes.WithLabelValues(p).Add(float64(res.BytesRead))
	m.OutputBytes.WithLabelValues(p).Add(float64(res.BytesWritten))
	m.Duration.WithLabelValues(p).Observe(res.Took.Seconds())
	m.SplicedBytes.Add(float64(res.SplicedBytes))
	m.CountSkipped(res.Outputs)
}

// CountSkipped counts the inverted indexes outputs left out of their footers
// (the drain calls it for WriteSorted's outputs).
func (m *MergeMetrics) CountSkipped(outs []merge.Output) {
	if m == nil {
		return
	}
	for _, o := range outs {
		for _, c := range o.SkippedIndexes {
			m.IndexSkipped.WithLabelValues(c).Inc()
		}
	}
}

// NativeHistogram makes h also a native histogram where the scrape negotiates one (as the drain's):
// one series instead of one per bucket; the classic buckets stay for every other Prometheus.
func NativeHistogram(h prometheus.HistogramOpts) prometheus.HistogramOpts {
	h.NativeHistogramBucketFactor, h.NativeHistogramMaxBucketNumber, h.NativeHistogramMinResetDuration = 1.1, 100, time.Hour
	return h
}
