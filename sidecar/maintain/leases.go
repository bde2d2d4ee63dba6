package maintain

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/work"
)

// Leases is the owner's half of bin leases (docs/design/bin-leases.md): each pass offers its
// leasable bins through Owner instead of rewriting them here, and the results workers send are
// committed by OwnerCallbacks. nil (Maintainer.Leases) rewrites every bin here, as before.
type Leases struct {
	Owner *work.Owner
	Book  *work.Book
	// Workers is how many maintenance sidecars take bins now, this one included (gossip meta
	// wk); the pass's budgets are per worker (plan.Input.Workers). nil: one.
	Workers func() int
	// Offered, when set, is told after each pass's offer whether the book has bins on offer:
	// the process advertises them (gossip meta wo) at once, so other workers ask before the
	// owner wait hands the bins to the owner's own worker.
	Offered func(offering bool)
	// Forget, when set, is told of a table this process stopped maintaining, after its leases
	// were dropped (the observer forgets its gauges).
	Forget func(table string)
	// Usable, when set, says whether leases can travel now (gossip authenticated: no key
	// migration); while not, every bin is rewritten here, as without leases.
	Usable func() bool
}

// maxLeaseTries is how many leases of one bin may end without a commit (a worker killed, paused
// past its lease, or failing to merge it) before the owner rewrites the bin itself, where a
// failure is classified and its input set aside (poison.go) rather than passed from worker to
// worker for ever.
const maxLeaseTries = 2

// leasing is the executor's record of the bins it offered: the owner's own job of each (a result
// is committed with it, never with the job rebuilt from the lease), how often leases of each ended
// without a commit, and the results committed since the cycle last took them. The owner's commit
// goroutine and the cycle both use it.
type leasing struct {
	mu   sync.Mutex
	bins map[string]map[string]*leasedBin // table -> inputsKey -> bin
	done []leasedResult
	// ended counts, per table and input file, the leases over the file that ended without a
	// commit (the worker's merge failed, or the lease lapsed): per file, not per bin, since new
	// files change a hot partition's bins every pass.
	ended map[string]map[string]int
}

// leasedBin is one bin offered to workers.
type leasedBin struct {
	job rewrite.Job
	bin level.Bin
}

// leasedResult is a worker's result the owner committed (or tried to), for the cycle to learn
// from as it learns from its own rewrites: the rewrite rate, the failure bookkeeping and, after a
// commit, the index rebuild (which publishes into the observer, the cycle's).
type leasedResult struct {
	table string
	bin   level.Bin
	out   rewrite.Outcome
	took  time.Duration // the worker's merge
	at    time.Time
}

// LeaseEnded is work.OwnerConfig.Ended: a lease of this owner ended with outcome. A failed merge
// or a lapse counts against each of its inputs (leasing.ended); a commit clears nothing (its
// inputs are gone).
func (m *Maintainer) LeaseEnded(l work.Lease, outcome string) {
	if outcome != work.OutcomeFailed && outcome != work.EndLapsed {
		return
	}
	m.parts()
	x := &m.exec.leased
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.ended == nil {
		x.ended = map[string]map[string]int{}
	}
	t := x.ended[l.Table]
	if t == nil {
		t = map[string]int{}
		x.ended[l.Table] = t
	}
	for _, in := range l.Job.Inputs {
		t[in.Path]++
	}
}

// endedTries returns, for the bins of a pass, how often a lease over any of its inputs ended
// without a commit, and forgets the counts of files no longer live.
func (x *leasing) endedTries(table string, live map[string]lake.File) map[string]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	t := x.ended[table]
	for p := range t {
		if _, ok := live[p]; !ok {
			delete(t, p)
		}
	}
	return maps.Clone(t)
}

// inputsKey identifies a bin by its input paths (the lease book does the same).
func inputsKey(paths []string) string {
	paths = slices.Clone(paths)
	slices.Sort(paths)
	return strings.Join(paths, "\x00")
}

func jobKey(j work.Job) string {
	ps := make([]string, len(j.Inputs))
	for i, in := range j.Inputs {
		ps[i] = in.Path
	}
	return inputsKey(ps)
}

func binInputsKey(b level.Bin) string {
	ps := make([]string, len(b.Files))
	for i, f := range b.Files {
		ps[i] = f.Path
	}
	return inputsKey(ps)
}

// lookup is the owner's job of lease l's bin.
func (x *leasing) lookup(l work.Lease) (*leasedBin, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	b, ok := x.bins[l.Table][jobKey(l.Job)]
	return b, ok
}

