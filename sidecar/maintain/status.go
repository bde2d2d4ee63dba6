package maintain

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Publisher receives the loop's status as values it never writes again.
type Publisher interface {
	Maintenance(table string, st *State)
	Owned(tables []string)
	Error(at time.Time, stage, table string, err error)
}

// State is one table's maintenance state in /debug/status.
type State struct {
	SampledAt time.Time `json:"sampled_at"`
	// Skipped are the files set aside after failed rewrites (siglake skipped list).
	Skipped       []lake.Skipped `json:"skipped_files,omitempty"`
	FilesPerLevel map[string]int `json:"files_per_level"`
	BytesPerLevel map[string]int `json:"bytes_per_level"`
	OverlapDepth  int            `json:"overlap_depth"`
	LastPass      *PassReport    `json:"last_pass,omitempty"`
	// IndexRebuild is the post-rewrite Puffin index rebuild of this table (SIGLAKE_INDEX_REBUILD).
	IndexRebuild *RebuildState `json:"index_rebuild,omitempty"`
	// Fold is the table's fold specification, or why it is not folded (a bad one).
	Fold *fold.Table `json:"fold,omitempty"`
	// RecentRewrites are the last committed rewrites of the table, newest first (at most
	// maxRecentRewrites): a pass with nothing due would otherwise hide what ran a minute ago.
	RecentRewrites []RecentRewrite `json:"recent_rewrites,omitempty"`
	// Partitions are the live files per partition at SampledAt, for the status pages' timelines
	// (at most maxPageFiles files each, maxPageTableFiles in all). Left out of the JSON: every
	// scrape of /debug/status would carry every file.
	Partitions []Partition `json:"-"`
}

// RebuildState is the index rebuild's state for one table: its switch, what the table's
// registry holds, and the last run.
type RebuildState struct {
	Enabled    bool       `json:"enabled"`
	Columns    []string   `json:"columns"`    // the table's index specification
	Registered int        `json:"registered"` // data files with a registered sidecar
	LastRun    *time.Time `json:"last_run,omitempty"`
	LastFiles  int        `json:"last_files"`
	LastBytes  int64      `json:"last_bytes"`
	LastError  string     `json:"last_error,omitempty"`
}

// PassReport is the last maintenance pass of a table.
type PassReport struct {
	Time     time.Time   `json:"time"`
	Decision string      `json:"decision"`
	Bins     []BinReport `json:"bins"`
	Skipped  []string    `json:"skipped,omitempty"`
	// OutstandingBins and OutstandingBytes are the rewrites the planner found due that this pass
	// did not commit (siglake_compactor_outstanding_bins and _bytes; see outstanding).
	OutstandingBins  int   `json:"outstanding_bins"`
	OutstandingBytes int64 `json:"outstanding_bytes"`
	// TimeLimitSeconds is the pass's time limit (plan.Pass.TimeLimit): the L0 check interval once
	// the process has measured its rewrite speed, 0 before.
	TimeLimitSeconds float64 `json:"time_limit_seconds,omitempty"`
}

// RecentRewrite is a committed rewrite and the pass it ran in.
type RecentRewrite struct {
	Time time.Time `json:"time"`
	BinReport
}

// maxRecentRewrites bounds State.RecentRewrites.
const maxRecentRewrites = 10

// BinReport is one rewrite of a pass.
type BinReport struct {
	Kind      string `json:"kind"`
	Partition string `json:"partition"`
	Files     int    `json:"files"`
	Bytes     int64  `json:"bytes"`
	Path      string `json:"merge_path,omitempty"`
	Reason    string `json:"reason"`
	Result    string `json:"result"`
}

// Metrics are the maintenance loop's metrics (docs/metrics.md "Maintenance"), and the shared
// ones its parts count into.
type Metrics struct {
	OverlapDepth          *prometheus.GaugeVec   // table
	LiveFiles             *prometheus.GaugeVec   // table, level
	LiveBytes             *prometheus.GaugeVec   // table, level
	GaugesSampledAt       *prometheus.GaugeVec   // table
	SkippedFiles          *prometheus.GaugeVec   // table
	SkippedBackpressure   prometheus.Counter     //
	ThrottledBackpressure prometheus.Counter     //
	Expirations           *prometheus.CounterVec // outcome
	OutstandingBins       *prometheus.GaugeVec   // table
	OutstandingBytes      *prometheus.GaugeVec   // table
	// LastSuccess has no labels; it is a vector so that its one series appears only once a
	// maintenance loop runs (Run creates it at 0): a drain-only process exports none, and the
	// alert on it does not fire there.
	LastSuccess *prometheus.GaugeVec

	Rewrite   *rewrite.Metrics
	Merge     *instrument.MergeMetrics
	Rebuild   *puffinidx.Metrics
	Deletes   *sweep.Metrics
	Retention *retention.Metrics
	// Fold counts folding (nil: not counted); the process sets it beside NewMetrics.
	Fold *fold.Metrics
}

// NewMetrics registers the maintenance loop's own metrics on reg and takes the shared ones.
func NewMetrics(reg prometheus.Registerer, rw *rewrite.Metrics, mm *instrument.MergeMetrics, rb *puffinidx.Metrics, dm *sweep.Metrics, rm *retention.Metrics) *Metrics {
	m := &Metrics{Rewrite: rw, Merge: mm, Rebuild: rb, Deletes: dm, Retention: rm,
		OverlapDepth: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_table_overlap_depth", Help: "Largest number of live file time ranges of one partition that contain the same instant (from the last metadata walk)."}, []string{"table"}),
		LiveFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_table_live_files", Help: "Live data files by level (from the last metadata walk)."}, []string{"table", "level"}),
		LiveBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_table_live_bytes", Help: "Bytes of live data files by level (from the last metadata walk)."}, []string{"table", "level"}),
		SkippedFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_compactor_skipped_files", Help: "Live data files set aside after failed rewrites (docs/operations.md \"Skipped files\"): maintenance plans without them until siglake skipped clear."}, []string{"table"}),
		GaugesSampledAt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_table_gauges_sampled_at_seconds", Help: "Unix time of the metadata walk the table gauges come from."}, []string{"table"}),
		SkippedBackpressure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_compactor_maintenance_skipped_backpressure_total", Help: "Maintenance cycles skipped because the sealed WAL backlog exceeded SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER."}),
		ThrottledBackpressure: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_compactor_maintenance_throttled_backpressure_total", Help: "Backlogged maintenance cycles that ran the restricted L0 pass."}),
		Expirations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_snapshot_expirations_total", Help: "Snapshot expiry runs by outcome (ok, failed)."}, []string{"outcome"}),
		OutstandingBins: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_compactor_outstanding_bins", Help: "Rewrite bins the planner found due in the table's last pass that were not committed (deferred for budget, not started, failed, or skipped for backpressure)."}, []string{"table"}),
		OutstandingBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_compactor_outstanding_bytes", Help: "Input bytes of the outstanding rewrite bins."}, []string{"table"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_maintenance_last_success_timestamp_seconds", Help: "Unix time of this process's last maintenance cycle that completed without an error (also when it owns no table); 0 until the first."}, nil),
	}
	reg.MustRegister(m.OverlapDepth, m.LiveFiles, m.LiveBytes, m.GaugesSampledAt, m.SkippedFiles, m.SkippedBackpressure,
		m.ThrottledBackpressure, m.Expirations, m.OutstandingBins, m.OutstandingBytes, m.LastSuccess)
	for _, o := range []string{"ok", "failed"} {
		m.Expirations.WithLabelValues(o) // exported at 0, so the first failure shows in increase()
	}
	return m
}
