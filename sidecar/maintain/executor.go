package maintain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// executor is how maintenance works: it reads a table's live files, runs a pass's bins through the
// one rewrite executor (rewrite.Executor), and does the table's other work (delete tasks,
// retention, the index rebuild) through the same executor. It keeps what its rewrites taught it:
// their speed and their failures.
type executor struct {
	set *Maintainer // the settings (exported fields), read when used
	obs *observer
	// speed is this process's rewrite speed and busy share, the planner's time-limit inputs.
	speed speed
	// poison is the failure bookkeeping: back-offs and set-aside inputs (poison.go).
	poison poison
	// sweeper and retainer are made on first use; both keep what they learnt between cycles.
	sweeper  *sweep.Sweeper
	retainer *retention.Runner
	// leased records the bins offered to workers (leases.go; Maintainer.Leases).
	leased leasing
}

// speed measures this process's rewrites for the planner's time limit.
type speed struct {
	// rate is the measured rewrite speed (committed bins, all tables: they share the process's
	// CPU), so a pass holds about one L0 check interval of work (plan.Input.Rewriter).
	rate plan.RewriteRate
	// busy is the share of wall time spent in rewrites (plan.Input.RewriterBusy): rewriting is the
	// rewrite time since the cycle that started at lastCycle (real clock).
	busy      plan.BusyShare
	rewriting time.Duration
	lastCycle time.Time
}

// cycle starts a cycle at wall: the last cycle's rewrite time goes into the busy share.
func (s *speed) cycle(wall time.Time) {
	if !s.lastCycle.IsZero() {
		s.busy.Add(s.rewriting, wall.Sub(s.lastCycle))
		s.rewriting = 0
	}
	s.lastCycle = wall
}

// input is the planner's view of the speed: the rate, the busy share and the rewrite time this
// cycle already spent (other tables' passes), which the pass's time limit counts.
func (s *speed) input() (plan.RewriteRate, float64, time.Duration) {
	return s.rate, s.busy.Share(), s.rewriting
}

// view is one table as its pass sees it.
type view struct {
	name   string
	t      *table.Table
	byPath map[string]lake.File // every live file
	files  []level.File         // the files the planner may take: set-aside ones left out
	roll   *fold.Rollup         // the rollup, nil for an ordinary table or a bad specification
}

// read reads a table's live files and does the housekeeping of its pass: the gauges, the set-aside
// files, and (unless the cycle is skipped: they are commits) the clean-up of stale set-aside
// records and index registrations.
func (e *executor) read(ctx context.Context, name string, now time.Time, skipping bool) (*view, error) {
	t, err := e.set.Lake.LoadTable(ctx, name)
	if err != nil {
		return nil, err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return nil, err
	}
	v := &view{name: name, byPath: make(map[string]lake.File, len(files))}
	// Set-aside files stay in the gauges (depth is reported with them) but out of planning: their
	// clusters are planned without them, so the rest of the partition still compacts.
	skipped := lake.SkippedFiles(t.Properties())
	all := make([]level.File, 0, len(files))
	for _, f := range files {
		all = append(all, PlanFile(f))
		v.byPath[f.Path] = f
		if _, ok := skipped[f.Path]; !ok {
			v.files = append(v.files, PlanFile(f))
		}
	}
	e.obs.sampleGauges(name, all, now)
	e.obs.publishSkipped(name, skipped, v.byPath)
	e.poison.prune(name, v.byPath, now)
	if !skipping {
		e.dropStaleSkipped(ctx, name, skipped, v.byPath)
		// Registrations of files no longer live (rewritten, retained away, by us or another owner)
		// are dropped whatever the switch says: properties and live files come from one version.
		// The clean-up is a commit: a skipped cycle leaves it to the next one.
		live := func(p string) bool { _, ok := v.byPath[p]; return ok }
		if err := e.dropStaleRegistrations(ctx, name, &t, live); err != nil {
			return nil, err
		}
	}
	e.obs.updateRebuildState(name, t.Properties(), nil)
	r, err := fold.RollupOf(t, now, e.set.Cfg.FoldMaxGroups)
	e.obs.rollup(name, r, err)
	v.t, v.roll = t, r
	return v, nil
}