// inFlight is table's recorded bins whose inputs are in flight (flying: the book's InFlight):
// leased, or their result being committed.
func (x *leasing) inFlight(table string, flying map[string]bool) map[string]*leasedBin {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]*leasedBin{}
	for k, b := range x.bins[table] {
		if len(b.bin.Files) > 0 && flying[b.bin.Files[0].Path] {
			out[k] = b
		}
	}
	return out
}

// forget drops what was recorded of a table this process no longer maintains.
func (x *leasing) forget(table string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.bins, table)
	delete(x.ended, table)
}

func (x *leasing) finished(r leasedResult) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.done = append(x.done, r)
}

func (x *leasing) takeDone() []leasedResult {
	x.mu.Lock()
	defer x.mu.Unlock()
	d := x.done
	x.done = nil
	return d
}

// offer offers v's leasable bins of a pass to workers and returns the bins to rewrite here: those
// that cannot be leased (rewrite.Leasable), that the book refused, or whose leases ended without a
// commit maxLeaseTries times. Bins backing off after a failure are neither offered nor run. Every
// pass offers, also an empty one: the book withdraws the unleased offers of the pass before.
func (e *executor) offer(v *view, bins []level.Bin, now time.Time, run *passRun) []level.Bin {
	x := e.set.Leases
	if x.Usable != nil && !x.Usable() {
		x.Owner.Offer(v.name, nil) // withdraw: nothing could take them now
		run.skipped = append(run.skipped, "bins not offered: gossip is not authenticated now (a key migration); rewritten here")
		return bins
	}
	tries := e.leased.endedTries(v.name, v.byPath)
	next := e.leased.inFlight(v.name, x.Book.InFlight(v.name)) // results of live and committing leases may still come
	var offers []work.Job
	var local []level.Bin
	for _, b := range bins {
		key := binKey(v.name, b)
		if until, ok := e.poison.backingOff(key, now); ok {
			run.skipped = append(run.skipped, fmt.Sprintf("%s bin of %d files in %s: backing off after a transient failure until %s",
				b.Kind, len(b.Files), b.Partition, until.UTC().Format(time.RFC3339)))
			continue
		}
		job, err := e.binJob(v, b)
		var wj work.Job
		if err == nil && binTries(b, tries) < maxLeaseTries {
			wj, err = rewrite.Leasable(job)
		}
		if err != nil || binTries(b, tries) >= maxLeaseTries {
			local = append(local, b)
			continue
		}
		k := jobKey(wj)
		if _, flying := next[k]; !flying {
			next[k] = &leasedBin{job: job, bin: b}
		}
		offers = append(offers, wj)
	}
	refused := x.Owner.Offer(v.name, offers)
	if x.Offered != nil {
		x.Offered(x.Book.Offering())
	}
	for _, r := range refused {
		k := jobKey(r.Job)
		lb := next[k]
		if errors.Is(r.Err, work.ErrLeased) || errors.Is(r.Err, work.ErrTwice) {
			// Leased meanwhile (an offer of the pass before, taken since this pass planned): its
			// record stays for the result.
			run.skipped = append(run.skipped, fmt.Sprintf("%s bin of %d files in %s: %v", lb.bin.Kind, len(lb.bin.Files), lb.bin.Partition, r.Err))
			continue
		}
		delete(next, k)
		local = append(local, lb.bin)
	}
	for _, o := range x.Book.Offers(v.name) {
		if lb, ok := next[jobKey(o.Job)]; ok {
			b := lb.bin
			run.bins = append(run.bins, BinReport{Kind: b.Kind.String(), Partition: b.Partition, Files: len(b.Files), Bytes: b.EstimatedBytes,
				Reason: b.Reason, Result: "offered to workers"})
			run.offered++
		}
	}
	e.leased.mu.Lock()
	if e.leased.bins == nil {
		e.leased.bins = map[string]map[string]*leasedBin{}
	}
	e.leased.bins[v.name] = next
	e.leased.mu.Unlock()
	return local
}

// binTries is the most leases that ended without a commit over any one input of b.
func binTries(b level.Bin, tries map[string]int) int {
	n := 0
	for _, f := range b.Files {
		n = max(n, tries[f.Path])
	}
	return n
}

// absorbLeased learns from the results committed since the last cycle as from the cycle's own
// rewrites: a commit feeds the rewrite rate and clears the bin's failures, a failed commit backs
// the bin off (conflicts need nothing: the next pass plans fresh files).
func (e *executor) absorbLeased(ctx context.Context) {
	if e.set.Leases == nil {
		return
	}
	for _, r := range e.leased.takeDone() {
		key := binKey(r.table, r.bin)
		switch r.out.Status {
		case rewrite.Committed:
			e.speed.rate.Add(max(r.bin.EstimatedBytes-r.out.Merge.SplicedBytes, 1), r.took)
			e.poison.succeeded(r.table, key, r.bin)
			e.rebuildLeased(ctx, r.out)
		case rewrite.Failed:
			e.obs.error("rewrite", r.table, r.out.Err)
			e.failed(ctx, r.table, key, r.bin, r.out, r.at)
		}
	}
	e.set.Leases.Book.SetRate(e.speed.rate)
}

