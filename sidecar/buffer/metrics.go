package buffer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/buffer/segments"
)

// Metrics are the WAL buffer's metrics (docs/metrics.md "WAL buffer").
type Metrics struct {
	Requests  *prometheus.CounterVec // code
	Refusals  *prometheus.CounterVec // reason
	Rows      prometheus.Counter
	Bytes     prometheus.Counter
	Segments  prometheus.Counter
	Skipped   *prometheus.CounterVec // reason
	Duration  prometheus.Histogram
	Readers   prometheus.Gauge
	Retained  prometheus.Gauge
	RetainedB prometheus.Gauge
	// The listener's: refusals without credentials, the tokens accepted.
	*listen.Metrics
}

// NewMetrics registers the buffer's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_buffer_requests_total", Help: "WAL buffer reads by HTTP status code; aborted: an answer cut off after its status was sent."}, []string{"code"}),
		Refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_buffer_refusals_total", Help: "WAL buffer reads refused with 409 because committed segments above the reader's marks are gone (drained) or being retained (draining)."}, []string{"reason"}),
		Rows: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_buffer_rows_total", Help: "Rows served by the WAL buffer."}),
		Bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_buffer_bytes_total", Help: "Arrow IPC bytes served by the WAL buffer."}),
		Segments: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_buffer_segments_total", Help: "Segments whose rows the WAL buffer served."}),
		Skipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_buffer_segments_skipped_total", Help: "Segments the WAL buffer left out because the drain will quarantine them, by reason."}, []string{"reason"}),
		Duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "siglake_buffer_request_duration_seconds", Help: "Time to answer a WAL buffer read, to the last byte.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16)}),
		Readers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_buffer_readers", Help: "WAL buffer reads in flight (at most SIGLAKE_BUFFER_MAX_READERS; more get 429)."}),
		Retained: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_buffer_retained_segments", Help: "Committed segments kept for SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN."}),
		RetainedB: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_buffer_retained_bytes", Help: "Bytes of the committed segments kept for SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN."}),
		Metrics: listen.NewMetrics(reg),
	}
	reg.MustRegister(m.Requests, m.Refusals, m.Rows, m.Bytes, m.Segments, m.Skipped, m.Duration, m.Readers, m.Retained, m.RetainedB)
	// Exported at 0 for their known values, so the first refusal or skip shows in increase().
	for _, c := range []string{"200", "400", "404", "409", "413", "429", "500", "503", "aborted"} {
		m.Requests.WithLabelValues(c)
	}
	for _, r := range []string{"drained", "draining"} {
		m.Refusals.WithLabelValues(r)
	}
	for _, r := range []string{localwal.ReasonTruncated, localwal.ReasonCorrupt, localwal.ReasonEmpty, localwal.ReasonBadHeader,
		localwal.ReasonBadSchema, localwal.ReasonBadTableName, "incompatible_schema"} {
		m.Skipped.WithLabelValues(r)
	}
	return m
}

// outcome is what one read did; observe turns it into metrics and a log line.
type outcome struct {
	Table    string
	Code     string // HTTP status, or "aborted"
	Error    string
	Refusal  *segments.Refusal
	Segments int
	Rows     int64
	Bytes    int64
	Skipped  map[string]int // reason → segments
	Took     time.Duration
}

func (s *Server) observe(o outcome) {
	m := s.Metrics
	if m != nil {
		m.Requests.WithLabelValues(o.Code).Inc()
		if o.Refusal != nil {
			m.Refusals.WithLabelValues(o.Refusal.Reason).Inc()
		}
		m.Rows.Add(float64(o.Rows))
		m.Bytes.Add(float64(o.Bytes))
		m.Segments.Add(float64(o.Segments))
		for r, n := range o.Skipped {
			m.Skipped.WithLabelValues(r).Add(float64(n))
		}
		m.Duration.Observe(o.Took.Seconds())
	}
	if s.Log == nil {
		return
	}
	fields := []zap.Field{zap.String("table", o.Table), zap.String("code", o.Code), zap.Int("segments", o.Segments),
		zap.Int64("rows", o.Rows), zap.Int64("bytes", o.Bytes), zap.Duration("took", o.Took)}
	switch {
	case o.Code == "aborted" || o.Code == "500":
		s.Log.Error("WAL buffer read failed", append(fields, zap.String("error", o.Error))...)
	case o.Refusal != nil:
		s.Log.Info("WAL buffer read refused: the reader's snapshot is older than the segments kept", append(fields,
			zap.String("stream", o.Refusal.Stream), zap.Stringer("after", o.Refusal.After), zap.Stringer("mark", o.Refusal.Current),
			zap.String("reason", o.Refusal.Reason))...)
	case len(o.Skipped) > 0:
		s.Log.Warn("WAL buffer left out segments the drain will quarantine", append(fields, zap.Any("skipped", o.Skipped))...)
	default:
		s.Log.Debug("WAL buffer read", fields...)
	}
}
