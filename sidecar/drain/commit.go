package drain

import (
	"context"
	"errors"
	"fmt"
	"go.uber.org/zap"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/drain/handoff"
	"github.com/siglake/siglake/sidecar/drain/marker"
	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/objstore"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/rows"
)

// batchCommit is one batch on its way through the exactly-once protocol: each step of batchSteps
// reads what the steps before it added and adds its own. What the batch did, for the observer,
// is in out.
type batchCommit struct {
	b     batches.Batch
	at    handoff.Progress // the stream's progress a group committer's watermark takes
	epoch uint64           // the stream's claim epoch (claims on)
	share int64            // the batch's share of the memory budget (fitBudget)
	// release gives the batch's memory share back (idempotent): after the write, since the
	// commit and its retries hold no rows.
	release func()
	// undo runs when the batch returns, last first: end the claim's batch, give the share back,
	// release the decoded segments, remove the in-flight marker.
	undo    []func()
	decoded []*localwal.Segment // every decoded segment (Release is idempotent)
	segs    []loaded            // the segments still in the batch, in order
	stream  string
	table   *table.Table
	flight  marker.Marker
	outputs []merge.Output
	files   []iceberg.DataFile
	rows    int64
	out     BatchOutcome
}

// loaded is a decoded segment of a batch.
type loaded struct {
	info localwal.SegmentInfo
	seg  *localwal.Segment
}

// batchSteps is the exactly-once protocol of one batch, in order. A step returns false to end the
// batch: it failed (out.Stage and out.Err say where and why), the process is stopping, or no
// segment is left to commit.
var batchSteps = []func(*Drain, context.Context, *batchCommit) bool{
	(*Drain).holdClaim,      // claims on: the stream stays this process's while the batch runs
	(*Drain).reserveMemory,  // the batch's share of the memory budget; oversize segments quarantined
	(*Drain).decode,         // read the segments; a bad one is quarantined, the rest go on
	(*Drain).ensureTable,    // the table exists and holds every column; a misfit is quarantined
	(*Drain).dropCommitted,  // segments an earlier commit already holds are removed
	(*Drain).write,          // generation-0 Parquet, one sorted file per day partition
	(*Drain).commit,         // ONE commit: the files and the stream mark together
	(*Drain).removeSegments, // only now may the segments go
}

// commitBatch runs the exactly-once protocol for one batch and returns what it did; observe turns
// that into metrics, status and log lines.
func (d *Drain) commitBatch(ctx context.Context, b batches.Batch, at handoff.Progress) BatchOutcome {
	start := d.Now()
	cost0 := objstore.CostOf(b.Table) // includes concurrent work on the same table (its rewrites)
	c := &batchCommit{b: b, at: at, release: func() {}, out: BatchOutcome{Table: b.Table, Dir: b.Dir}}
	for _, step := range batchSteps {
		if !step(d, ctx, c) {
			break
		}
	}
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
	if c.out.Err != nil {
		d.forgetTable(b.Table)
	}
	c.out.Took, c.out.Cost = d.Now().Sub(start), objstore.CostOf(b.Table).Sub(cost0)
	return c.out
}

// fail ends the batch at stage (counted in siglake_drain_errors_total unless "").
func (c *batchCommit) fail(stage string, err error) bool {
	c.out.Stage, c.out.Err = stage, err
	return false
}

// notClaimed ends a batch whose stream's claim is not (or no longer) validly held.
func (c *batchCommit) notClaimed(stream string) bool {
	c.out.Fenced = true
	return c.fail("", fmt.Errorf("stream %s: %w", stream, errNotClaimed))
}

// quarantine moves one of the batch's segments to quarantine; the observer records it.
func (c *batchCommit) quarantine(d *Drain, info localwal.SegmentInfo, reason string, cause error) {
	c.out.Quarantines = append(c.out.Quarantines, d.quarantine(c.b.Dir, info, reason, cause))
}

// holdClaim keeps the stream's claim from being released while the batch is in flight (claims
// on); the commit step fences the commit itself.
func (d *Drain) holdClaim(_ context.Context, c *batchCommit) bool {
	if d.Claims == nil {
		return true
	}
	stream := filepath.Base(c.b.Dir)
	epoch, ok := d.Claims.Begin(stream)
	if !ok {
		return c.notClaimed(stream)
	}
	c.undo = append(c.undo, func() { d.Claims.End(stream) })
	c.epoch, c.out.ClaimEpoch, c.out.StreamDir = epoch, epoch, stream
	return true
}

