package drain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/drain/handoff"
	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/backoff"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/membudget"
)

// Drain turns sealed WAL segments into committed Iceberg data files, exactly once: files are written,
// then ONE commit per batch appends them and moves the stream mark, and only then are the segments
// removed. A crash anywhere leaves either uncommitted segments (drained again; the mark drops what
// an earlier commit already holds) or unreferenced files (orphans, removed by gc), never a loss or a
// duplicate.
type Drain struct {
	Cfg     Config
	Lake    *lake.Lake
	Metrics *metrics.Metrics
	// Publish receives the drain's status values; nil publishes nothing.
	Publish Publisher
	Log     *zap.Logger
	Now     func() time.Time
	Mem     memory.Allocator
	Retry   lake.Retry
	// Stop, when done, makes Cycle take no new batch (SIGTERM); the batch in flight finishes.
	Stop context.Context
	// Claims, when set (SIGLAKE_CATALOG_CLAIM), makes WALDir a root of stream subdirectories of
	// which the drain takes only those whose catalog claim this process holds.
	Claims *claim.Manager
	// Retire, when set (the WAL buffer keeps drained segments for a while, sidecar/buffer), takes
	// the segments of a batch this drain committed instead of removing them: prev is the stream's
	// mark the commit replaced, segs are the batch's segments in order. Like localwal.Remove it
	// takes them out of dir; segments found already committed are removed, never retired.
	Retire func(dir string, prev marks.Mark, segs []localwal.SegmentInfo) error
	// Reserve, when set, takes a batch's memory from the process budget (sidecar/membudget) before
	// its segments are read, and waits while the budget is spent; release gives it back. nil
	// takes none.
	Reserve func(ctx context.Context, bytes int64) (release func(), err error)
	// MemoryLimit is the size of the budget Reserve takes from (0: none). A reservation is capped
	// at it, so a segment that needs more is quarantined as oversize before it is read, a batch is
	// cut where its segments stop fitting, and decoding is capped at the batch's share.
	MemoryLimit int64
	// Group, when set (group commit on), takes each batch's commit to the table's committer
	// instead of committing it here; nil commits directly.
	Group handoff.GroupCommitter

	// BacklogEvery is how often the backlog gauges are refreshed while a batch runs (its write
	// and its commit can take long: a catalog that holds the commit until its deadline); 0 is 1 s.
	BacklogEvery time.Duration

	// beforeCommit, when set (tests), runs just before the commit.
	beforeCommit func()
	// writeMarkerFile, when set (tests), replaces os.WriteFile for the in-flight marker (a full
	// WAL disk).
	writeMarkerFile func(name string, data []byte, perm os.FileMode) error

	// backoffUntil delays a table whose last batch failed, so an outage is not hammered.
	backoffUntil map[string]time.Time
	failures     map[string]int
	// quarantined counts segments this drain moved to quarantine (shown with the backlog).
	quarantined int64
	// inQuarantine is the last count of segments in the quarantine dirs, listed at quarantineListed;
	// quarantineDirty asks for a new listing (a segment was moved there).
	inQuarantine     int
	quarantineListed time.Time
	quarantineDirty  bool
	// checkedDirs are the WAL dirs whose in-flight markers were checked since this drain last took
	// them (all at start; with claims a stream dir again when its claim is taken over).
	checkedDirs map[string]bool
	// unclean is every interrupted batch found since the start (nil: none).
	unclean *UncleanStop
	// ignoredLogged holds the ignored entries of the last scan, each logged once when first seen.
	ignoredLogged map[string]bool
	// beats schedules the heartbeats to the group committer.
	beats handoff.Schedule
	// tables caches each table for tableFor (group commit only).
	tables map[string]cachedTable
}

// quarantineRelist bounds how long a cleared quarantine keeps showing: an operator removes
// segments by hand, which the drain is not told about.
const quarantineRelist = 30 * time.Second