// foldInput is a rollup table's fold view for the planner (nil for a table without a rollup).
func foldInput(r *fold.Rollup, files []level.File, minFiles int) *plan.FoldInput {
	if r == nil {
		return nil
	}
	return &plan.FoldInput{Files: fold.Files(files), Cut: r.Cut, MinFiles: minFiles}
}

// passRun is what running a pass's bins came to.
type passRun struct {
	bins []BinReport
	// skipped says, in words, which planned bins did not run and why.
	skipped   []string
	offered   int // bins on offer to workers (Maintainer.Leases)
	committed plan.Work
	conflicts int
	failed    int
}

// run runs a pass's bins in order, each its own validated replace, while keep says the driver
// still wants them. It stops at the first bin that does not commit (the file set changed or the
// store fails: the next cycle replans from fresh metadata); after each commit it reloads the
// table, and only a failed reload fails the pass.
func (e *executor) run(ctx context.Context, v *view, pass plan.TablePass, now time.Time, keep func() bool) (passRun, error) {
	var run passRun
	bins := pass.Bins
	if e.set.Leases != nil {
		bins = e.offer(v, bins, now, &run) // the rest run here
	}
	for i, b := range bins {
		if !keep() {
			run.skipped = append(run.skipped, fmt.Sprintf("%d bins not started: lease lost or shutting down", len(bins)-i))
			break
		}
		key := binKey(v.name, b)
		if until, ok := e.poison.backingOff(key, now); ok {
			run.skipped = append(run.skipped, fmt.Sprintf("%s bin of %d files in %s: backing off after a transient failure until %s",
				b.Kind, len(b.Files), b.Partition, until.UTC().Format(time.RFC3339)))
			continue
		}
		br, err := e.bin(ctx, v, b, key, now, &run)
		run.bins = append(run.bins, br)
		if err != nil {
			break
		}
		if v.t, err = e.set.Lake.LoadTable(ctx, v.name); err != nil {
			return run, err
		}
	}
	return run, nil
}

// bin runs one bin and counts its outcome into run.
func (e *executor) bin(ctx context.Context, v *view, b level.Bin, key string, now time.Time, run *passRun) (BinReport, error) {
	br := BinReport{Kind: b.Kind.String(), Partition: b.Partition, Files: len(b.Files), Bytes: b.EstimatedBytes, Reason: b.Reason}
	started := time.Now() // the real clock: Maintainer.Now may be a test's
	out, err := e.rewriteBin(ctx, v, b)
	took := time.Since(started)
	e.speed.rewriting += took
	br.Path = string(out.Merge.Path)
	switch {
	case err == nil:
		br.Result = "committed"
		// Bytes the splice copied cost a few percent of a re-encode: counted, they would make
		// the next re-encode look fast enough to fit behind fresh work (an estimate per input
		// byte then overstates a spliced bin, which only defers it).
		e.speed.rate.Add(max(b.EstimatedBytes-out.Merge.SplicedBytes, 1), took)
		e.poison.succeeded(v.name, key, b)
		run.committed.Add(b)
	case errors.Is(err, rewrite.ErrConflict):
		br.Result = "conflict: " + err.Error()
		run.conflicts++
	case out.Status == rewrite.Cancelled:
		br.Result = "cancelled: shutting down"
	default:
		br.Result = "failed: " + err.Error()
		run.failed++
		e.obs.error("rewrite", v.name, err)
		e.failed(ctx, v.name, key, b, out, now)
	}
	return br, err
}

