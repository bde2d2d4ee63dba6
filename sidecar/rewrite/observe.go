package rewrite

import (
	"context"
	"path"
	"sort"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/instrument"
)

// Outcomes are the outcome label values of siglake_compactor_rewrites_total.
var Outcomes = []string{string(Committed), string(Conflict), string(Failed)}

// KindLabel is a rewrite kind as a metric label value: snake_case like every label value
// (delete_task beside backpressure_l0). Logs, /debug/status and the snapshot properties keep
// the kind's own name.
func KindLabel(kind string) string { return strings.ReplaceAll(kind, "-", "_") }

// Init exports the rewrite counters at 0 for kinds (every kind the planner has) and every outcome,
// so the first failure of a kind shows in increase().
func (m *Metrics) Init(kinds []string) {
	for _, k := range kinds {
		k = KindLabel(k)
		for _, o := range Outcomes {
			m.Rewrites.WithLabelValues(k, o)
		}
		m.BytesRead.WithLabelValues(k)
		m.BytesWritten.WithLabelValues(k)
		for _, c := range Classes {
			m.Failures.WithLabelValues(k, string(c))
		}
	}
}

// Metrics count rewrites by kind and outcome (docs/metrics.md "Maintenance").
type Metrics struct {
	Rewrites     *prometheus.CounterVec // kind, outcome
	Failures     *prometheus.CounterVec // kind, class
	BytesRead    *prometheus.CounterVec // kind
	BytesWritten *prometheus.CounterVec // kind
}

// NewMetrics registers the rewrite metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Rewrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_compactor_rewrites_total", Help: "Rewrite bins by kind and outcome (committed, conflict, failed)."}, []string{"kind", "outcome"}),
		BytesRead: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_compactor_rewrite_read_bytes_total", Help: "Bytes read by committed rewrites, by kind."}, []string{"kind"}),
		BytesWritten: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_compactor_rewrite_written_bytes_total", Help: "Bytes written by committed rewrites, by kind (write amplification = this over siglake_drain_bytes_total)."}, []string{"kind"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_compactor_rewrite_failures_total", Help: "Failed rewrites by kind and cause class: transient (store, network; retried with back-off), corrupt, missing, schema, permission (permanent for the input they blame, which is set aside after SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES)."}, []string{"kind", "class"}),
	}
	reg.MustRegister(m.Rewrites, m.BytesRead, m.BytesWritten, m.Failures)
	return m
}

// Observer turns outcomes into metrics and log lines, the same for every kind of rewrite.
type Observer struct {
	Metrics *Metrics
	Log     *zap.Logger
}

// Observe records one outcome of job on table. fields are the caller's own (request ids, ...).
func (o Observer) Observe(table string, job Job, out Outcome, fields ...zap.Field) {
	if out.Status == Cancelled {
		o.Log.Info("rewrite not started: shutting down", zap.String("table", table),
			zap.String("partition", job.Partition), zap.String("kind", job.Kind), zap.Int("inputs", len(job.Inputs)))
		return
	}
	outcome := string(out.Status)
	if out.Status == MaybeCommitted {
		outcome = string(Failed) // the metric's outcomes: committed, conflict, failed
	}
	kind := KindLabel(job.Kind)
	o.Metrics.Rewrites.WithLabelValues(kind, outcome).Inc()
	log := o.Log.With(append([]zap.Field{zap.String("table", table), zap.String("partition", job.Partition),
		zap.String("kind", job.Kind), zap.Int("inputs", len(job.Inputs))}, fields...)...)
	if len(out.Orphans) > 0 {
		log.Warn("could not remove uncommitted outputs; gc will", zap.Strings("paths", out.Orphans), zap.Error(out.OrphanErr))
	}
	switch out.Status {
	case Committed:
		o.Metrics.BytesRead.WithLabelValues(kind).Add(float64(out.Merge.BytesRead))
		o.Metrics.BytesWritten.WithLabelValues(kind).Add(float64(out.Merge.BytesWritten))
		names := make([]string, len(out.Merge.Outputs))
		for i, f := range out.Merge.Outputs {
			names[i] = path.Base(f.Path)
		}
		sort.Strings(names)
		log.Info("rewrote files", zap.Int64("snapshot_id", out.SnapshotID), zap.String("merge_path", string(out.Merge.Path)),
			zap.Int("outputs", len(out.Merge.Outputs)), zap.Strings("output_files", names),
			zap.Int64("bytes_read", out.Merge.BytesRead), zap.Int64("bytes_written", out.Merge.BytesWritten),
			zap.Int("generation", job.Generation), zap.String("reason", job.Reason), zap.Duration("took", out.Took),
			instrument.CostField(out.Cost), decoderField(out.Merge))
	case Conflict:
		log.Info("rewrite lost to a concurrent change; outputs removed", zap.Error(out.Err))
	case Failed:
		o.Metrics.Failures.WithLabelValues(kind, string(out.Class)).Inc()
		paths := make([]string, len(job.Inputs))
		for i, f := range job.Inputs {
			paths[i] = f.Path
		}
		log.Error("rewrite failed; nothing committed, outputs removed", zap.String("cause_class", string(out.Class)),
			zap.String("blamed_input", out.Input), zap.Strings("input_paths", paths), decoderField(out.Merge), zap.Error(out.Err))
	case MaybeCommitted:
		log.Warn("rewrite commit failed with an unknown outcome; outputs kept for gc", zap.Error(out.Err))
	}
}

// ReadFailed is a failure to read job's inputs before any rewrite ran (a delete task or retention
// counting the rows it would drop): classified, logged and counted like a failed rewrite, and
// returned as its outcome, so the caller's failure accounting treats both alike.
func (o Observer) ReadFailed(table string, job Job, err error) Outcome {
	out := Outcome{Status: Failed, Err: err}
	out.Class, out.Input = Classify(err)
	o.Observe(table, job, out)
	return out
}

// FailureFunc receives every failed outcome of a rewrite or of reading its inputs, for the
// maintainer's back-off and set-aside accounting.
type FailureFunc func(ctx context.Context, table string, job Job, out Outcome)

// decoderField names the library that decoded a k-way merge's inputs (arrow, or parquet-go when
// asked for and the bin allowed it); no field on other paths, which have no choice.
func decoderField(r merge.RewriteResult) zap.Field {
	if r.Decoder == "" {
		return zap.Skip()
	}
	return zap.String("decoder", string(r.Decoder))
}