// rebuildLeased runs the index rebuild over a committed leased result's outputs, as
// AfterCommit does for a local rewrite.
func (e *executor) rebuildLeased(ctx context.Context, out rewrite.Outcome) {
	if !e.set.Cfg.IndexRebuild || out.Table == nil || len(out.Merge.Outputs) == 0 {
		return
	}
	fsys, err := out.Table.FS(ctx)
	if err != nil {
		e.obs.error("index-rebuild", tableNameOf(out.Table), err)
		return
	}
	if wfs, ok := fsys.(icebergio.WriteFileIO); ok {
		e.rebuildIndexes(ctx, out.Table, wfs, out.SnapshotID, out.Merge.Outputs)
	}
}

func tableNameOf(t *table.Table) string { return t.Identifier()[len(t.Identifier())-1] }

// OwnerCallbacks are the owner's check, commit and remove of workers' results
// (work.OwnerConfig's Check, Commit and Remove): each result is judged and committed with the
// owner's own job of the bin, on the table's newest head, through the one rewrite executor
// (its commit takes the table's lock in lake, shared with group commit and this loop's
// rewrites). The commit is counted and logged as every rewrite is; the cycle learns from it.
func (m *Maintainer) OwnerCallbacks() (check func(context.Context, work.Lease, [][]byte) error,
	commit func(context.Context, work.Lease, work.WorkerMessage) work.CommitResult,
	remove func(context.Context, work.Lease, [][]byte)) {
	m.parts()
	return m.exec.checkLeased, m.exec.commitLeased, m.exec.removeLeased
}

// decodeLeased is l's bin as this owner planned it, the table's newest head and files decoded
// against it.
func (e *executor) decodeLeased(ctx context.Context, l work.Lease, files [][]byte) (*leasedBin, *table.Table, []iceberg.DataFile, error) {
	lb, ok := e.leased.lookup(l)
	if !ok {
		return nil, nil, nil, fmt.Errorf("lease %s of table %s: no bin of this owner's has its inputs", l.ID, l.Table)
	}
	t, err := e.set.Lake.LoadTable(ctx, l.Table)
	if err != nil {
		return nil, nil, nil, err
	}
	dfs, err := rewrite.DecodeOutputs(t, files)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("lease %s of table %s: %w", l.ID, l.Table, err)
	}
	return lb, t, dfs, nil
}

func (e *executor) checkLeased(ctx context.Context, l work.Lease, files [][]byte) error {
	lb, t, dfs, err := e.decodeLeased(ctx, l, files)
	if err != nil {
		return err
	}
	return rewrite.CheckOutputs(t, lb.job, dfs)
}

func (e *executor) commitLeased(ctx context.Context, l work.Lease, m work.WorkerMessage) work.CommitResult {
	// The lease's age bound holds when the commit starts, not only when the result arrived: a
	// result queued behind slow commits could otherwise be committed past orphan gc's floor,
	// after gc removed its outputs. (The owner's clock is the real one: lease times are.)
	if age := time.Since(l.Taken); e.set.Cfg.RewriteMaxAge > 0 && age > e.set.Cfg.RewriteMaxAge {
		return work.CommitResult{Outcome: work.OutcomeFailed,
			Err: fmt.Errorf("lease %s of table %s is %s old at its commit, past the %s a rewrite may take (orphan gc's floor): not committed, outputs removed",
				l.ID, l.Table, age.Round(time.Second), e.set.Cfg.RewriteMaxAge)}
	}
	lb, t, dfs, err := e.decodeLeased(ctx, l, m.Files)
	if err != nil {
		return work.CommitResult{Outcome: work.OutcomeFailed, Err: err}
	}
	took := time.Duration(m.TookMs) * time.Millisecond
	x := e.rewriteExecutor()
	x.AfterCommit = nil // the index rebuild runs in the cycle (absorbLeased): it publishes into the observer
	out := x.Commit(ctx, t, lb.job, rewrite.Received(dfs,
		rewrite.Stats{BytesRead: m.BytesRead, BytesWritten: m.BytesWritten, SplicedBytes: m.SplicedBytes, TookMS: m.TookMs}))
	e.obs.rewrite(l.Table, lb.job, out)
	e.leased.finished(leasedResult{table: l.Table, bin: lb.bin, out: out, took: took, at: e.set.Now()})
	return commitResult(out)
}

