// Package rewrite is siglake's one rewrite executor: given a table, the live files to replace and
// how to write their rows, it merges them (merge.Rewrite picks the path), stages the replace on the
// table's newest head (lake.CommitReplace) and returns an Outcome. Maintenance bins (aggregate
// folding among them), delete tasks and retention run through it. It decides nothing (the planner
// does) and observes nothing itself: Observer turns outcomes into metrics and log lines.
package rewrite

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/objstore"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/membudget"
)

// Job is one rewrite: which live files of a table to replace and how to write their rows.
type Job struct {
	// Kind names the work for metrics, logs and the snapshot summary: the planner's bin kinds
	// (l0, l1, depth, ...) or delete-task.
	Kind      string
	Partition string
	// Inputs are the live files to replace, as the caller listed them.
	Inputs []lake.File
	// Generation is the outputs' generation: max input generation + 1 for a level or overlap
	// rewrite, 0 for a delete task (promise 5).
	Generation int
	// Dir is where outputs go (a partition's data directory).
	Dir string
	// TargetFileBytes splits outputs (only where the timestamp changes) at this size.
	TargetFileBytes int64
	// SplitSparse also cuts outputs where the bin's row density falls, read from the inputs'
	// time-bucket footers (merge.WriterOptions.SplitSparse); 0 cuts by size only.
	SplitSparse float64
	// Metadata is the search metadata the outputs carry.
	Metadata merge.MetadataOptions
	// RowFilter drops the rows it matches (delete tasks); nil keeps every row (promise 2).
	RowFilter *rowfilter.Filter
	// DeleteTask marks a delete-task rewrite (merge.RewriteOptions.DeleteTask).
	DeleteTask bool
	// Fold folds the rows of a rollup table (merge.RewriteOptions.Fold); FoldTier is the tier
	// every output row reaches, recorded in the outputs' names (merge.FoldedFileName).
	Fold     *folding.Fold
	FoldTier int
	// Props adds snapshot summary properties once the merge is known (nil: none beyond kind, merge
	// path and input count, which every rewrite records).
	Props func(res merge.RewriteResult) iceberg.Properties
	// Stage adds the caller's own changes to the replace's commit, on the head it commits on (a
	// delete task's progress); nil: none.
	Stage func(res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error
	// Reason is the planner's printable reason, for logs.
	Reason string
}

// Status is how a rewrite ended.
type Status string

const (
	// Committed: the replace committed; the inputs are gone from the table, the outputs live.
	Committed Status = "committed"
	// Conflict: the inputs were replaced first (another owner, a delete task) or the head kept
	// moving through every attempt. Nothing was committed and the outputs were removed; the next
	// cycle replans from fresh metadata.
	Conflict Status = "conflict"
	// Failed: the merge, the storage or the commit failed and nothing was committed; the outputs
	// written so far were removed.
	Failed Status = "failed"
	// MaybeCommitted: the commit's outcome is unknown (the response was lost). The outputs are
	// kept, since the table may reference them; gc removes them if it does not.
	MaybeCommitted Status = "maybe_committed"
	// Uncommitted: Executor.Merge wrote the outputs and committed nothing (Commit's part).
	Uncommitted Status = "uncommitted"
	// Cancelled: the process was asked to stop (Executor.Stop) or shut down before the merge
	// started, while the rewrite waited for its memory share or before it asked: nothing was
	// read or written. A shutdown is no failure: it is neither counted nor backed off, and the
	// next owner plans the bin again.
	Cancelled Status = "cancelled"
)

// ErrConflict marks an outcome that lost to a concurrent change of its input files: nothing was
// committed and the outputs were removed; the next cycle replans from fresh metadata.
var ErrConflict = errors.New("input files changed concurrently")

// Error is the outcome as an error: nil when committed, wrapping ErrConflict when it lost a race.
func (o Outcome) Error() error {
	switch o.Status {
	case Committed:
		return nil
	case Conflict:
		return fmt.Errorf("%w: %v", ErrConflict, o.Err)
	}
	return o.Err
}

// Outcome is what one Run, Merge or Commit did.
type Outcome struct {
	Status Status
	// Err says why for every status but Committed.
	Err error
	// Class is what kind of failure a Failed rewrite met, and Input the input file it blames (a
	// permanent failure; "" for a transient one).
	Class Class
	Input string
	// Merge is the merge's result: path, outputs, bytes read and written, rows deleted.
	Merge merge.RewriteResult
	// Table is the table after the commit (Committed only).
	Table *table.Table
	// SnapshotID is the replace's snapshot (Committed only).
	SnapshotID int64
	// Took is the wall time of merge and commit (not of AfterCommit).
	Took time.Duration
	// Cost is the object-store requests of the table while the rewrite ran (it includes
	// concurrent work on the same table, such as its drain).
	Cost objstore.Cost
	// Orphans are outputs of an uncommitted rewrite that could not be removed (left for gc), and
	// OrphanErr says why.
	Orphans   []string
	OrphanErr error
}

// Executor runs rewrites against one lake with the process's merge settings.
type Executor struct {
	Lake *lake.Lake
	// MemoryBudget, ChunkRows and MaxFanIn are the merges' bounds (merge.RewriteOptions).
	MemoryBudget int64
	// Reserve, when set, takes the merge's memory budget from the process budget
	// (sidecar/membudget) for the time of the merge, under the name what, and waits while it is
	// spent. nil takes none.
	Reserve func(ctx context.Context, what string, bytes int64) (release func(), err error)
	// Loop is the name Reserve takes merges' memory under (sidecar/membudget); "": LoopMerge.
	// A worker of leased bins merges under LoopLeasedMerge, which its asks count themselves.
	Loop string
	// Stop, when done (SIGTERM), makes Run start no merge: a rewrite whose merge has not started
	// ends Cancelled, its wait for memory included. Run's own context outlives it by the shutdown
	// timeout, for the merge and commit in flight; a merge started after Stop would only be cut
	// by that timeout. nil: never.
	Stop      context.Context
	ChunkRows int64
	MaxFanIn  int
	// SpliceMinRows is the smallest row group the splice path copies (merge.RewriteOptions).
	SpliceMinRows int64
	// SpliceUnverified skips the splice's page checks (merge.RewriteOptions).
	SpliceUnverified bool
	// MaxAge, when above 0, is the longest a merge may take and still be committed: its outputs
	// are unreferenced until the commit, and orphan gc may remove them past its floor, so a merge
	// that took longer removes them and fails (a leased bin has the same bound on its lease, work.Config.MaxAge).
	MaxAge time.Duration
	// MergeMetrics counts merges by path; nil counts nothing.
	MergeMetrics *instrument.MergeMetrics
	Now          func() time.Time
	// AfterCommit, when set, runs after each committed rewrite with its outputs (the Puffin index
	// rebuild); it cannot fail the rewrite.
	AfterCommit func(ctx context.Context, t *table.Table, fs icebergio.WriteFileIO, snap int64, outs []merge.Output)
}

// Run merges job's inputs of t (the table as the caller planned on) and commits one replace of
// exactly those files: Merge then Commit, in one process.
func (e *Executor) Run(ctx context.Context, t *table.Table, job Job) Outcome {
	start := e.Now()
	name := tableName(t)
	cost0 := objstore.CostOf(name)
	m, out := e.merge(ctx, t, job)
	if out.Status == Uncommitted {
		out = e.commit(ctx, t, name, job, m)
	}
	return e.finish(ctx, out, m.fs, start, cost0, name)
}

// Merge merges job's inputs of t into outputs in job.Dir and commits nothing: Uncommitted with
// the outputs (a worker's half of a leased bin, design bin-leases section 3). Any other status
// wrote nothing that stays: a failed merge removed its outputs.
func (e *Executor) Merge(ctx context.Context, t *table.Table, job Job) (Merged, Outcome) {
	start := e.Now()
	name := tableName(t)
	cost0 := objstore.CostOf(name)
	m, out := e.merge(ctx, t, job)
	return m, e.finish(ctx, out, nil, start, cost0, name)
}

// Commit commits one replace of exactly job's inputs by m's outputs on t's newest head (the
// owner's half of a leased bin). job is the caller's own, its inputs live files as listed (with
// their data files), never one rebuilt from a lease (FromLease). Outputs that arrived from another process
// (Received) are checked first (CheckOutputs); outputs that fail it are not removed, since they
// may not be this job's. Otherwise a conflict or a failed commit removes the outputs, an unknown
// outcome keeps them, and AfterCommit runs after a commit.
func (e *Executor) Commit(ctx context.Context, t *table.Table, job Job, m Merged) Outcome {
	start := e.Now()
	name := tableName(t)
	cost0 := objstore.CostOf(name)
	if m.received {
		if err := CheckOutputs(t, job, m.files); err != nil {
			return e.finish(ctx, Outcome{Status: Failed, Err: fmt.Errorf("commit outputs of partition %s: %w", job.Partition, err), Merge: m.Result},
				nil, start, cost0, name)
		}
	}
	return e.finish(ctx, e.commit(ctx, t, name, job, m), m.fs, start, cost0, name)
}

// finish times an outcome from start (merge and commit only: the index rebuild that may follow
// is not the rewrite's cost), classifies a failure and runs AfterCommit after a commit. fs is the
// FileIO the outputs were written with, nil: t's.
func (e *Executor) finish(ctx context.Context, out Outcome, fs icebergio.WriteFileIO, start time.Time, cost0 objstore.Cost, name string) Outcome {
	out.Took, out.Cost = e.Now().Sub(start), objstore.CostOf(name).Sub(cost0)
	if out.Status == Failed {
		out.Class, out.Input = Classify(out.Err)
	}
	if out.Status != Committed || e.AfterCommit == nil || len(out.Merge.Outputs) == 0 {
		return out
	}
	if fs == nil {
		w, err := writeFS(ctx, out.Table)
		if err != nil {
			return out // the rebuild cannot fail the rewrite; gc and the next rebuild catch up
		}
		fs = w
	}
	e.AfterCommit(ctx, out.Table, fs, out.SnapshotID, out.Merge.Outputs)
	return out
}

func tableName(t *table.Table) string { return t.Identifier()[len(t.Identifier())-1] }

// writeFS is t's FileIO, which must write.
func writeFS(ctx context.Context, t *table.Table) (icebergio.WriteFileIO, error) {
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, err
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("FileIO of %s cannot write", t.Location())
	}
	return wfs, nil
}

