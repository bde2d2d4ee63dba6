package fold

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/merge"
)

// Metrics are folding's metrics (docs/metrics.md "Folding").
type Metrics struct {
	RowsIn         prometheus.Counter
	RowsOut        prometheus.Counter
	PartialFlushes prometheus.Counter
	SpecInvalid    *prometheus.GaugeVec // table
}

// NewMetrics registers folding's metrics on reg, the counters at 0.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RowsIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_fold_rows_in_total", Help: "Rows that committed folding rewrites of rollup tables read."}),
		RowsOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_fold_rows_out_total", Help: "Rows that committed folding rewrites of rollup tables wrote (one per bucket and keys, more after partial flushes)."}),
		PartialFlushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_fold_partial_flushes_total", Help: "Times a fold held SIGLAKE_FOLD_MAX_GROUPS groups of one bucket and wrote them out early as partial rows (correct, but a later fold has them to fold again)."}),
		SpecInvalid: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_fold_spec_invalid", Help: "1 when the table's fold specification (siglake.fold) does not validate against its schema: the table is not folded (/debug/status says why)."}, []string{"table"}),
	}
	reg.MustRegister(m.RowsIn, m.RowsOut, m.PartialFlushes, m.SpecInvalid)
	return m
}

// Observe counts what a committed rewrite's fold did; nil metrics or no fold count nothing.
func (m *Metrics) Observe(res merge.RewriteResult) {
	if m == nil || res.Fold == nil {
		return
	}
	m.RowsIn.Add(float64(res.Fold.RowsIn))
	m.RowsOut.Add(float64(res.Fold.RowsOut))
	m.PartialFlushes.Add(float64(res.Fold.PartialFlushes))
}

// Spec records whether table's specification is bad (err != nil) or fine.
func (m *Metrics) Spec(table string, err error) {
	if m == nil {
		return
	}
	v := 0.0
	if err != nil {
		v = 1
	}
	m.SpecInvalid.WithLabelValues(table).Set(v)
}

// Forget drops the gauge of a table this process no longer maintains (or that has no spec).
func (m *Metrics) Forget(table string) {
	if m != nil {
		m.SpecInvalid.DeleteLabelValues(table)
	}
}
