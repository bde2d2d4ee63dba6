package retention

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/plan"
)

// Metrics are retention's metrics (docs/metrics.md "Retention").
type Metrics struct {
	RowsDropped  *prometheus.CounterVec // table, path
	FilesDropped *prometheus.CounterVec // table, path
	BytesDropped *prometheus.CounterVec // table, path
	PendingBytes *prometheus.GaugeVec   // table
	PendingFiles *prometheus.GaugeVec   // table
	FreedBytes   *prometheus.CounterVec // table
	FreedFiles   *prometheus.CounterVec // table
	OldestAge    *prometheus.GaugeVec   // table
	Period       *prometheus.GaugeVec   // table
	LastSuccess  *prometheus.GaugeVec   // table
	Runs         *prometheus.CounterVec // outcome
}

// Outcomes of a run, for siglake_retention_runs_total.
var outcomes = []string{"dropped", "clean", "capped", "conflict", "keep", "failed"}

// NewMetrics registers retention's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		RowsDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_retention_rows_dropped_total", Help: "Rows removed from tables by retention, by path: partition and file (dropped whole, metadata only), rewrite (a file rewritten without them)."}, []string{"table", "path"}),
		FilesDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_retention_files_dropped_total", Help: "Data files removed from tables by retention, by path (a rewritten file counts once; its output is not counted)."}, []string{"table", "path"}),
		BytesDropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_retention_bytes_dropped_total", Help: "Bytes of the data files retention removed from tables, by path (a rewrite counts its input)."}, []string{"table", "path"}),
		PendingBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_retention_pending_delete_bytes", Help: "Bytes of objects retention removed from the table and has not deleted from storage yet (waiting for SIGLAKE_RETENTION_DELETE_DELAY and snapshot expiry)."}, []string{"table"}),
		PendingFiles: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_retention_pending_delete_files", Help: "Objects retention removed from the table and has not deleted from storage yet."}, []string{"table"}),
		FreedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_retention_freed_bytes_total", Help: "Bytes of objects retention deleted from storage."}, []string{"table"}),
		FreedFiles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_retention_freed_files_total", Help: "Objects retention deleted from storage."}, []string{"table"}),
		OldestAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_retention_oldest_data_age_seconds", Help: "Age of the oldest row in the table's live files (their lower time bound), at the last retention run."}, []string{"table"}),
		Period: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_retention_period_seconds", Help: "The longest period of the table's retention policy: no row older than this should stay (0: some rows are kept for ever)."}, []string{"table"}),
		LastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_retention_last_success_timestamp_seconds", Help: "Unix time of the table's last retention run that did not fail."}, []string{"table"}),
		Runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_retention_runs_total", Help: "Retention runs of a table by outcome: dropped (committed a removal), clean (nothing past retention), capped (rewrites left for a later run by the caps), conflict (lost to a concurrent change; the next run replans), keep (the policy keeps every row), failed."}, []string{"outcome"}),
	}
	reg.MustRegister(m.RowsDropped, m.FilesDropped, m.BytesDropped, m.PendingBytes, m.PendingFiles, m.FreedBytes,
		m.FreedFiles, m.OldestAge, m.Period, m.LastSuccess, m.Runs)
	for _, o := range outcomes {
		m.Runs.WithLabelValues(o)
	}
	return m
}

// Forget drops the per-table gauges of a table this process no longer maintains: its new owner
// exports them, and a stale one would alert for ever.
func (m *Metrics) Forget(table string) {
	for _, g := range []*prometheus.GaugeVec{m.PendingBytes, m.PendingFiles, m.OldestAge, m.Period, m.LastSuccess} {
		g.DeleteLabelValues(table)
	}
}

// Publisher receives each table's retention state as a value it never writes again.
type Publisher interface {
	Retention(table string, st *State)
}

// State is a table's retention in /debug/status: its policy, cutoffs, pending deletions and the
// last run. Rules appear by their columns and fingerprint, never their values (Policy.Public).
type State struct {
	Policy    string        `json:"policy"`
	Invalid   string        `json:"invalid,omitempty"`
	Classes   []ClassCutoff `json:"classes,omitempty"`
	OldestRow *time.Time    `json:"oldest_row,omitempty"`
	Pending   []PendingView `json:"pending,omitempty"`
	LastRun   *RunSummary   `json:"last_run,omitempty"`
}

// RunSummary is what the last run of a table did.
type RunSummary struct {
	Time       time.Time             `json:"time"`
	Outcome    string                `json:"outcome"`
	Removed    map[string]*PathCount `json:"removed,omitempty"`
	Capped     int                   `json:"capped,omitempty"`
	Conflicts  int                   `json:"conflicts,omitempty"`
	FreedFiles int                   `json:"freed_files,omitempty"`
	FreedBytes int64                 `json:"freed_bytes,omitempty"`
	Error      string                `json:"error,omitempty"`
}