// merge reserves the merge's memory, merges and describes the outputs as data files of t; on
// any failure after writing, the outputs are removed.
func (e *Executor) merge(ctx context.Context, t *table.Table, job Job) (Merged, Outcome) {
	failed := func(err error) (Merged, Outcome) { return Merged{}, Outcome{Status: Failed, Err: err} }
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return failed(err)
	}
	wfs, err := writeFS(ctx, t)
	if err != nil {
		return failed(err)
	}
	inputs := make([]merge.Input, len(job.Inputs))
	for i, f := range job.Inputs {
		inputs[i] = merge.Input{Path: f.Path, Size: f.Size, Rows: f.Rows, Generation: f.Generation}
	}
	newPath, latePath := outputNames(job)
	cancelled := func(err error) (Merged, Outcome) {
		return Merged{}, Outcome{Status: Cancelled, Err: fmt.Errorf("merge %d files of partition %s: %w", len(job.Inputs), job.Partition, err)}
	}
	// The merge keeps to its budget by the path it picks; the commit and the index rebuild after
	// it hold no decoded rows, so the share goes back when the merge returns.
	budget := e.MemoryBudget
	if budget <= 0 {
		budget = merge.DefaultMemoryBudget()
	}
	var reserve membudget.ReserveFunc
	if e.Reserve != nil {
		loop := cmp.Or(e.Loop, membudget.LoopMerge)
		reserve = func(ctx context.Context, n int64) (func(), error) { return e.Reserve(ctx, loop, n) }
	}
	release, err := membudget.ReserveForWork(ctx, e.Stop, reserve, budget)
	if membudget.IsStopping(ctx, err) {
		return cancelled(err)
	}
	if err != nil {
		return failed(fmt.Errorf("merge %d files of partition %s: %w", len(job.Inputs), job.Partition, err))
	}
	res, err := merge.Rewrite(ctx, wfs, inputs, sc, newPath,
		merge.RewriteOptions{
			WriterOptions: merge.WriterOptions{TimestampColumn: lake.TimestampColumn, TargetFileBytes: job.TargetFileBytes, SplitSparse: job.SplitSparse, LatePath: latePath, Metadata: job.Metadata},
			MemoryBudget:  e.MemoryBudget, ChunkRows: e.ChunkRows, MaxFanIn: e.MaxFanIn, SpliceMinRows: e.SpliceMinRows, SpliceUnverified: e.SpliceUnverified,
			DeleteTask: job.DeleteTask, RowFilter: job.RowFilter, Fold: job.Fold,
		})
	release()
	if err != nil {
		// merge.Rewrite removes what it wrote before it failed.
		return Merged{fs: wfs}, Outcome{Status: Failed, Err: fmt.Errorf("merge %d files of partition %s: %w", len(inputs), job.Partition, err), Merge: res}
	}
	e.MergeMetrics.Rewrite(res) // a completed merge counts whatever its commit does
	m := Merged{Result: res, fs: wfs}
	if e.MaxAge > 0 && res.Took > e.MaxAge {
		return m, m.discard(Failed, fmt.Errorf("merge %d files of partition %s took %s, longer than a rewrite may (%s, under orphan gc's floor): outputs removed, not committed",
			len(inputs), job.Partition, res.Took.Round(time.Second), e.MaxAge))
	}
	if m.files, err = lake.DataFiles(t, res.Outputs); err != nil {
		return m, m.discard(Failed, err)
	}
	return m, Outcome{Status: Uncommitted, Merge: res}
}

