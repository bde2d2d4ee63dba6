// Package maintain is the maintenance loop of the tables this process owns, in three parts, as
// IOx's compactor has it ("the driver decides when, components decide how"):
//
//   - the driver (Maintainer, this file) decides when: the ticks, which tables are owned, their
//     order, the cycle's one backpressure decision, the cadences of retention and snapshot
//     expiry, and the idle cycle's delete tasks. It asks the planner for each table's whole pass
//     (plan.PlanTable), once per table and cycle;
//   - the executor (executor.go) decides how: it reads a table's live files, runs the pass's
//     bins through the one rewrite executor, and keeps what rewrites taught it (speed, failures);
//   - the observer (observer.go) turns what they return into metrics, /debug/status and logs.
//
// The planner decides; none of the three plans.
package maintain

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/retention"
)

// Maintainer runs table maintenance on the tables this process owns: planned rewrites (each bin
// committed as its own validated replace), delete tasks, retention, table gauges and snapshot
// expiry. It is the driver; its exported fields are the settings of all three parts, read when
// used, so a caller may change them between cycles.
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
	// Leases, when set, offers each pass's leasable bins to every maintenance sidecar (bin
	// leases, leases.go) and rewrites here only the rest; nil rewrites every bin here.
	Leases *Leases

	once  sync.Once // makes the parts on first use: callers build a Maintainer as a literal
	clock cadences
	exec  *executor
	obs   *observer
}

// cadences is what the driver carries from one cycle to the next.
type cadences struct {
	// states is each table's planner state (plan.Pass.Next).
	states map[string]plan.State
	// backlogged counts consecutive backlogged cycles, process-wide (the backlog is the process's).
	backlogged int
	// lastExpire and lastRetention are the last expiry and retention runs: their cadences are
	// the process's, not a table's.
	lastExpire, lastRetention time.Time
}

// parts makes the executor and the observer on first use.
func (m *Maintainer) parts() {
	m.once.Do(func() {
		m.obs = &observer{set: m}
		m.exec = &executor{set: m, obs: m.obs}
		m.clock.states = map[string]plan.State{}
	})
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
	Sweep sweep.Config
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
	// the folding of rollup tables (folding.Fold.MaxGroups, plan.FoldInput.MinFiles).
	FoldMaxGroups int
	FoldMinFiles  int
	// RewriteMaxAge is the longest a merge may take and still be committed, local or leased
	// (rewrite.Executor.MaxAge, work.Config.MaxAge): the process sets orphans.HandoffMaxAge under
	// --commit-timeout, so outputs are committed inside orphan gc's floor. 0: no bound.
	RewriteMaxAge time.Duration
}

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
	DeleteSweeps []sweep.Report
	// Retention are the retention runs of this cycle (one per owned table when due).
	Retention []retention.Report
	// Expired are the tables whose snapshots this cycle expired.
	Expired []string
	// TableErrors are the tables whose pass or expiry failed; the others went on.
	TableErrors []TableError
}

// TableError is one table's failure in a cycle.
type TableError struct {
	At    time.Time // when it failed (the cycle reports at its end)
	Table string
	Stage string // maintenance (its pass), retention or expire
	Err   error
}

// Deletes is the maintainer's delete sweeper (created on first use; it keeps what it learnt
// about clean files between cycles). Its rewrites run through the maintainer's executor, so they
// get the index rebuild under SIGLAKE_INDEX_REBUILD like every other rewrite.
func (m *Maintainer) Deletes() *sweep.Sweeper {
	m.parts()
	return m.exec.deletes()
}

// Retention is the maintainer's retention runner (created on first use). Its rewrites run through
// the maintainer's executor, like every other rewrite.
func (m *Maintainer) Retention() *retention.Runner {
	m.parts()
	return m.exec.retention()
}