// rewriteExecutor is the one rewrite executor with this process's merge settings; committed
// rewrites get the index rebuild under SIGLAKE_INDEX_REBUILD.
func (e *executor) rewriteExecutor() *rewrite.Executor {
	s := e.set
	x := &rewrite.Executor{Lake: s.Lake, MemoryBudget: s.Cfg.MergeMemoryBytes, ChunkRows: s.Cfg.MergeChunkRows,
		MaxFanIn: s.Cfg.MaxFanIn, SpliceMinRows: s.Cfg.MergeSpliceMinRows,
		SpliceUnverified: s.Cfg.MergeSpliceUnverified, MergeMetrics: s.Metrics.Merge, Now: s.Now, Reserve: s.Reserve, Stop: s.Stop,
		MaxAge: s.Cfg.RewriteMaxAge}
	if s.Cfg.IndexRebuild {
		x.AfterCommit = e.rebuildIndexes
	}
	return x
}

// rewriteBin runs one bin through the rewrite executor: one replace of exactly its input files.
func (e *executor) rewriteBin(ctx context.Context, v *view, b level.Bin) (rewrite.Outcome, error) {
	job, err := e.binJob(v, b)
	if err != nil {
		return rewrite.Outcome{}, err
	}
	out := e.rewriteExecutor().Run(ctx, v.t, job)
	e.obs.rewrite(v.name, job, out)
	return out, out.Error()
}

// binJob is the rewrite job of bin b of v's table: its live input files, where and how its
// outputs are written. Every bin of a rollup table folds.
func (e *executor) binJob(v *view, b level.Bin) (rewrite.Job, error) {
	job := rewrite.Job{Kind: b.Kind.String(), Partition: b.Partition, Generation: b.OutputGeneration(),
		Dir: lake.DataDir(v.t, b.Partition), TargetFileBytes: b.TargetFileBytes, SplitSparse: e.set.Cfg.SplitSparse,
		Metadata: e.set.Cfg.Metadata.For(v.t), Reason: b.Reason}
	for _, f := range b.Files {
		lf, ok := v.byPath[f.Path]
		if !ok {
			return rewrite.Job{}, fmt.Errorf("planned file %s is not live", f.Path)
		}
		job.Inputs = append(job.Inputs, lf)
	}
	if v.roll != nil {
		f := v.roll.Fold
		job.Fold, job.FoldTier = &f, v.roll.Tier(b.Files)
	}
	return job, nil
}

// dropStaleRegistrations drops the index registrations of files no longer live and reloads t
// when it did. A failed clean-up is reported and retried next pass; only a failed reload fails.
func (e *executor) dropStaleRegistrations(ctx context.Context, name string, t **table.Table, live func(string) bool) error {
	// On the newest metadata, under the Lake's table lock: only the keys stale in t that are
	// still there (a file dead in t stays dead; a registration made since is not among them).
	unregister := func(ctx context.Context, keys []string) error {
		return e.set.Lake.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
			var there []string
			for _, k := range keys {
				if _, ok := cur[k]; ok {
					there = append(there, k)
				}
			}
			return nil, there
		})
	}
	n, err := puffinidx.DropStale(ctx, *t, live, unregister, e.set.Metrics.Rebuild, e.set.Log)
	if err != nil {
		e.obs.staleRegistrations(name, err)
		return nil
	}
	if n > 0 {
		if *t, err = e.set.Lake.LoadTable(ctx, name); err != nil {
			return err
		}
	}
	return nil
}