// observe turns an applied run's report into metrics, status and log lines.
func (r *Runner) observe(rep Report, err error) {
	log := r.Log.With(zap.String("table", rep.Table))
	logHappened(log, rep.happened)
	m := r.Metrics
	if rep.Outcome != "" { // "" with an error: shut down before any outcome
		m.Runs.WithLabelValues(rep.Outcome).Inc()
	}
	for path, c := range rep.Paths {
		m.RowsDropped.WithLabelValues(rep.Table, path).Add(float64(c.Rows))
		m.FilesDropped.WithLabelValues(rep.Table, path).Add(float64(c.Files))
		m.BytesDropped.WithLabelValues(rep.Table, path).Add(float64(c.Bytes))
	}
	if rep.FreedFiles > 0 || rep.FreedBytes > 0 {
		m.FreedFiles.WithLabelValues(rep.Table).Add(float64(rep.FreedFiles))
		m.FreedBytes.WithLabelValues(rep.Table).Add(float64(rep.FreedBytes))
	}
	switch {
	case err != nil && rep.Outcome == "":
		log.Info("retention run stopped by a shutdown; the next run retries", zap.Error(err))
	case err != nil:
		log.Warn("retention run failed; the next run retries", zap.Error(err))
	default:
		m.LastSuccess.WithLabelValues(rep.Table).Set(float64(rep.Time.UnixNano()) / 1e9)
	}
	// The gauges follow what the run could see, failed or not: a failing run must not freeze
	// the age the SiglakeRetentionBehind alert watches.
	if rep.pendingKnown {
		var files int
		var bytes int64
		for _, p := range rep.Pending {
			files += p.Files
			bytes += p.Bytes
		}
		m.PendingFiles.WithLabelValues(rep.Table).Set(float64(files))
		m.PendingBytes.WithLabelValues(rep.Table).Set(float64(bytes))
	}
	if rep.Longest != nil {
		m.Period.WithLabelValues(rep.Table).Set(rep.Longest.Seconds())
	}
	if rep.OldestRow != nil {
		m.OldestAge.WithLabelValues(rep.Table).Set(max(rep.Time.Sub(*rep.OldestRow).Seconds(), 0))
	} else if rep.listed {
		m.OldestAge.WithLabelValues(rep.Table).Set(0) // an empty table
	}
	if r.Publish != nil {
		// The page is served to whoever reaches the metrics port: the public forms only.
		classes := make([]ClassCutoff, len(rep.Classes))
		for i, c := range rep.Classes {
			c.Class = c.public
			classes[i] = c
		}
		r.Publish.Retention(rep.Table, &State{Policy: rep.publicPolicy, Invalid: rep.publicInvalid, Classes: classes, OldestRow: rep.OldestRow,
			Pending: rep.Pending, LastRun: &RunSummary{Time: rep.Time, Outcome: rep.Outcome, Removed: rep.Paths, Capped: rep.Capped,
				Conflicts: rep.Conflicts, FreedFiles: rep.FreedFiles, FreedBytes: rep.FreedBytes, Error: rep.Error}})
	}
}

// Paths a removal takes, as the metrics label them.
var Paths = []string{plan.RetentionPartition.String(), plan.RetentionFile.String(), plan.RetentionRewrite.String()}

// logHappened logs what a run did along the way.
func logHappened(log *zap.Logger, h happened) {
	for _, d := range h.drops {
		log.Info("retention dropped files past the cutoff (metadata only)", zap.Int("files", d.files), zap.Int("partitions", d.partitions),
			zap.Int64("rows", d.rows), zap.Int64("bytes", d.bytes), zap.Int64("snapshot_id", d.snapshotID),
			zap.String("pending_id", d.pendingID), zap.Strings("partitions_dropped", d.partitionsDropped))
	}
	for _, l := range h.listsLeft {
		log.Warn("could not remove the list of an uncommitted retention drop; gc will", zap.String("path", l.path), zap.Error(l.err))
	}
	for _, err := range h.lost {
		log.Info("retention drop lost to a concurrent change; the next run replans", zap.Error(err))
	}
	for _, e := range h.free.Bad {
		log.Warn("ignoring a table property that is not a pending retention deletion; nothing of it is deleted", zap.Error(e))
	}
	for _, u := range h.free.Unfreed {
		log.Warn("retention could not delete every object of a pending deletion; the next run retries", zap.String("pending_id", u.ID), zap.Error(u.Err))
	}
	for _, f := range h.free.Freed {
		log.Info("retention freed storage", zap.String("pending_id", f.Entry.ID), zap.Int("files", f.Entry.Count), zap.Int64("bytes", f.Entry.Bytes),
			zap.Time("removed_at", f.Entry.RemovedAt), zap.Bool("retried", f.Retried))
	}
}