// State returns the last published state of table (nil before the first pass).
func (m *Maintainer) State(table string) *State {
	m.parts()
	return m.obs.published[table]
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

// Cycle runs one maintenance cycle over the owned tables: each table's pass, then the idle
// cycle's delete tasks (or the pending gauge), retention and expiry when due.
func (m *Maintainer) Cycle(ctx context.Context) (CycleReport, error) {
	m.parts()
	var rep CycleReport
	now := m.Now()
	m.exec.speed.cycle(time.Now())
	m.exec.absorbLeased(ctx) // workers' results committed since the last cycle
	tables, err := m.Lake.ListTables(ctx)
	if err != nil {
		m.obs.error("maintenance", "", err)
		return rep, err
	}
	owned := m.owned(tables)
	backlog := 0
	if m.Backlog != nil {
		backlog = m.Backlog()
	}
	// Graded backpressure is a property of the process's cycle, so one decision serves every table.
	// A skipped cycle makes no catalog commit (no rewrite, registration clean-up, delete task or
	// expiry): the drain, which has priority, commits to the same tables.
	skipping := plan.SkipsBackpressure(m.Plan, backlog, m.clock.backlogged)
	healthy, idle, firstErr := m.passes(ctx, owned, plan.Input{Now: now, SealedBacklog: backlog}, skipping, &rep)
	// Delete tasks run in the idle cycle: no rewrite work and no backpressure. A table whose pass
	// failed is left out rather than holding back the sweeps of every other table.
	if ctx.Err() == nil {
		if idle && !skipping {
			rep.DeleteSweeps = m.idleDeletes(ctx, healthy)
		} else {
			m.exec.publishPending(ctx, healthy) // the pending gauge stays current in busy cycles too
		}
		m.forgetTables(owned)
	}
	// Retention runs in busy cycles too (its caps keep it small beside the drain), not in skipped ones.
	if !skipping && ctx.Err() == nil && m.Cfg.RetentionInterval > 0 && plan.Due(m.clock.lastRetention, now, m.Cfg.RetentionInterval) {
		m.clock.lastRetention = now
		// Every owned table, also one whose pass failed: retention does not depend on rewrites.
		m.runRetention(ctx, owned, &rep)
	}
	if !skipping && m.Cfg.SnapshotExpireInterval > 0 && plan.Due(m.clock.lastExpire, now, m.Cfg.SnapshotExpireInterval) {
		m.clock.lastExpire = now
		m.expire(ctx, owned, &rep)
	}
	rep.Succeeded = ctx.Err() == nil && firstErr == nil && len(rep.TableErrors) == 0 && rep.Failed == 0 && !sweepFailed(rep.DeleteSweeps)
	m.obs.cycle(rep)
	return rep, firstErr
}

// owned lists the tables this process maintains now, and publishes them.
func (m *Maintainer) owned(tables []string) []string {
	var owned []string
	for _, t := range tables {
		if m.Owns == nil || m.Owns(t) {
			owned = append(owned, t)
		}
	}
	if m.Publish != nil {
		m.Publish.Owned(owned)
	}
	return owned
}

// keeps says whether the driver still wants work on table: not stopping, and still its owner.
func (m *Maintainer) keeps(ctx context.Context, table string) bool {
	return ctx.Err() == nil && membudget.Stopping(m.Stop) == nil && (m.Owns == nil || m.Owns(table))
}

// passes plans and runs each owned table's pass, in order. Every table plans with the backlog
// count from before this cycle, so all get the same decision. It returns the tables whose pass did
// not fail, whether every pass planned left its table idle (plan.TablePass.Idle), and the first
// error.
func (m *Maintainer) passes(ctx context.Context, owned []string, in plan.Input, skipping bool, rep *CycleReport) (healthy []string, idle bool, firstErr error) {
	backlogged := m.clock.backlogged
	decided := false
	idle = true
	for _, name := range owned {
		if ctx.Err() != nil || membudget.Stopping(m.Stop) != nil {
			break
		}
		rep.Tables++
		in.State = m.clock.states[name]
		in.State.BackloggedCycles = backlogged
		pass, err := m.table(ctx, name, in, skipping, rep)
		idle = idle && pass.Idle
		if err != nil {
			rep.TableErrors = append(rep.TableErrors, TableError{At: m.Now(), Table: name, Stage: "maintenance", Err: err})
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		healthy = append(healthy, name)
		m.clock.states[name] = pass.Next
		if !decided {
			decided = true
			rep.Decision = pass.Decision.String()
			m.clock.backlogged = pass.Next.BackloggedCycles
		}
	}
	return healthy, idle, firstErr
}

// unplanned is the pass of a table that failed before its planning: it holds back no idle cycle
// (a failing table must not starve every other table's delete tasks).
var unplanned = plan.TablePass{Idle: true}

// table is one table's pass: the executor reads the table, the planner plans its whole pass, the
// executor runs it and the observer records it. In a skipped backlogged cycle the executor only
// reads the table (the gauges) and commits nothing: skipping is the cycle's decision, which the
// planner makes alike for every table.
func (m *Maintainer) table(ctx context.Context, name string, in plan.Input, skipping bool, rep *CycleReport) (plan.TablePass, error) {
	v, err := m.exec.read(ctx, name, in.Now, skipping)
	if err != nil {
		return unplanned, err
	}
	in.Files = v.files
	in.Rewriter, in.RewriterBusy, in.TimeSpent = m.exec.speed.input()
	if m.Leases != nil {
		in.InFlight = m.Leases.Owner.InFlight(name) // leased bins' inputs: planned without
		if m.Leases.Workers != nil {
			in.Workers = m.Leases.Workers()
		}
	}
	pass := plan.PlanTable(m.Plan, plan.TableInput{Input: in, Fold: foldInput(v.roll, v.files, m.Cfg.FoldMinFiles)})
	rep.Planned += len(pass.Bins)
	run, err := m.exec.run(ctx, v, pass, in.Now, func() bool { return m.keeps(ctx, name) })
	rep.Rewrites += run.committed.Bins
	rep.Conflicts += run.conflicts
	rep.Failed += run.failed
	if err != nil {
		return pass, err
	}
	m.obs.pass(name, in.Now, pass, run, rep)
	return pass, nil
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
		rr, err := m.exec.retention().Run(ctx, name, retention.Options{Apply: true})
		rep.Retention = append(rep.Retention, rr)
		if membudget.IsStopping(ctx, err) {
			break // the runner logged it; a shutdown is no table error
		}
		if err != nil {
			rep.TableErrors = append(rep.TableErrors, TableError{At: m.Now(), Table: name, Stage: "retention", Err: err})
		}
	}
}

// idleDeletes sweeps each owned table's pending deletion requests, or with SIGLAKE_DELETE_TASKS
// off only publishes them (requests are still recorded and counted; delete-sweep --apply runs them).
func (m *Maintainer) idleDeletes(ctx context.Context, owned []string) []sweep.Report {
	var out []sweep.Report
	for _, name := range owned {
		if ctx.Err() != nil {
			break
		}
		if m.Owns != nil && !m.Owns(name) {
			continue
		}
		if !m.Cfg.DeleteTasks {
			m.exec.publishPending(ctx, []string{name})
			continue
		}
		rep, err := m.exec.sweep(ctx, name)
		out = append(out, rep)
		if membudget.IsStopping(ctx, err) {
			break
		}
	}
	return out
}

// expire expires the snapshots of the owned tables; a table's failure does not stop the others.
func (m *Maintainer) expire(ctx context.Context, owned []string, rep *CycleReport) {
	for _, name := range owned {
		if err := m.Lake.ExpireSnapshots(ctx, name, m.Cfg.SnapshotRetain); err != nil {
			rep.TableErrors = append(rep.TableErrors, TableError{At: m.Now(), Table: name, Stage: "expire", Err: err})
			continue
		}
		rep.Expired = append(rep.Expired, name)
	}
}

// forgetTables drops what this process kept about tables it no longer owns, or that are gone:
// their per-table gauges (the new owner exports them, and a stale value would alert forever or
// count twice in a sum) and the executor's failure counts and clean-file memory.
func (m *Maintainer) forgetTables(owned []string) {
	for _, name := range m.obs.owned(owned) {
		m.obs.forget(name)
		m.exec.forget(name)
		if m.Leases != nil {
			m.Leases.Owner.Drop(name) // results of its leases are refused from now on
			if m.Leases.Forget != nil {
				m.Leases.Forget(name)
			}
		}
	}
}

func sweepFailed(sweeps []sweep.Report) bool {
	for _, s := range sweeps {
		if s.Outcome == "failed" {
			return true
		}
	}
	return false
}

// PlanFile is the planner's view of a live file.
func PlanFile(f lake.File) level.File {
	return level.File{Path: f.Path, Partition: f.Partition, SizeBytes: f.Size, Generation: f.Generation, Late: f.Late,
		MinTime: f.MinTime, MaxTime: f.MaxTime, Rows: f.Rows}
}
