// Package maintain is the maintenance loop: per owned table it samples the gauges, asks the
// planner for a pass and runs the pass's bins through the rewrite executor, sweeps deletion
// requests in idle cycles and expires snapshots. The planner decides; this loop only does I/O,
// and publishes what it saw as values it never writes again.
package maintain

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Maintainer runs table maintenance on the tables this process owns: planned rewrites (each bin
// committed as its own validated replace), table gauges and snapshot expiry. The planner decides;
// this loop only does I/O.
type Maintainer struct {
	Cfg     Config
	Plan    plan.Config
	Lake    *lake.Lake
	Metrics *Metrics
	// Publish receives the maintenance state of each table and the owned set; nil publishes nothing.
	Publish Publisher
	Log     *zap.Logger
	Now     func() time.Time
	// Owns says whether this process maintains a table now (gossip lease); nil owns every table.
	Owns func(table string) bool
	// Backlog returns the sealed WAL backlog (segments) that grades backpressure.
	Backlog func() int
	// Reserve, when set, takes the memory of each merge (rewrites, delete tasks, retention) and
	// index rebuild from the process budget (sidecar/membudget); nil takes none.
	Reserve func(ctx context.Context, what string, bytes int64) (release func(), err error)
	// Stop, when done (SIGTERM), starts no further merge or index rebuild, and ends their waits
	// for memory (rewrite.Executor.Stop); what is in flight finishes under the cycle's context.
	// The process sets it to the stop it passes Run; nil: never.
	Stop context.Context

	states     map[string]plan.State
	backlogged int // consecutive backlogged cycles, process-wide (the backlog is the process's)
	lastExpire time.Time
	// lastRetention is the process's last retention run (its cadence is the process's, like expiry).
	lastRetention time.Time
	sweeper       *deletes.Sweeper
	retention     *retention.Runner
	// failures counts permanent rewrite failures per table and blamed input (table NUL path);
	// backoff holds bins whose last rewrite failed transiently (binKey).
	failures map[string]int
	failMu   sync.Mutex // failures: delete tasks and retention count into it too
	backoff  map[string]backoff
	reported map[string]bool // owned tables of the last cycle: their per-table gauges are exported
	// lastOutstanding is each owned table's outstanding work as its last pass found it.
	lastOutstanding map[string]work
	published       map[string]*State
	// rate is this process's measured rewrite speed (committed bins, all tables: they share the
	// process's CPU), so a pass holds about one L0 check interval of work (plan.Input.Rewriter).
	rate plan.RewriteRate
	// busy is the share of wall time this process spends in rewrites (plan.Input.RewriterBusy):
	// rewriting is the rewrite time since the cycle that started at lastCycle (real clock).
	busy      plan.BusyShare
	rewriting time.Duration
	lastCycle time.Time
}

// Config is what the maintenance loop is told; the process maps its options onto it (the
// planner's own settings are Maintainer.Plan).
type Config struct {
	// SkipAfterFailures is SIGLAKE_COMPACTOR_SKIP_AFTER_FAILURES: permanent rewrite failures
	// blamed on one input before it is set aside (0 = 3).
	SkipAfterFailures int
	// FailureBackoff is SIGLAKE_COMPACTOR_FAILURE_BACKOFF_SECS: the first wait before a failed
	// bin is tried again (0 = 30 s).
	FailureBackoff time.Duration
	// SnapshotExpireInterval and SnapshotRetain are snapshotExpire.intervalSecs and .retain:
	// expiry's cadence (0 = off) and how many snapshots it keeps.
	SnapshotExpireInterval time.Duration
	SnapshotRetain         int
	// DeleteTasks is SIGLAKE_DELETE_TASKS: idle cycles sweep deletion requests.
	DeleteTasks bool
	// Sweep configures the delete sweeper.
	Sweep deletes.SweepConfig
	// RetentionInterval is SIGLAKE_RETENTION_INTERVAL_SECS: how often owned tables get a
	// retention run (0 = never); Retention configures the runs.
	RetentionInterval time.Duration
	Retention         retention.Config
	// IndexRebuild is SIGLAKE_INDEX_REBUILD: committed rewrites get Puffin index sidecars.
	IndexRebuild bool
	// MergeMemoryBytes, MergeChunkRows and MaxFanIn bound the merges (0 = merge's defaults).
	MergeMemoryBytes int64
	MergeChunkRows   int64
	MaxFanIn         int
	// SplitSparse cuts the outputs of planned rewrites where the row density falls
	// (merge.WriterOptions.SplitSparse); delete tasks and retention keep their one output.
	SplitSparse float64
	// MergeSpliceMinRows is SIGLAKE_MERGE_SPLICE_MIN_ROWS (merge.RewriteOptions.SpliceMinRows).
	MergeSpliceMinRows int64
	// MergeSpliceUnverified is SIGLAKE_MERGE_SPLICE_VERIFY=off (merge.RewriteOptions.SpliceUnverified);
	// the zero value verifies.
	MergeSpliceUnverified bool
	// Metadata is the search metadata a rewrite's output carries.
	Metadata lake.MetadataFunc
	// FoldMaxGroups (SIGLAKE_FOLD_MAX_GROUPS) and FoldMinFiles (SIGLAKE_FOLD_MIN_FILES) bound
	// the folding of rollup tables (folding.Fold.MaxGroups, plan.FoldConfig.MinFiles).
	FoldMaxGroups int
	FoldMinFiles  int
}

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
	Deletes   *deletes.Metrics
	Retention *retention.Metrics
	// Fold counts folding (nil: not counted); the process sets it beside NewMetrics.
	Fold *fold.Metrics
}