// outputNames are the merge's output paths for job: late files rewritten stay late, a fold's
// outputs record its tier.
func outputNames(job Job) (newPath, latePath func(int) string) {
	newPath = func(int) string { return job.Dir + "/" + merge.DataFileName(job.Generation) }
	latePath = func(int) string { return job.Dir + "/" + merge.LateFileName(job.Generation) }
	if lateInputs(job.Inputs) {
		// Late files rewritten (merged, or by a delete task or retention) stay late: the on-time
		// stream never gets back a file whose range reaches minutes behind its rows.
		newPath = latePath
	}
	if job.Fold != nil {
		newPath = func(int) string { return job.Dir + "/" + merge.FoldedFileName(job.Generation, job.FoldTier) }
		latePath = nil
	}
	return newPath, latePath
}

// commit stages and commits the replace of job's inputs by m's outputs.
func (e *Executor) commit(ctx context.Context, t *table.Table, name string, job Job, m Merged) Outcome {
	res := m.Result
	if m.fs == nil { // outputs received from a worker: removed, if they must be, with t's FileIO
		fs, err := writeFS(ctx, t)
		if err != nil {
			return Outcome{Status: Failed, Err: fmt.Errorf("commit rewrite: %w", err), Merge: res, Orphans: m.paths(), OrphanErr: err}
		}
		m.fs = fs
	}
	old := make([]iceberg.DataFile, len(job.Inputs))
	for i, f := range job.Inputs {
		if f.DataFile == nil {
			return m.discard(Failed, fmt.Errorf("commit rewrite: input %s has no data file: commit the planner's job (live files as listed), not one rebuilt from a lease", f.Path))
		}
		old[i] = f.DataFile
	}
	props := iceberg.Properties{tableprops.SumRewriteKind: job.Kind, tableprops.SumRewritePath: string(res.Path),
		tableprops.SumRewriteInputs: strconv.Itoa(len(job.Inputs))}
	if res.Fold != nil {
		props[tableprops.SumFoldRowsIn] = strconv.FormatInt(res.Fold.RowsIn, 10)
		props[tableprops.SumFoldRowsOut] = strconv.FormatInt(res.Fold.RowsOut, 10)
	}
	if job.Props != nil {
		for k, v := range job.Props(res) {
			props[k] = v
		}
	}
	var stage func(cur *table.Table, txn *table.Transaction) error
	if job.Stage != nil {
		stage = func(cur *table.Table, txn *table.Transaction) error { return job.Stage(res, cur, txn) }
	}
	cr, err := e.Lake.CommitReplace(ctx, name, old, m.files, props, stage)
	switch {
	case err == nil:
	case errors.Is(err, lake.ErrInputsGone) || lake.IsConflict(err):
		return m.discard(Conflict, err)
	case outputsLive(err):
		// Only outputs received from a worker can be live already (a local merge names fresh
		// files): removing them would lose the rows the table holds in them.
		return Outcome{Status: Failed, Err: fmt.Errorf("commit rewrite: an output is already live in the table; no output removed: %w", err), Merge: res}
	case !cr.MaybeCommitted:
		return m.discard(Failed, fmt.Errorf("commit rewrite: %w", err))
	default:
		return Outcome{Status: MaybeCommitted, Err: fmt.Errorf("commit rewrite: %w", err), Merge: res}
	}
	return Outcome{Status: Committed, Merge: res, Table: cr.Table, SnapshotID: cr.Table.CurrentSnapshot().SnapshotID}
}

// outputsLive reports whether a replace was refused because an added file is live already
// (iceberg-go's staging error; lake has no sentinel for it).
func outputsLive(err error) bool { return strings.Contains(err.Error(), "already referenced by table") }

// lateInputs reports whether every input is a late-stream file (merge.ParseLate).
func lateInputs(fs []lake.File) bool {
	for _, f := range fs {
		if !merge.ParseLate(f.Path) {
			return false
		}
	}
	return len(fs) > 0
}