// reserveMemory cuts the batch to what the memory budget holds and takes its share. A stop ends
// the wait: the segments stay for the next start, and nothing failed.
func (d *Drain) reserveMemory(ctx context.Context, c *batchCommit) bool {
	d.fitBudget(c)
	if len(c.b.Segs) == 0 {
		return false
	}
	release, err := membudget.ReserveForWork(ctx, d.Stop, d.Reserve, c.share)
	if membudget.IsStopping(ctx, err) {
		c.out.Err, c.out.shutdown = err, true
		return false
	}
	if err != nil {
		return c.fail("", err)
	}
	c.release = sync.OnceFunc(release)
	c.undo = append(c.undo, c.release, func() {
		for _, s := range c.decoded {
			s.Release()
		}
	})
	return true
}

// decode reads the batch's segments. A bad segment is quarantined and the rest of the batch goes
// on; an unreadable one (I/O) fails the batch, to be retried.
func (d *Drain) decode(_ context.Context, c *batchCommit) bool {
	for _, info := range c.b.Segs {
		opts := localwal.ReadOptions{Mem: d.Mem, MaxFileBytes: d.Cfg.MaxSegmentBytes}
		if d.MemoryLimit > 0 {
			// Without it the cap is 64 MiB + 64 x the file size: gigabytes at the size limit.
			opts.MaxDecodedBytes = c.share
		}
		seg, err := localwal.ReadAll(info.Path, opts)
		var se *localwal.SegmentError
		if errors.As(err, &se) && se.Reason != localwal.ReasonIO {
			reason := se.Reason
			if errors.Is(err, localwal.ErrDecodeBudget) && d.MemoryLimit > 0 {
				reason = localwal.ReasonOversize
				err = fmt.Errorf("%w (the batch's share of the process memory budget, --memory-budget-bytes / SIGLAKE_MEMORY_BUDGET_BYTES)", err)
			}
			c.quarantine(d, info, reason, err)
			continue
		}
		if err != nil {
			return c.fail("read", fmt.Errorf("read segment %s: %w", info.Path, err))
		}
		c.decoded = append(c.decoded, seg)
		if err := d.streamMismatch(c, seg); err != nil {
			seg.Release()
			c.quarantine(d, info, localwal.ReasonBadHeader, err)
			continue
		}
		c.segs = append(c.segs, loaded{info, seg})
	}
	if len(c.segs) == 0 {
		return false
	}
	c.stream = c.segs[0].seg.Header.Stream
	c.out.Stream = c.stream
	return true
}

// streamMismatch says why seg cannot join the batch's stream: one batch commits one stream's mark.
func (d *Drain) streamMismatch(c *batchCommit, seg *localwal.Segment) error {
	// With claims the directory name is the claim key: a stream written under another name
	// could be drained by two claim holders at once (two directories, one mark).
	if dir := filepath.Base(c.b.Dir); d.Claims != nil && seg.Header.Stream != dir {
		return fmt.Errorf("stream %q in the stream directory %q: with catalog claims each stream directory is named by its stream", seg.Header.Stream, dir)
	}
	if len(c.segs) > 0 && seg.Header.Stream != c.segs[0].seg.Header.Stream {
		return fmt.Errorf("stream %q differs from stream %q of the other segments in this WAL dir", seg.Header.Stream, c.segs[0].seg.Header.Stream)
	}
	return nil
}

// ensureTable makes sure the table exists and holds every column (tableFor: with a group committer
// from the table cache); a segment whose types conflict with it is quarantined. A misfit found on
// a cached table is checked again on the current one: a segment is never quarantined for a schema
// another writer has already changed.
func (d *Drain) ensureTable(ctx context.Context, c *batchCommit) bool {
	kept := c.segs[:0]
	for _, l := range c.segs {
		misfit, cached, ok := d.fitSegment(ctx, c, l)
		if ok && misfit != nil && cached {
			d.forgetTable(c.b.Table)
			misfit, _, ok = d.fitSegment(ctx, c, l)
		}
		if !ok {
			return false
		}
		if misfit != nil {
			l.seg.Release()
			c.quarantine(d, l.info, metrics.ReasonIncompatibleSchema, misfit)
			continue
		}
		kept = append(kept, l)
	}
	c.segs = kept
	return len(c.segs) > 0
}

