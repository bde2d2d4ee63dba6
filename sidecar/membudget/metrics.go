package membudget

import "github.com/prometheus/client_golang/prometheus"

// The loops that take shares, by the name they take them under. Metrics export each from the
// start; a loop added later adds its name here.
const (
	LoopDrain = "drain"
	LoopMerge = "merge" // rewrites, delete tasks and retention: every merge of the executor
	// LoopLeasedMerge is the merges of bins leased from another owner (or this process's own
	// owner) through bin leases: a worker's asks count these itself.
	LoopLeasedMerge  = "leased_merge"
	LoopIndexRebuild = "index_rebuild"
	LoopWALBuffer    = "wal_buffer"
	LoopSearch       = "search"
	LoopGroupCommit  = "group_commit" // a committer's queue of other pods' requests
)

// Loops lists the loop names above.
var Loops = []string{LoopDrain, LoopMerge, LoopLeasedMerge, LoopIndexRebuild, LoopWALBuffer, LoopSearch, LoopGroupCommit}

// Metrics export the budget (docs/metrics.md).
type Metrics struct {
	Limit       prometheus.Gauge
	Held        *prometheus.GaugeVec
	Waits       *prometheus.CounterVec
	WaitSeconds *prometheus.CounterVec
}

// NewMetrics registers the budget's metrics on reg, every loop at 0.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Limit: prometheus.NewGauge(prometheus.GaugeOpts{Name: "siglake_memory_budget_limit_bytes",
			Help: "Size of the process memory budget the loops take their shares of (SIGLAKE_MEMORY_BUDGET_BYTES, or derived from the memory limit)."}),
		Held: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "siglake_memory_budget_held_bytes",
			Help: "Bytes of the process memory budget each loop holds now."}, []string{"loop"}),
		Waits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "siglake_memory_budget_waits_total",
			Help: "Shares of the process memory budget a loop had to wait for (the budget was spent)."}, []string{"loop"}),
		WaitSeconds: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "siglake_memory_budget_wait_seconds_total",
			Help: "Time loops spent waiting for their share of the process memory budget."}, []string{"loop"}),
	}
	for _, l := range Loops {
		m.Held.WithLabelValues(l)
		m.Waits.WithLabelValues(l)
		m.WaitSeconds.WithLabelValues(l)
	}
	reg.MustRegister(m.Limit, m.Held, m.Waits, m.WaitSeconds)
	return m
}