// Config is what the drain is told; the process maps its options onto it.
type Config struct {
	// WALDir is the WAL directory, or with catalog claims the root of stream subdirectories.
	WALDir string
	// NodeName is recorded as the claim holder in commits made under a catalog claim.
	NodeName string
	// MaxSegmentBytes quarantines a larger sealed segment as oversize from its size alone, never
	// reading it (a segment is read whole); 0: no limit.
	MaxSegmentBytes int64
	// CommitBatchTargetBytes and CommitBatchMaxAge close a batch (spec "Commit-accumulation
	// batching"): at this many bytes of segments, or once its oldest segment is this old.
	CommitBatchTargetBytes int64
	CommitBatchMaxAge      time.Duration
	// TargetFileBytes splits the drain's output files (where the timestamp changes).
	TargetFileBytes int64
	// SplitSparse also cuts each partition's file where the batch's row density falls (its
	// late rows), so on-time files keep tight ranges (merge.WriterOptions.SplitSparse).
	SplitSparse float64
	// Metadata is the search metadata a drain write to t carries (index_at_flush, index columns).
	Metadata lake.MetadataFunc
	// PastRetention, when set, gives the filter of t's rows already past retention at now and
	// the latest cutoff (no row at or after it is past); the drain drops those rows before
	// writing, so a replayed old WAL cannot bring deleted days back. nil filter: none can be.
	// The process wires retention.DrainFilter here, so the drain does not import retention.
	PastRetention func(t *table.Table, now time.Time) (*rowfilter.Filter, int64)
}

func (d *Drain) publisher() Publisher {
	if d.Publish == nil {
		return nopPublisher{}
	}
	return d.Publish
}

// drainBackoff delays a table after failed batches: 1 s, 2 s, ... 32 s. No jitter: the delay
// is a deadline against the drain's own clock, and each table backs off on its own.
var drainBackoff = backoff.Policy{Min: time.Second, Max: 32 * time.Second, Factor: 2, Jitter: backoff.NoJitter}

// ErrWALDir marks a cycle that could not list the WAL directory.
var ErrWALDir = errors.New("cannot scan the WAL dir")

// errNotClaimed stops a batch whose stream claim this process no longer holds validly.
var errNotClaimed = errors.New("catalog claim not held (lost, expiring or being released); another process drains it")

// CycleResult summarises one drain cycle.
type CycleResult struct {
	Batches   int
	Committed int // batches committed (or found already committed)
	Segments  int
	Rows      int64
	Pending   int // sealed segments still waiting (not due, or failed)
}

// walDirs are the directories this cycle drains: the WAL dir itself, or with claims the
// subdirectories of the WAL root whose claims this process holds.
func (d *Drain) walDirs() []string {
	if d.Claims == nil {
		return []string{d.Cfg.WALDir}
	}
	var dirs []string
	for _, s := range d.Claims.Held() {
		dirs = append(dirs, filepath.Join(d.Cfg.WALDir, s))
	}
	return dirs
}

// Run cycles every poll until stop is done, or with once until nothing sealed is left or a cycle
// fails. Batches run under work, which outlives stop by the shutdown timeout so that a batch in
// flight at SIGTERM can finish. after, when set, sees every cycle's result.
func (d *Drain) Run(stop, work context.Context, poll time.Duration, once bool, after func(CycleResult, error)) error {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		res, err := d.Cycle(work, once)
		if membudget.IsStopping(work, err) {
			// The stop (or the shutdown timeout) ended a batch's wait for memory: the process is
			// stopping, the segments stay for the next start, and nothing failed.
			err = nil
		}
		if after != nil {
			after(res, err)
		}
		if once && (res.Pending == 0 || err != nil) {
			return err
		}
		select {
		case <-stop.Done():
			return nil
		case <-t.C:
		}
	}
}