// fitSegment sets c.table to the table l goes into, or says why l cannot go in (misfit: quarantine
// it); cached: that was decided on a cached table. !ok: the batch failed.
func (d *Drain) fitSegment(ctx context.Context, c *batchCommit, l loaded) (misfit error, cached, ok bool) {
	nt, cached, err := d.tableFor(ctx, c.b.Table, rows.TableSchema(l.seg.Schema, lake.TimestampColumn))
	var schemaErr *lake.SchemaError
	if errors.As(err, &schemaErr) {
		return err, false, true
	}
	if err != nil {
		return nil, false, c.fail("table", err)
	}
	sc, err := lake.ArrowSchema(nt)
	if err != nil {
		return nil, false, c.fail("", err)
	}
	if err := conforms(sc, l.seg, d.Mem); err != nil {
		return err, cached, true
	}
	c.table = nt
	return nil, cached, true
}

// dropCommitted removes the segments an earlier commit already holds (a crash between commit and
// removal): the stream mark is at or past them. Without a mark, a segment sealed at or before
// siglake.marks-pruned may be held by a commit whose mark was pruned since: it is quarantined.
func (d *Drain) dropCommitted(_ context.Context, c *batchCommit) bool {
	mark, hasMark, err := marks.ReadMark(c.table, c.stream)
	if err != nil {
		return c.fail("", err)
	}
	if !hasMark && !c.quarantinePruned(d) {
		return false
	}
	fresh := c.segs[:0]
	for _, l := range c.segs {
		m := marks.Mark{Incarnation: l.seg.Header.Incarnation, Seq: l.seg.Header.Seq}
		if hasMark && !mark.Less(m) {
			l.seg.Release()
			if err := localwal.Remove(c.b.Dir, l.info); err != nil {
				return c.fail("remove", fmt.Errorf("remove already-committed segment %s: %w", l.info.Path, err))
			}
			c.out.HeldBefore = append(c.out.HeldBefore, l.info.Path)
			c.out.PriorMark = mark
			c.out.Removed++
			continue
		}
		fresh = append(fresh, l)
	}
	c.segs = fresh
	return len(c.segs) > 0
}

// quarantinePruned quarantines the segments of a stream without a mark that were sealed at or
// before siglake.marks-pruned: a pruned stream committed up to then, and a crash between a commit
// and the removal of its segments, then a pod away for longer than the prune age, leaves
// segments the table may hold. Re-committing them could double their rows; the reason file tells
// the operator to check. false ends the batch (nothing left, or the property does not decode).
func (c *batchCommit) quarantinePruned(d *Drain) bool {
	before, ok, err := marks.PrunedBefore(c.table.Properties())
	if err != nil {
		return c.fail("", fmt.Errorf("stream %s has no mark, and whether its segments may be committed already is unknown: %w", c.stream, err))
	}
	if !ok {
		return true
	}
	kept := c.segs[:0]
	for _, l := range c.segs {
		if l.info.ModTime.After(before) {
			kept = append(kept, l)
			continue
		}
		l.seg.Release()
		c.quarantine(d, l.info, metrics.ReasonMarkPruned, fmt.Errorf("stream %s of table %s has no mark, and the segment was sealed at %s, before %s: the latest commit of a stream whose mark was pruned (%s); the table may hold its rows already",
			c.stream, c.b.Table, l.info.ModTime.UTC().Format(time.RFC3339), before.UTC().Format(time.RFC3339), tableprops.MarksPruned))
	}
	c.segs = kept
	return len(c.segs) > 0
}

// write writes the batch's generation-0 Parquet files, one sorted file per day partition. The
// in-flight marker says a batch is in flight until the batch returns: a start that finds it knows
// the run before was killed. The marker only informs; a failed write (a full WAL disk) must not
// stop the batch, since its commit is what frees the disk.
func (d *Drain) write(ctx context.Context, c *batchCommit) bool {
	c.flight = marker.Marker{Table: c.b.Table, Node: d.Cfg.NodeName, Started: d.Now(), PID: os.Getpid()}
	d.recordInflight(c)
	c.undo = append(c.undo, func() { marker.Remove(c.b.Dir, c.b.Table) })
	outputs, rows, past, err := d.writeFiles(ctx, c)
	// The write released the batch's records: the commit and its retries hold no rows, so the
	// share goes back now rather than after a commit that may retry for seconds.
	c.release()
	if err != nil {
		return c.fail("write", err)
	}
	c.out.PastRetention, c.rows = past, rows
	files, err := lake.DataFiles(c.table, outputs)
	if err != nil {
		c.removeOutputs(ctx, outputs)
		return c.fail("", err)
	}
	c.outputs, c.files = outputs, files
	for _, f := range files {
		c.flight.Files = append(c.flight.Files, f.FilePath())
	}
	d.recordInflight(c)
	return true
}

