// Package binleases is the process side of bin leases (sidecar/work): the observer that turns
// what the lease owner, its book and the worker report into the metrics of docs/metrics.md
// ("Bin leases"), rate-limited log lines and the status snapshot /debug/status and
// `siglake status` show (docs/design/bin-leases.md section 5). It lives apart from sidecar/work,
// a protocol package that imports neither prometheus nor zap, and does no I/O of its own.
package binleases

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/work"
)

// Label values of the bin lease counters. Those without a table label are exported at 0 from the
// start; a table's lease ends at 0 once the table is seen, so the first lapse shows in increase().
var (
	// EndOutcomes: how the owner's leases end (work.OwnerConfig.Ended). A result refused as
	// expired ends no lease (its lease ended lapsed or dropped before): it is counted in
	// RefusedReasons instead.
	EndOutcomes = []string{work.OutcomeCommitted, work.OutcomeConflict, work.OutcomeFailed, work.OutcomeMaybeCommitted,
		work.EndLapsed, work.EndDropped}
	// RefusedMessages and RefusedReasons: renewals and results the owner refused (answered expired).
	RefusedMessages = []string{work.TypeRenew, work.TypeResult}
	RefusedReasons  = []string{work.RefusedNotLive, work.RefusedNotHolder, work.RefusedCatalog}
	// WorkerOutcomes: how this process's worker saw its leases end (work.WorkerConfig.Done).
	WorkerOutcomes = []string{work.OutcomeCommitted, work.OutcomeConflict, work.OutcomeExpired, work.OutcomeFailed,
		work.OutcomeMaybeCommitted, work.WorkerLapsed, work.WorkerLost, work.WorkerRefused}
	// Sides of siglake_bin_lease_messages_dropped_total.
	Sides = []string{SideOwner, SideWorker}
)

// The sides of the protocol, as the dropped messages counter labels them.
const (
	SideOwner  = "owner"
	SideWorker = "worker"
)

// Metrics are bin leases' metrics, owner side and worker side (docs/metrics.md "Bin leases").
type Metrics struct {
	// Owner side. The per-table gauges exist while this process owns the table (Observer.Forget).
	OfferedBins  *prometheus.GaugeVec   // table
	OfferedBytes *prometheus.GaugeVec   // table
	LeasedBins   *prometheus.GaugeVec   // table
	LeasedBytes  *prometheus.GaugeVec   // table
	Committing   *prometheus.GaugeVec   // table
	Ends         *prometheus.CounterVec // table, outcome
	Refused      *prometheus.CounterVec // message, reason
	Dropped      *prometheus.CounterVec // side

	// Worker side: this process merging bins other members (or itself) own.
	WorkerBins        *prometheus.CounterVec // outcome
	WorkerRunning     prometheus.Gauge       // merging, or its result waiting on the owner's answer
	WorkerWaiting     prometheus.Gauge       // granted, waiting for merge memory
	WorkerInputBytes  prometheus.Counter
	WorkerOutputBytes prometheus.Counter
	WorkerMerge       prometheus.Histogram
}

// NewMetrics registers bin leases' metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	table := []string{"table"}
	m := &Metrics{
		OfferedBins: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_offered_bins", Help: "Owner: the table's bins on offer to workers, not yet leased."}, table),
		OfferedBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_offered_bytes", Help: "Owner: input bytes of the table's bins on offer."}, table),
		LeasedBins: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_leased_bins", Help: "Owner: the table's bins leased to workers and not ended."}, table),
		LeasedBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_leased_bytes", Help: "Owner: input bytes of the table's leased bins."}, table),
		Committing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_committing_bins", Help: "Owner: the table's bins whose result arrived and is being committed (its inputs still in flight)."}, table),
		Ends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_bin_lease_ends_total", Help: "Owner: leases ended, by outcome: committed, conflict, failed, maybe_committed (the answer to their result), lapsed (past the deadline without a result), dropped (the owner lost the table)."},
			[]string{"table", "outcome"}),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_bin_lease_refused_total", Help: "Owner: renewals and results refused (answered expired), by message (renew, result) and reason: not_live, not_holder, catalog."},
			[]string{"message", "reason"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_bin_lease_messages_dropped_total", Help: "Bin lease messages dropped by a full queue or a failed send, by side: owner, worker."}, []string{"side"}),
		WorkerBins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_bin_lease_worker_bins_total", Help: "Worker: leased bins this process ran, by how they ended: committed, conflict, expired, failed, maybe_committed (the owner's answer), lapsed, lost, refused."},
			[]string{"outcome"}),
		WorkerRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_worker_running_bins", Help: "Worker: leased bins this process is merging or waiting on the owner's answer for."}),
		WorkerWaiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_bin_lease_worker_waiting_bins", Help: "Worker: leased bins granted to this process and waiting for merge memory (the process memory budget), not merging yet."}),
		WorkerInputBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_bin_lease_worker_input_bytes_total", Help: "Worker: bytes read by this process's completed merges of leased bins."}),
		WorkerOutputBytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_bin_lease_worker_output_bytes_total", Help: "Worker: bytes written by this process's completed merges of leased bins."}),
		WorkerMerge: prometheus.NewHistogram(instrument.NativeHistogram(prometheus.HistogramOpts{
			Name: "siglake_bin_lease_worker_merge_seconds", Help: "Worker: wall time of this process's completed merges of leased bins.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)})),
	}
	reg.MustRegister(m.OfferedBins, m.OfferedBytes, m.LeasedBins, m.LeasedBytes, m.Committing, m.Ends, m.Refused, m.Dropped,
		m.WorkerBins, m.WorkerRunning, m.WorkerWaiting, m.WorkerInputBytes, m.WorkerOutputBytes, m.WorkerMerge)
	for _, msg := range RefusedMessages {
		for _, r := range RefusedReasons {
			m.Refused.WithLabelValues(msg, r)
		}
	}
	for _, s := range Sides {
		m.Dropped.WithLabelValues(s)
	}
	for _, oc := range WorkerOutcomes {
		m.WorkerBins.WithLabelValues(oc)
	}
	return m
}