// Cycle scans the WAL once and commits every batch that is due. flush commits everything
// regardless of batch age. Errors of one batch are logged, counted and recorded in the status;
// they do not stop the other batches. The returned error is the first batch error.
func (d *Drain) Cycle(ctx context.Context, flush bool) (CycleResult, error) {
	var res CycleResult
	now := d.Now()
	dirs := d.walDirs()
	segs, dirOf, ignored, errs := batches.ScanIgnored(dirs)
	d.observeIgnored(ignored)
	if err := d.observeScanErrors(now, errs); err != nil {
		return res, err
	}
	d.checkTakenOver(ctx, dirs)
	segs = d.quarantineOversize(segs, dirOf)
	d.ObserveBacklog(segs, now)
	var firstErr error
	due := batches.Due(dirs, segs, dirOf, now, d.Cfg.CommitBatchTargetBytes, d.batchAge, flush)
	failed, ran := map[string]bool{}, map[string]bool{}
	for i, b := range due {
		if ctx.Err() != nil || membudget.Stopping(d.Stop) != nil {
			break // shutting down: take no new batch
		}
		// The backoff also keeps a stream's batches of one table in order: a later batch must not
		// commit (and move the mark past) an earlier one that failed.
		//
		// This is the pod invariant group commit's exactly-once rests on: at most one unresolved
		// commit per (WAL dir, table), and no later range before the earlier one is known
		// committed. commitBatch is synchronous, a failed batch stops its key for the cycle, and
		// the next cycle plans from the oldest segment still in the WAL (segments go only once
		// their commit is known). So every later request starts at or below the first segment of
		// any request a committer may still hold, and the mark makes whichever lands second a
		// no-op or a mark-ahead failure (retried), never a gap. Pipelining a stream's batches, or
		// removing a failed batch's segments, would break it: a later range could land while a
		// committer still holds the earlier one and move the mark past it, and the mark would then
		// count the earlier rows as committed (lost). TestStalledCommitterHoldsTheStream guards it.
		key := handoff.Key(b.Dir, b.Table)
		if failed[key] {
			continue // an earlier batch of this dir and table failed: never overtake it, even on flush
		}
		if until, ok := d.backoffUntil[key]; ok && now.Before(until) && !flush {
			continue
		}
		res.Batches++
		ran[key] = true
		stopWatch := d.watchBacklog(dirs)
		at := handoff.ProgressOf(b.Dir, b.Table, b.Segs, segs, dirOf, now)
		at.More = slices.ContainsFunc(due[i+1:], func(n batches.Batch) bool { return n.Dir == b.Dir && n.Table == b.Table })
		out := d.commitBatch(ctx, b, at)
		stopWatch()
		d.observe(out)
		// The backlog after every batch, not once per cycle: one cycle drains a whole catch-up.
		d.listQuarantine(d.Now())
		d.scanBacklog(dirs, d.quarantined, d.inQuarantine)
		if out.shutdown {
			// Cancelled while waiting for memory: shutdown, not a failed batch (no error metric,
			// no backoff); the segments stay for the next start.
			if firstErr == nil {
				firstErr = out.Err
			}
			break
		}
		if out.Err != nil {
			d.noteFailure(key, now)
			failed[key] = true
			if firstErr == nil {
				firstErr = out.Err
			}
			continue
		}
		delete(d.backoffUntil, key)
		delete(d.failures, key)
		res.Committed++
		res.Segments += out.Removed
		res.Rows += out.Rows
	}
	scan := d.Now()
	if after, dirOf, err := batches.ScanDirs(dirs); err == nil {
		d.ObserveBacklog(after, d.Now())
		res.Pending = len(after)
		d.heartbeat(after, dirOf, scan, ran)
	}
	return res, firstErr
}

func (d *Drain) noteFailure(key string, now time.Time) {
	if d.backoffUntil == nil {
		d.backoffUntil, d.failures = map[string]time.Time{}, map[string]int{}
	}
	d.failures[key]++
	d.backoffUntil[key] = now.Add(drainBackoff.Wait(d.failures[key], nil))
}