// NewMetrics registers the maintenance loop's own metrics on reg and takes the shared ones.
func NewMetrics(reg prometheus.Registerer, rw *rewrite.Metrics, mm *instrument.MergeMetrics, rb *puffinidx.Metrics, dm *deletes.Metrics, rm *retention.Metrics) *Metrics {
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

func (m *Maintainer) error(stage, table string, err error) {
	if m.Publish != nil {
		m.Publish.Error(m.Now(), stage, table, err)
	}
}

// edit publishes a new state of table: a copy of the last one that f changes. The last one may be
// being encoded by /debug/status, so it is never written.
func (m *Maintainer) edit(table string, f func(st *State)) {
	var st State
	if prev := m.published[table]; prev != nil {
		st = *prev
	}
	if st.IndexRebuild != nil {
		rb := *st.IndexRebuild
		st.IndexRebuild = &rb
	}
	f(&st)
	if m.published == nil {
		m.published = map[string]*State{}
	}
	m.published[table] = &st
	if m.Publish != nil {
		m.Publish.Maintenance(table, &st)
	}
}

// State returns the last published state of table (nil before the first pass).
func (m *Maintainer) State(table string) *State { return m.published[table] }

// CycleReport summarises one maintenance cycle.
type CycleReport struct {
	Decision  string
	Tables    int
	Planned   int // bins planned over all tables
	Rewrites  int // bins committed
	Conflicts int // bins whose replace lost to a concurrent change (outputs removed)
	Failed    int
	// OutstandingBins and OutstandingBytes sum the tables' outstanding work (PassReport).
	OutstandingBins  int
	OutstandingBytes int64
	// Succeeded: the cycle completed without an error (the tables listed; every owned table's
	// pass, rewrites other than conflicts, delete sweeps and expiry), owning tables or not. It
	// sets siglake_maintenance_last_success_timestamp_seconds.
	Succeeded bool
	// DeleteSweeps are the delete sweeps of an idle cycle (none when SIGLAKE_DELETE_TASKS is off).
	DeleteSweeps []deletes.SweepReport
	// Retention are the retention runs of this cycle (one per owned table when due).
	Retention []retention.Report
	// Expired are the tables whose snapshots this cycle expired.
	Expired []string
	// TableErrors are the tables whose pass or expiry failed; the others went on.
	TableErrors []TableError
}

// Deletes is the maintainer's delete sweeper (created on first use; it keeps what it learnt
// about clean files between cycles). Its rewrites run through the maintainer's executor, so they
// get the index rebuild under SIGLAKE_INDEX_REBUILD like every other rewrite.
func (m *Maintainer) Deletes() *deletes.Sweeper {
	if m.sweeper == nil {
		m.sweeper = &deletes.Sweeper{Cfg: m.Cfg.Sweep, Lake: m.Lake, Metrics: m.Metrics.Deletes, RewriteMetrics: m.Metrics.Rewrite,
			Log: m.Log, Now: m.Now, Executor: m.executor(), OnFailure: m.readFailed,
			Check: fold.CheckDelete}
		if p, ok := m.Publish.(deletes.Publisher); ok {
			m.sweeper.Publish = p
		}
	}
	return m.sweeper
}

// Retention is the maintainer's retention runner (created on first use). Its rewrites run through
// the maintainer's executor, like every other rewrite.
func (m *Maintainer) Retention() *retention.Runner {
	if m.retention == nil {
		m.retention = &retention.Runner{Cfg: m.Cfg.Retention, Lake: m.Lake, Executor: m.executor(), Metrics: m.Metrics.Retention,
			RewriteMetrics: m.Metrics.Rewrite, Log: m.Log, Now: m.Now, OnFailure: m.readFailed}
		if p, ok := m.Publish.(retention.Publisher); ok {
			m.retention.Publish = p
		}
	}
	return m.retention
}

// runRetention runs retention on each table still owned; a table's failure does not stop the others.
func (m *Maintainer) runRetention(ctx context.Context, tables []string, rep *CycleReport) {
	for _, name := range tables {
		if ctx.Err() != nil {
			break
		}
		if m.Owns != nil && !m.Owns(name) {
			continue // lost since the cycle began; the others are still ours
		}
		rr, err := m.Retention().Run(ctx, name, retention.Options{Apply: true})
		rep.Retention = append(rep.Retention, rr)
		if membudget.Shutdown(ctx, err) {
			break // the runner logged it; a shutdown is no table error
		}
		if err != nil {
			rep.TableErrors = append(rep.TableErrors, TableError{At: m.Now(), Table: name, Stage: "retention", Err: err})
		}
	}
}

// idleDeletes sweeps each owned table's pending deletion requests, or with SIGLAKE_DELETE_TASKS
// off only publishes them (requests are still recorded and counted; delete-sweep --apply runs them).
func (m *Maintainer) idleDeletes(ctx context.Context, owned []string) []deletes.SweepReport {
	d := m.Deletes()
	var out []deletes.SweepReport
	for _, name := range owned {
		if ctx.Err() != nil {
			break
		}
		if m.Owns != nil && !m.Owns(name) {
			continue
		}
		if !m.Cfg.DeleteTasks {
			m.publishPending(ctx, []string{name})
			continue
		}
		rep, err := d.Sweep(ctx, name, deletes.SweepOptions{Apply: true})
		if membudget.Shutdown(ctx, err) {
			m.Log.Info("delete sweep stopped: shutting down", zap.String("table", name))
			out = append(out, rep)
			break
		}
		if err != nil {
			m.error("delete-sweep", name, err)
			m.Log.Warn("delete sweep failed", zap.String("table", name), zap.Error(err))
		}
		out = append(out, rep)
	}
	return out
}

// publishPending updates the pending-deletion gauge and status of tables without sweeping them.
func (m *Maintainer) publishPending(ctx context.Context, tables []string) {
	for _, name := range tables {
		if err := m.Deletes().Pending(ctx, name); err != nil {
			m.Log.Warn("reading deletion requests failed", zap.String("table", name), zap.Error(err))
		}
	}
}

// forgetTables drops the per-table gauges (overlap depth, live files and bytes per level, gauge
// sample time, pending deletions) of tables this process no longer owns, or that are gone: their
// new owner exports them, and a stale value would alert forever or count twice in a sum.
// Counters stay: they count what this process did.
func (m *Maintainer) forgetTables(owned []string) {
	now := map[string]bool{}
	for _, name := range owned {
		now[name] = true
	}
	for name := range m.reported {
		if now[name] {
			continue
		}
		m.Metrics.Deletes.Pending.DeleteLabelValues(name)
		m.Metrics.Retention.Forget(name)
		if m.retention != nil {
			m.retention.Forget(name) // the files it read clean: the new owner reads them once
		}
		if p, ok := m.Publish.(retention.Publisher); ok {
			p.Retention(name, nil) // the new owner shows it
		}
		m.Metrics.Fold.Forget(name)
		m.Metrics.OverlapDepth.DeleteLabelValues(name)
		m.Metrics.GaugesSampledAt.DeleteLabelValues(name)
		m.Metrics.SkippedFiles.DeleteLabelValues(name)
		m.pruneFailures(name, nil, m.Now())
		m.Metrics.OutstandingBins.DeleteLabelValues(name)
		m.Metrics.OutstandingBytes.DeleteLabelValues(name)
		delete(m.lastOutstanding, name)
		m.Metrics.LiveFiles.DeletePartialMatch(prometheus.Labels{"table": name})
		m.Metrics.LiveBytes.DeletePartialMatch(prometheus.Labels{"table": name})
	}
	m.reported = now
}

// Run runs a cycle every tick until stop is done; cycles run under work, which outlives stop by
// the shutdown timeout so that a rewrite in flight can commit.
func (m *Maintainer) Run(stop, work context.Context, tick time.Duration) {
	m.Metrics.LastSuccess.WithLabelValues() // this process maintains: export the gauge, at 0 until a cycle succeeds
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-t.C:
		}
		if _, err := m.Cycle(work); err != nil {
			m.Log.Warn("maintenance cycle had errors", zap.Error(err))
		}
	}
}