func (e *executor) removeLeased(ctx context.Context, l work.Lease, files [][]byte) {
	lb, t, dfs, err := e.decodeLeased(ctx, l, files)
	if err == nil {
		_, err = rewrite.RemoveRefused(ctx, t, lb.job, dfs)
	}
	if err != nil {
		e.set.Log.Warn("outputs of a refused bin-lease result not removed; orphan gc removes them",
			zap.String("table", l.Table), zap.String("lease", l.ID), zap.String("worker", l.Worker), zap.Error(err))
	}
}

// commitResult is a rewrite outcome as the owner answers it.
func commitResult(out rewrite.Outcome) work.CommitResult {
	switch out.Status {
	case rewrite.Committed:
		return work.CommitResult{Outcome: work.OutcomeCommitted}
	case rewrite.Conflict:
		return work.CommitResult{Outcome: work.OutcomeConflict, Err: out.Err, Removed: true}
	case rewrite.MaybeCommitted:
		return work.CommitResult{Outcome: work.OutcomeMaybeCommitted, Err: out.Err}
	}
	// A failed commit removed the outputs, unless it found them live already (then none may be).
	return work.CommitResult{Outcome: work.OutcomeFailed, Err: out.Err, Removed: true}
}

// MergeLeased is a worker's merge of a leased bin (work.WorkerConfig.Merge): the job the lease
// carries, checked against this process's view of the table (rewrite.FromLease), merged through
// the one rewrite executor with this process's merge settings and memory budget, and its outputs
// encoded for the owner. The merge ends at the lease's age bound (Config.RewriteMaxAge), past
// which the owner refuses it. merging is called once the merge holds its memory.
func (m *Maintainer) MergeLeased(ctx context.Context, g work.Grant, merging func()) work.Merge {
	m.parts()
	if m.Cfg.RewriteMaxAge > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, m.Cfg.RewriteMaxAge)
		defer cancel()
	}
	t, err := m.Lake.LoadTable(ctx, g.Table)
	if err != nil {
		return work.Merge{Err: err}
	}
	job, err := rewrite.FromLease(t, g.Job)
	if err != nil {
		return work.Merge{Err: err}
	}
	x := m.exec.rewriteExecutor()
	x.AfterCommit = nil // the owner commits, and rebuilds the indexes
	x.Reserve = reserveThen(x.Reserve, merging)
	x.Loop = membudget.LoopLeasedMerge // the worker's asks count these merges themselves
	merged, out := x.Merge(ctx, t, job)
	if out.Status != rewrite.Uncommitted {
		if out.Err == nil {
			out.Err = fmt.Errorf("merge of lease %s: %s", g.ID, out.Status)
		}
		return work.Merge{Err: out.Err}
	}
	files, err := rewrite.EncodeOutputs(t, merged)
	if err != nil {
		_, _ = merged.Remove()
		return work.Merge{Err: err}
	}
	res := merged.Result
	// The owner logs the commit; the path and why it was taken are this worker's own choice
	// (its budget and fan-in), so they are logged here.
	m.Log.Info("merged a leased bin", zap.String("table", g.Table), zap.String("lease", g.ID), zap.String("partition", g.Job.Partition),
		zap.Int("inputs", len(g.Job.Inputs)), zap.String("merge_path", string(res.Path)), zap.String("merge_reason", res.Reason),
		zap.Int64("bytes_read", res.BytesRead), zap.Int64("bytes_written", res.BytesWritten), zap.Duration("took", res.Took))
	return work.Merge{Files: files, BytesRead: res.BytesRead, BytesWritten: res.BytesWritten, SplicedBytes: res.SplicedBytes, Took: res.Took,
		Discard: func(context.Context) {
			if orphans, err := merged.Remove(); err != nil {
				m.Log.Warn("outputs of a leased merge not removed; orphan gc removes them", zap.String("table", g.Table),
					zap.String("lease", g.ID), zap.Strings("orphans", orphans), zap.Error(err))
			}
		}}
}

// reserveThen is reserve (nil: takes no memory) that calls held once it granted the memory: the
// worker's bin stops waiting for memory and merges.
func reserveThen(reserve func(ctx context.Context, what string, bytes int64) (func(), error), held func()) func(ctx context.Context, what string, bytes int64) (func(), error) {
	return func(ctx context.Context, what string, bytes int64) (func(), error) {
		release := func() {}
		if reserve != nil {
			var err error
			if release, err = reserve(ctx, what, bytes); err != nil {
				return nil, err
			}
		}
		held()
		return release, nil
	}
}