// commit appends the files and moves the stream mark in one catalog commit. With claims the
// claim is the fence: past it another process may take the stream over, so this one must not
// start the commit, nor retry it (a commit that started in time and lands late is caught by the
// mark).
func (d *Drain) commit(ctx context.Context, c *batchCommit) bool {
	first, last := c.segs[0].seg.Header, c.segs[len(c.segs)-1].seg.Header
	req := lake.AppendRequest{
		Table: c.b.Table, Files: c.files, Stream: c.stream,
		First: marks.Mark{Incarnation: first.Incarnation, Seq: first.Seq},
		Last:  marks.Mark{Incarnation: last.Incarnation, Seq: last.Seq},
		Summary: iceberg.Properties{
			tableprops.SumSegments: strconv.Itoa(len(c.segs)),
			tableprops.SumRows:     strconv.FormatInt(c.rows, 10),
		},
	}
	if d.Claims != nil {
		req.Summary[tableprops.SumClaimHolder] = d.Cfg.NodeName
		req.Summary[tableprops.SumClaimEpoch] = strconv.FormatUint(c.epoch, 10)
		stream := filepath.Base(c.b.Dir)
		if !d.Claims.Valid(stream) {
			c.removeOutputs(ctx, c.outputs)
			return c.notClaimed(stream)
		}
		// And before every retry: CommitAppend's attempts can take seconds.
		req.Fence = func() error {
			if !d.Claims.Valid(stream) {
				c.out.Fenced = true
				return fmt.Errorf("stream %s: %w", stream, errNotClaimed)
			}
			return nil
		}
	}
	c.out.Tried, c.out.Files, c.out.Mark = len(c.segs), len(c.files), req.Last
	// Logged as the commit starts, not with the outcome: a kill after this line and before the
	// outcome is a kill during the commit (the crash tests wait for it).
	d.Log.Debug("committing batch", zap.String("table", c.out.Table), zap.Int("segments", c.out.Tried),
		zap.Int("files", c.out.Files), zap.Stringer("mark", c.out.Mark))
	if d.beforeCommit != nil {
		d.beforeCommit()
	}
	res, handedOff, err := d.commitAppend(ctx, c, req)
	c.out.HandedOff = handedOff
	if err != nil {
		// Only a direct commit whose outcome is known leaves files nothing references. Handed-off
		// files are never deleted here: a committer may still commit them (gc's floor is above
		// the age a committer takes a request at).
		if !res.MaybeCommitted && !handedOff {
			c.removeOutputs(ctx, c.outputs)
		}
		return c.fail("commit", err)
	}
	// AlreadyCommitted: segments above the mark were filtered before writing, so the mark reached
	// this batch through an earlier attempt of this very commit (its files are ours and
	// referenced), or through another process draining the same stream (a claim holder past its
	// fence; its files hold the rows and ours are orphans for gc). Either way nothing is appended
	// again, and the segments go.
	c.out.Commit, c.out.Rows = res, c.rows
	for _, o := range c.outputs {
		c.out.Bytes += o.Size
	}
	return true
}

// removeSegments removes (or retires to the WAL buffer) the segments whose rows are committed.
func (d *Drain) removeSegments(_ context.Context, c *batchCommit) bool {
	if d.Retire != nil && c.out.Commit.Outcome == lake.Committed {
		infos := make([]localwal.SegmentInfo, len(c.segs))
		for i, l := range c.segs {
			infos[i] = l.info
		}
		if err := d.Retire(c.b.Dir, c.out.Commit.Prev, infos); err != nil {
			return c.fail("remove", fmt.Errorf("retire drained segments of %s (their rows are committed; the mark drops them next cycle): %w", c.b.Dir, err))
		}
		c.out.Removed, c.out.Segments = len(c.segs), len(c.segs)
		return true
	}
	for _, l := range c.segs {
		if err := localwal.Remove(c.b.Dir, l.info); err != nil {
			return c.fail("remove", fmt.Errorf("remove drained segment %s (its rows are committed; the mark drops it next cycle): %w", l.info.Path, err))
		}
		c.out.Removed++
	}
	c.out.Segments = len(c.segs)
	return true
}

// removeOutputs removes files the batch wrote that no commit references; what cannot be removed
// is left for gc (the observer says so).
func (c *batchCommit) removeOutputs(ctx context.Context, outs []merge.Output) {
	fsys, err := c.table.FS(ctx)
	if err != nil {
		return
	}
	if orphans, err := lake.RemoveFiles(fsys, outs); len(orphans) > 0 {
		c.out.Orphans, c.out.OrphanErr = append(c.out.Orphans, orphans...), err
	}
}