// Cycle runs one maintenance cycle over the owned tables.
func (m *Maintainer) Cycle(ctx context.Context) (CycleReport, error) {
	var rep CycleReport
	if m.states == nil {
		m.states = map[string]plan.State{}
	}
	now := m.Now()
	if wall := time.Now(); !m.lastCycle.IsZero() {
		m.busy.Add(m.rewriting, wall.Sub(m.lastCycle))
		m.rewriting, m.lastCycle = 0, wall
	} else {
		m.lastCycle = wall
	}
	tables, err := m.Lake.ListTables(ctx)
	if err != nil {
		m.error("maintenance", "", err)
		return rep, err
	}
	var owned []string
	for _, t := range tables {
		if m.Owns == nil || m.Owns(t) {
			owned = append(owned, t)
		}
	}
	if m.Publish != nil {
		m.Publish.Owned(owned)
	}
	backlog := 0
	if m.Backlog != nil {
		backlog = m.Backlog()
	}
	// Graded backpressure is a property of the process's cycle, so one decision serves every table.
	// A skipped cycle makes no catalog commit (no rewrite, registration clean-up, delete task or
	// expiry): the drain, which has priority, commits to the same tables.
	// Every table plans with the count from before this cycle, so all get the same decision.
	skipping := plan.SkipsBackpressure(m.Plan, backlog, m.backlogged)
	backlogged := m.backlogged
	decided := false
	var firstErr error
	var healthy []string // owned tables whose pass did not fail
	for _, name := range owned {
		if ctx.Err() != nil || membudget.Stopping(m.Stop) != nil {
			break
		}
		rep.Tables++
		st := m.states[name]
		st.BackloggedCycles = backlogged
		pass, err := m.table(ctx, name, plan.Input{Now: now, SealedBacklog: backlog, State: st}, skipping, &rep)
		if err != nil {
			rep.TableErrors = append(rep.TableErrors, TableError{At: m.Now(), Table: name, Stage: "maintenance", Err: err})
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		healthy = append(healthy, name)
		m.states[name] = pass.Next
		if !decided {
			decided = true
			rep.Decision = pass.Decision.String()
			m.backlogged = pass.Next.BackloggedCycles
		}
	}
	// Delete tasks run in the idle cycle: no rewrite work and no backpressure. A table whose pass
	// failed is left out rather than holding back the sweeps of every other table.
	idle := rep.Planned == 0 && rep.Decision != plan.DecisionSkippedBackpressure.String() &&
		rep.Decision != plan.DecisionThrottledBackpressure.String()
	if ctx.Err() == nil {
		if idle && !skipping {
			rep.DeleteSweeps = m.idleDeletes(ctx, healthy)
		} else {
			m.publishPending(ctx, healthy) // the pending gauge stays current in busy cycles too
		}
		m.forgetTables(owned)
	}
	// Retention runs in busy cycles too (its caps keep it small beside the drain), not in skipped ones.
	if !skipping && ctx.Err() == nil && m.Cfg.RetentionInterval > 0 && plan.Due(m.lastRetention, now, m.Cfg.RetentionInterval) {
		m.lastRetention = now
		// Every owned table, also one whose pass failed: retention does not depend on rewrites.
		m.runRetention(ctx, owned, &rep)
	}
	sweepFailed := false
	for _, s := range rep.DeleteSweeps {
		sweepFailed = sweepFailed || s.Outcome == "failed"
	}
	if !skipping && m.Cfg.SnapshotExpireInterval > 0 && plan.Due(m.lastExpire, now, m.Cfg.SnapshotExpireInterval) {
		m.lastExpire = now
		for _, name := range owned {
			if err := m.Lake.ExpireSnapshots(ctx, name, m.Cfg.SnapshotRetain); err != nil {
				rep.TableErrors = append(rep.TableErrors, TableError{At: m.Now(), Table: name, Stage: "expire", Err: err})
				continue
			}
			rep.Expired = append(rep.Expired, name)
		}
	}
	rep.Succeeded = ctx.Err() == nil && firstErr == nil && len(rep.TableErrors) == 0 && rep.Failed == 0 && !sweepFailed
	m.observe(rep)
	return rep, firstErr
}

// observe turns a cycle's report into metrics, status and log lines.
func (m *Maintainer) observe(rep CycleReport) {
	switch rep.Decision {
	case plan.DecisionSkippedBackpressure.String():
		m.Metrics.SkippedBackpressure.Inc()
	case plan.DecisionThrottledBackpressure.String():
		m.Metrics.ThrottledBackpressure.Inc()
	}
	if len(rep.Expired) > 0 {
		m.Metrics.Expirations.WithLabelValues("ok").Add(float64(len(rep.Expired)))
	}
	if rep.Succeeded {
		m.Metrics.LastSuccess.WithLabelValues().Set(float64(m.Now().UnixNano()) / 1e9)
	}
	for _, e := range rep.TableErrors {
		if m.Publish != nil {
			m.Publish.Error(e.At, e.Stage, e.Table, e.Err)
		}
		switch e.Stage {
		case "expire":
			m.Metrics.Expirations.WithLabelValues("failed").Inc()
			m.Log.Warn("snapshot expiry failed", zap.String("table", e.Table), zap.Error(e.Err))
		case "retention": // the runner logged it
		default:
			m.Log.Warn("maintenance of table failed", zap.String("table", e.Table), zap.Error(e.Err))
		}
	}
}

// TableError is one table's failure in a cycle.
type TableError struct {
	At    time.Time // when it failed (the cycle reports at its end)
	Table string
	Stage string // maintenance (its pass), retention or expire
	Err   error
}

// table samples a table's gauges, plans a pass and runs its bins. In a skipped backlogged cycle it
// only samples the gauges and records the decision: it commits nothing.
func (m *Maintainer) table(ctx context.Context, name string, in plan.Input, skipping bool, rep *CycleReport) (plan.Pass, error) {
	t, err := m.Lake.LoadTable(ctx, name)
	if err != nil {
		return plan.Pass{}, err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return plan.Pass{}, err
	}
	byPath := make(map[string]lake.File, len(files))
	// Set-aside files stay in the gauges (depth is reported with them) but out of planning: their
	// clusters are planned without them, so the rest of the partition still compacts.
	skipped := lake.SkippedFiles(t.Properties())
	all := make([]plan.File, 0, len(files))
	for _, f := range files {
		all = append(all, PlanFile(f))
		byPath[f.Path] = f
		if _, ok := skipped[f.Path]; !ok {
			in.Files = append(in.Files, PlanFile(f))
		}
	}
	m.sampleGauges(name, all, in.Now)
	m.publishSkipped(name, skipped, byPath)
	m.pruneFailures(name, byPath, in.Now)
	if !skipping {
		m.dropStaleSkipped(ctx, name, skipped, byPath)
	}
	// Registrations of files no longer live (rewritten, retained away, by us or another owner)
	// are dropped whatever the switch says: properties and live files come from one version.
	live := func(p string) bool { _, ok := byPath[p]; return ok }
	if !skipping { // the clean-up is a commit: a skipped cycle leaves it to the next one
		if err := m.dropStaleRegistrations(ctx, name, &t, live); err != nil {
			return plan.Pass{}, err
		}
	}
	m.updateRebuildState(name, t.Properties(), nil)
	roll := m.rollup(name, t, in.Now)
	in.Rewriter, in.RewriterBusy, in.TimeSpent = m.rate, m.busy.Share(), m.rewriting
	pass := m.plan(roll, in, skipping)
	rep.Planned += len(pass.Bins)
	report := &PassReport{Time: in.Now, Decision: pass.Decision.String(), Skipped: pass.Skipped,
		TimeLimitSeconds: pass.TimeLimit.Seconds()}
	committed := 0 // bins run in order and stop at the first that does not commit
	var committedBytes int64
	for i, b := range pass.Bins {
		if ctx.Err() != nil || membudget.Stopping(m.Stop) != nil || (m.Owns != nil && !m.Owns(name)) {
			report.Skipped = append(report.Skipped, fmt.Sprintf("%d bins not started: lease lost or shutting down", len(pass.Bins)-i))
			break
		}
		br := BinReport{Kind: b.Kind.String(), Partition: b.Partition, Files: len(b.Files), Bytes: b.EstimatedBytes, Reason: b.Reason}
		key := binKey(name, b)
		if until, ok := m.backingOff(key, in.Now); ok {
			report.Skipped = append(report.Skipped, fmt.Sprintf("%s bin of %d files in %s: backing off after a transient failure until %s",
				b.Kind, len(b.Files), b.Partition, until.UTC().Format(time.RFC3339)))
			continue
		}
		started := time.Now() // the real clock: m.Now may be a test's
		out, err := m.rewrite(ctx, t, b, byPath, roll)
		m.rewriting += time.Since(started)
		br.Path = string(out.Merge.Path)
		switch {
		case err == nil:
			br.Result = "committed"
			rep.Rewrites++
			// Bytes the splice copied cost a few percent of a re-encode: counted, they would make
			// the next re-encode look fast enough to fit behind fresh work (an estimate per input
			// byte then overstates a spliced bin, which only defers it).
			m.rate.Add(max(b.EstimatedBytes-out.Merge.SplicedBytes, 1), time.Since(started))
			m.succeeded(name, key, b)
			committed++
			committedBytes += b.EstimatedBytes
		case errors.Is(err, rewrite.ErrConflict):
			br.Result = "conflict: " + err.Error()
			rep.Conflicts++
		case out.Status == rewrite.Cancelled:
			br.Result = "cancelled: shutting down"
		default:
			br.Result = "failed: " + err.Error()
			rep.Failed++
			m.error("rewrite", name, err)
			m.failed(ctx, name, key, b, out, in.Now)
		}
		report.Bins = append(report.Bins, br)
		if err != nil {
			break // the file set changed or the store fails: replan next cycle from fresh metadata
		}
		if t, err = m.Lake.LoadTable(ctx, name); err != nil {
			return pass, err
		}
	}
	m.outstanding(name, in, pass, committed, committedBytes, report, rep)
	m.publishPass(name, report)
	return pass, nil
}

// work is an amount of outstanding rewrite work.
type work struct {
	bins  int
	bytes int64
}

func (w *work) add(bins []plan.Bin) {
	for _, b := range bins {
		w.bins++
		w.bytes += b.EstimatedBytes
	}
}

// outstanding sets the table's outstanding-work gauges (like Tempo's
// tempodb_compaction_outstanding_blocks), and the pass report's fields, from what the planner
// found due that this pass did not commit: the bins from the first one that did not commit on
// (it failed or lost to a conflict, and the rest were not started: a failure, the lease lost,
// shutdown) and the bins the pass's budget deferred. A backlogged cycle (skipped, or the
// restricted L0 pass) looks at nothing else, so its outstanding work is what an unrestricted
// pass would plan now, less what the restricted pass committed: the gauge grows while the drain
// has priority. When no check was due the gauges keep the last pass's values; with rewrites
// disabled nothing is outstanding.
func (m *Maintainer) outstanding(name string, in plan.Input, pass plan.Pass, committed int, committedBytes int64, report *PassReport, rep *CycleReport) {
	if m.lastOutstanding == nil {
		m.lastOutstanding = map[string]work{}
	}
	var w work
	switch pass.Decision {
	case plan.DecisionRewritesDisabled:
	case plan.DecisionSkippedBackpressure, plan.DecisionThrottledBackpressure:
		full := plan.Plan(m.Plan, plan.Input{Files: in.Files, Now: in.Now, State: in.State}) // pure: the state is not kept
		if full.Decision == plan.DecisionNothingDue {
			w = m.lastOutstanding[name]
			break
		}
		w.add(full.Bins)
		w.add(full.Deferred)
		w.bins, w.bytes = max(w.bins-committed, 0), max(w.bytes-committedBytes, 0)
	case plan.DecisionNothingDue:
		w = m.lastOutstanding[name]
	default:
		w.add(pass.Bins[committed:])
		w.add(pass.Deferred)
	}
	m.lastOutstanding[name] = w
	m.Metrics.OutstandingBins.WithLabelValues(name).Set(float64(w.bins))
	m.Metrics.OutstandingBytes.WithLabelValues(name).Set(float64(w.bytes))
	report.OutstandingBins, report.OutstandingBytes = w.bins, w.bytes
	rep.OutstandingBins += w.bins
	rep.OutstandingBytes += w.bytes
}

// dropStaleRegistrations drops the index registrations of files no longer live and reloads t
// when it did. A failed clean-up is reported and retried next pass; only a failed reload fails.
func (m *Maintainer) dropStaleRegistrations(ctx context.Context, name string, t **table.Table, live func(string) bool) error {
	n, err := puffinidx.DropStale(ctx, *t, live, m.Metrics.Rebuild, m.Log)
	if err != nil {
		m.error("index-rebuild", name, err)
		m.Log.Warn("dropping stale index registrations failed; next pass retries", zap.String("table", name), zap.Error(err))
		return nil
	}
	if n > 0 {
		if *t, err = m.Lake.LoadTable(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// publishPass shows a table's last pass in /debug/status.
func (m *Maintainer) publishPass(name string, report *PassReport) {
	m.edit(name, func(st *State) { st.LastPass = report })
}

// sampleGauges publishes a table's overlap depth and live files and bytes per level.
func (m *Maintainer) sampleGauges(name string, files []plan.File, now time.Time) {
	depth := 0
	for _, d := range plan.PartitionDepths(files) {
		depth = max(depth, d)
	}
	count := map[string]int{}
	bytes := map[string]int{}
	for l := plan.L0; l < plan.NumLevels; l++ {
		count[l.String()], bytes[l.String()] = 0, 0
	}
	for _, f := range files {
		l := m.Plan.LevelOf(f.SizeBytes).String()
		count[l]++
		bytes[l] += int(f.SizeBytes)
	}
	m.Metrics.OverlapDepth.WithLabelValues(name).Set(float64(depth))
	for l, n := range count {
		m.Metrics.LiveFiles.WithLabelValues(name, l).Set(float64(n))
		m.Metrics.LiveBytes.WithLabelValues(name, l).Set(float64(bytes[l]))
	}
	m.Metrics.GaugesSampledAt.WithLabelValues(name).Set(float64(now.UnixNano()) / 1e9)
	m.edit(name, func(st *State) {
		st.SampledAt, st.OverlapDepth = now, depth
		st.FilesPerLevel, st.BytesPerLevel = count, bytes
	})
}

// executor is the rewrite executor with this process's merge settings; committed rewrites get the
// index rebuild under SIGLAKE_INDEX_REBUILD.
func (m *Maintainer) executor() *rewrite.Executor {
	e := &rewrite.Executor{Lake: m.Lake, MemoryBudget: m.Cfg.MergeMemoryBytes, ChunkRows: m.Cfg.MergeChunkRows,
		MaxFanIn: m.Cfg.MaxFanIn, SpliceMinRows: m.Cfg.MergeSpliceMinRows,
		SpliceUnverified: m.Cfg.MergeSpliceUnverified, MergeMetrics: m.Metrics.Merge, Now: m.Now, Reserve: m.Reserve, Stop: m.Stop}
	if m.Cfg.IndexRebuild {
		e.AfterCommit = m.rebuildIndexes
	}
	return e
}

// rewrite runs one bin through the executor: one replace of exactly its input files. Every bin of
// a rollup table (roll not nil) folds.
func (m *Maintainer) rewrite(ctx context.Context, t *table.Table, b plan.Bin, byPath map[string]lake.File, roll *fold.Rollup) (rewrite.Outcome, error) {
	name := t.Identifier()[len(t.Identifier())-1]
	job := rewrite.Job{Kind: b.Kind.String(), Partition: b.Partition, Generation: b.OutputGeneration(),
		Dir: lake.DataDir(t, b.Partition), TargetFileBytes: b.TargetFileBytes, SplitSparse: m.Cfg.SplitSparse, Metadata: m.Cfg.Metadata.For(t), Reason: b.Reason}
	for _, f := range b.Files {
		lf, ok := byPath[f.Path]
		if !ok {
			return rewrite.Outcome{}, fmt.Errorf("planned file %s is not live", f.Path)
		}
		job.Inputs = append(job.Inputs, lf)
	}
	if roll != nil {
		f := roll.Fold
		job.Fold, job.FoldTier = &f, roll.Tier(b.Files)
	}
	out := m.executor().Run(ctx, t, job)
	rewrite.Observer{Metrics: m.Metrics.Rewrite, Log: m.Log}.Observe(name, job, out)
	if out.Status == rewrite.Committed {
		m.Metrics.Fold.Observe(out.Merge)
	}
	return out, out.Error()
}

// rebuildIndexes runs the Puffin index rebuild over one committed rewrite's outputs. It never
// fails the rewrite (promise 7): errors are logged, counted and shown in /debug/status.
func (m *Maintainer) rebuildIndexes(ctx context.Context, t *table.Table, fs icebergio.WriteFileIO, snap int64, outs []merge.Output) {
	name := t.Identifier()[len(t.Identifier())-1]
	files := make([]string, len(outs))
	for i, o := range outs {
		files[i] = o.Path
	}
	budget := m.Cfg.MergeMemoryBytes
	if budget <= 0 {
		budget = merge.DefaultMemoryBudget()
	}
	// Half the merge budget: the postings' size is an estimate, and encoding them needs a
	// buffer of the encoded size on top (bench/reindex: a 128 MiB cap peaked at 241 MiB RSS
	// under GOMEMLIMIT=256MiB). At least 16 MiB, so a budget made small to keep merges streamed
	// still indexes the columns of ordinary files.
	rb := &puffinidx.Rebuilder{Metrics: m.Metrics.Rebuild, Log: m.Log, MaxMemBytes: max(budget/2, 16<<20)}
	if m.Reserve != nil {
		// Like a merge's: a stop ends the wait, and a share granted as it came is given back.
		rctx, cancel := membudget.UntilStop(ctx, m.Stop)
		release, err := m.Reserve(rctx, "index_rebuild", rb.MaxMemBytes)
		cancel()
		if err == nil && membudget.Stopping(m.Stop) != nil { // granted as the stop came
			release()
			err = membudget.ErrStopping
		}
		if membudget.Shutdown(ctx, err) {
			m.Log.Info("index rebuild not started: shutting down; the outputs stay without sidecars until a rebuild",
				zap.String("table", name), zap.Int64("snapshot_id", snap))
			return
		}
		if err != nil {
			m.error("index-rebuild", name, err)
			return
		}
		defer release()
	}
	start := m.Now()
	res, err := rb.Run(ctx, t, fs, snap, files, lake.IndexColumns(t))
	if err != nil {
		m.error("index-rebuild", name, err)
		m.Log.Warn("index rebuild had failures; the rewrite stays committed", zap.String("table", name),
			zap.Int64("snapshot_id", snap), zap.Int("failures", res.Failures), zap.Error(err))
	} else if res.Files > 0 {
		m.Log.Info("registered index sidecars", zap.String("table", name), zap.Int64("snapshot_id", snap),
			zap.Int("files", res.Files), zap.Int("blobs", res.Blobs), zap.Int64("bytes", res.Bytes), zap.Duration("took", m.Now().Sub(start)))
	}
	if fresh, lerr := m.Lake.LoadTable(ctx, name); lerr == nil {
		t = fresh
	}
	m.updateRebuildState(name, t.Properties(), &rebuildRun{at: start, res: res, err: err})
}

type rebuildRun struct {
	at  time.Time
	res puffinidx.Result
	err error
}

// updateRebuildState refreshes the table's rebuild state in /debug/status (run: the last run, if
// one just happened).
func (m *Maintainer) updateRebuildState(name string, props iceberg.Properties, run *rebuildRun) {
	reg, _ := puffinidx.Parse(props)
	cols := lake.IndexColumnsOf(props)
	m.edit(name, func(ms *State) {
		if ms.IndexRebuild == nil {
			ms.IndexRebuild = &RebuildState{}
		}
		st := ms.IndexRebuild
		st.Enabled, st.Columns, st.Registered = m.Cfg.IndexRebuild, cols, len(reg)
		if run != nil {
			at := run.at
			st.LastRun, st.LastFiles, st.LastBytes, st.LastError = &at, run.res.Files, run.res.Bytes, ""
			if run.err != nil {
				st.LastError = run.err.Error()
			}
		}
	})
}

// PlanFile is the planner's view of a live file.
func PlanFile(f lake.File) plan.File {
	return plan.File{Path: f.Path, Partition: f.Partition, SizeBytes: f.Size, Generation: f.Generation, Late: f.Late,
		MinTime: f.MinTime, MaxTime: f.MaxTime, Rows: f.Rows}
}