// rebuildIndexes runs the Puffin index rebuild over one committed rewrite's outputs. It never
// fails the rewrite (promise 7): the observer logs, counts and shows its errors.
func (e *executor) rebuildIndexes(ctx context.Context, t *table.Table, fs icebergio.WriteFileIO, snap int64, outs []merge.Output) {
	name := t.Identifier()[len(t.Identifier())-1]
	files := make([]string, len(outs))
	for i, o := range outs {
		files[i] = o.Path
	}
	budget := e.set.Cfg.MergeMemoryBytes
	if budget <= 0 {
		budget = merge.DefaultMemoryBudget()
	}
	// Half the merge budget: the postings' size is an estimate, and encoding them needs a
	// buffer of the encoded size on top (bench/reindex: a 128 MiB cap peaked at 241 MiB RSS
	// under GOMEMLIMIT=256MiB). At least 16 MiB, so a budget made small to keep merges streamed
	// still indexes the columns of ordinary files.
	rb := &puffinidx.Rebuilder{Metrics: e.set.Metrics.Rebuild, Log: e.set.Log, MaxMemBytes: max(budget/2, 16<<20),
		Register: func(ctx context.Context, set iceberg.Properties) error {
			return e.set.Lake.UpdateProperties(ctx, name, func(iceberg.Properties) (iceberg.Properties, []string) { return set, nil })
		}}
	release, err := e.reserveRebuild(ctx, rb.MaxMemBytes)
	if membudget.IsStopping(ctx, err) {
		e.obs.rebuildNotStarted(name, snap)
		return
	}
	if err != nil {
		e.obs.error("index-rebuild", name, err)
		return
	}
	defer release()
	run := rebuildRun{at: e.set.Now()}
	run.res, run.err = rb.Run(ctx, t, fs, snap, files, lake.IndexColumns(t))
	run.took = e.set.Now().Sub(run.at)
	if fresh, lerr := e.set.Lake.LoadTable(ctx, name); lerr == nil {
		t = fresh
	}
	e.obs.rebuilt(name, snap, t.Properties(), run)
}

// reserveRebuild takes the index rebuild's memory from the process budget (none without one),
// as a merge does: a stop ends the wait.
func (e *executor) reserveRebuild(ctx context.Context, bytes int64) (release func(), err error) {
	var reserve membudget.ReserveFunc
	if e.set.Reserve != nil {
		reserve = func(ctx context.Context, n int64) (func(), error) {
			return e.set.Reserve(ctx, membudget.LoopIndexRebuild, n)
		}
	}
	return membudget.ReserveForWork(ctx, e.set.Stop, reserve, bytes)
}

// deletes is the delete sweeper (made on first use).
func (e *executor) deletes() *sweep.Sweeper {
	if e.sweeper == nil {
		s := e.set
		e.sweeper = &sweep.Sweeper{Cfg: s.Cfg.Sweep, Lake: s.Lake, Metrics: s.Metrics.Deletes, Now: s.Now, Rewriter: e.filtered()}
		if p, ok := s.Publish.(sweep.Publisher); ok {
			e.sweeper.Publish = p
		}
	}
	return e.sweeper
}

// filtered runs the delete-task and retention rewrites.
func (e *executor) filtered() filtered.Rewriter {
	return filtered.Rewriter{Executor: e.rewriteExecutor(), RewriteMetrics: e.set.Metrics.Rewrite, Log: e.set.Log, OnFailure: e.readFailed}
}

// retention is the retention runner (made on first use).
func (e *executor) retention() *retention.Runner {
	if e.retainer == nil {
		s := e.set
		e.retainer = &retention.Runner{Cfg: s.Cfg.Retention, Lake: s.Lake, Metrics: s.Metrics.Retention, Now: s.Now, Rewriter: e.filtered()}
		if p, ok := s.Publish.(retention.Publisher); ok {
			e.retainer.Publish = p
		}
	}
	return e.retainer
}

// sweep runs the delete tasks of one table.
func (e *executor) sweep(ctx context.Context, name string) (sweep.Report, error) {
	rep, err := e.deletes().Sweep(ctx, name, sweep.Options{Apply: true})
	e.obs.swept(ctx, name, err)
	return rep, err
}

// publishPending updates the pending-deletion gauge and status of tables without sweeping them.
func (e *executor) publishPending(ctx context.Context, tables []string) {
	for _, name := range tables {
		e.obs.pendingRead(name, e.deletes().Pending(ctx, name))
	}
}

// forget drops what the executor learnt about a table this process no longer maintains: its
// failure counts, and the files retention read clean (the new owner reads them once).
func (e *executor) forget(name string) {
	if e.retainer != nil {
		e.retainer.Forget(name)
	}
	e.poison.prune(name, nil, e.set.Now())
	e.leased.forget(name)
}
