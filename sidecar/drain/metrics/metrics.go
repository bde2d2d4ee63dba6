// Package metrics defines the drain's metrics (docs/metrics.md "Drain") and their label values;
// the drain's observer sets them.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
)

// ReasonIncompatibleSchema quarantines a segment whose schema the table cannot take (the
// localwal reasons cover the segment's own bytes).
const ReasonIncompatibleSchema = "incompatible_schema"

// ReasonMarkPruned quarantines a segment of a stream whose mark was pruned and that was sealed
// before the pruned stream's last commit: the table may hold it already.
const ReasonMarkPruned = "mark_pruned"

// QuarantineReasons are the reason label values of siglake_wal_quarantined_segments_total:
// localwal's reject reasons except io (an unreadable file is retried, never quarantined),
// ReasonIncompatibleSchema and ReasonMarkPruned.
var QuarantineReasons = []string{localwal.ReasonTruncated, localwal.ReasonCorrupt, localwal.ReasonEmpty,
	localwal.ReasonBadHeader, localwal.ReasonBadSchema, localwal.ReasonBadTableName, localwal.ReasonChecksum,
	localwal.ReasonOversize, ReasonIncompatibleSchema, ReasonMarkPruned}

// ErrorStages are the stage label values of siglake_drain_errors_total.
var ErrorStages = []string{"scan", "read", "table", "write", "commit", "remove"}

// CommitOutcomes are the outcome label values of siglake_drain_commits_total.
var CommitOutcomes = []string{string(lake.Committed), string(lake.AlreadyCommitted), "failed"}

// Metrics are the drain's metrics (docs/metrics.md "Drain"). Labelled counters are exported at 0
// for every known label value (for the table label once the drain has seen the table), so the
// first error or quarantine shows in increase() and rate().
type Metrics struct {
	SealedSegments  prometheus.Gauge
	SealedBytes     prometheus.Gauge
	OldestSealedAge prometheus.Gauge
	// InQuarantine counts the segments sitting in quarantine/ now (rescanned, so it survives a
	// restart and falls when an operator clears them), unlike Quarantined, which counts moves.
	InQuarantine prometheus.Gauge
	// IgnoredFiles counts, by reason, the entries of the last scan that look like segments but
	// are never drained (localwal.Ignored).
	IgnoredFiles *prometheus.GaugeVec

	SegmentsDrained   *prometheus.CounterVec // table
	RowsCommitted     *prometheus.CounterVec // table
	BytesCommitted    *prometheus.CounterVec // table
	Commits           *prometheus.CounterVec // table, outcome
	CommitDuration    *prometheus.HistogramVec
	Quarantined       *prometheus.CounterVec // reason
	DrainErrors       *prometheus.CounterVec // stage
	LastCommitSeconds *prometheus.GaugeVec   // table
	RowsPastRetention *prometheus.CounterVec // table
	// InterruptedFiles counts the data files the batches the previous run left in flight wrote
	// and did not commit (CheckUncleanStop at start): orphans for gc.
	InterruptedFiles prometheus.Gauge
	// MarkerErrors counts in-flight markers that could not be written (a full WAL disk): the
	// batches went on, but a kill during them would not be reported.
	MarkerErrors prometheus.Counter
	// Merge counts the files the drain writes (skipped footer indexes); shared with the rewrites.
	Merge *instrument.MergeMetrics
}

// New registers the drain's metrics on reg. catalogUp and mergeMetrics belong to the
// process and are shared.
func New(reg prometheus.Registerer, mergeMetrics *instrument.MergeMetrics) *Metrics {
	m := &Metrics{
		SealedSegments: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_wal_sealed_segments", Help: "Sealed WAL segments waiting to be drained."}),
		SealedBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_wal_sealed_bytes", Help: "Bytes of sealed WAL segments waiting to be drained."}),
		OldestSealedAge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_wal_oldest_sealed_age_seconds", Help: "Age of the oldest sealed WAL segment waiting to be drained; 0 when none wait."}),
		InQuarantine: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_wal_segments_in_quarantine", Help: "Segments in the quarantine/ directories of the WAL dirs this process drains, as last listed (at start, after each quarantine, and every 30 s)."}),
		IgnoredFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_wal_ignored_files", Help: "Entries of the WAL dirs that look like segments but are never drained, at the last scan, by reason: not_regular (a symlink, directory or device named like a segment), misnamed (ends in .wal or .open without the 20-digit incarnation and seq)."}, []string{"reason"}),
		SegmentsDrained: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_drain_segments_total", Help: "WAL segments whose rows were committed and that were removed."}, []string{"table"}),
		RowsCommitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_drain_rows_total", Help: "Rows committed by the drain."}, []string{"table"}),
		BytesCommitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_drain_bytes_total", Help: "Parquet bytes committed by the drain."}, []string{"table"}),
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_drain_commits_total", Help: "Drain commits by outcome: committed, already_committed (a lost commit response was detected by the stream mark), failed."}, []string{"table", "outcome"}),
		// Classic buckets for every Prometheus, plus a native histogram where the scrape
		// negotiates one (one series per table instead of one per bucket).
		CommitDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "siglake_drain_commit_duration_seconds", Help: "Time from reading a batch's segments to its catalog commit.",
			Buckets:                     prometheus.ExponentialBuckets(0.01, 2, 14),
			NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour}, []string{"table"}),
		Quarantined: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_wal_quarantined_segments_total", Help: "Segments moved to quarantine, by reason."}, []string{"reason"}),
		DrainErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_drain_errors_total", Help: "Drain errors by stage (scan, read, table, write, commit, remove); the batch is kept and retried."}, []string{"stage"}),
		LastCommitSeconds: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_drain_last_commit_timestamp_seconds", Help: "Unix time of the table's last successful drain commit."}, []string{"table"}),
		RowsPastRetention: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_drain_rows_past_retention_total", Help: "Rows the drain dropped instead of committing because they were already past their table's retention (like Loki's reject_old_samples)."}, []string{"table"}),
		InterruptedFiles: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_drain_interrupted_batch_files", Help: "Data files that batches left in flight by the previous run (killed mid-batch) wrote and did not commit, found at start: orphans for siglake gc. 0 after a clean stop."}),
		MarkerErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_drain_inflight_marker_errors_total", Help: "In-flight batch markers the drain could not write in the WAL dir (a full or read-only WAL disk); the batch commits anyway, but a kill during it is not reported at the next start."}),
		Merge: mergeMetrics,
	}
	reg.MustRegister(m.SealedSegments, m.SealedBytes, m.OldestSealedAge, m.InQuarantine, m.IgnoredFiles, m.SegmentsDrained, m.RowsCommitted,
		m.BytesCommitted, m.Commits, m.CommitDuration, m.Quarantined, m.DrainErrors, m.LastCommitSeconds, m.RowsPastRetention, m.InterruptedFiles, m.MarkerErrors)
	for _, r := range QuarantineReasons {
		m.Quarantined.WithLabelValues(r)
	}
	for _, r := range localwal.IgnoredReasons {
		m.IgnoredFiles.WithLabelValues(r)
	}
	for _, s := range ErrorStages {
		m.DrainErrors.WithLabelValues(s)
	}
	return m
}

// SeeTable exports the table's commit counters at 0 for every outcome, so its first failed
// commit shows in increase() (idempotent: a lookup once the series exist).
func (m *Metrics) SeeTable(table string) {
	for _, o := range CommitOutcomes {
		m.Commits.WithLabelValues(table, o)
	}
}
