package drain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/lake"
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
	Metrics *Metrics
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
	Retire func(dir string, prev lake.Mark, segs []localwal.SegmentInfo) error
	// Reserve, when set, takes a batch's memory from the process budget (sidecar/membudget) before
	// its segments are read, and waits while the budget is spent; release gives it back. nil
	// takes none.
	Reserve func(ctx context.Context, bytes int64) (release func(), err error)
	// MemoryLimit is the size of the budget Reserve takes from (0: none). A reservation is capped
	// at it, so a segment that needs more is quarantined as oversize before it is read, a batch is
	// cut where its segments stop fitting, and decoding is capped at the batch's share.
	MemoryLimit int64

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
	// ignoredLogged holds the ignored entries of the last scan, each logged once when first seen.
	ignoredLogged map[string]bool
}

// quarantineRelist bounds how long a cleared quarantine keeps showing: an operator removes
// segments by hand, which the drain is not told about.
const quarantineRelist = 30 * time.Second

// StreamDirs lists the stream subdirectories of a WAL root (claims on): every directory except
// quarantine and hidden ones. loose counts sealed segments lying in the root itself.
func StreamDirs(root string) (streams []string, loose int, err error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, 0, fmt.Errorf("list WAL root %s (--wal-dir / SIGLAKE_WAL_DIR): %w", root, err)
	}
	for _, e := range ents {
		// A stream directory is named by its stream id (lost+found on an ext4 volume root is not).
		if e.IsDir() && e.Name() != localwal.QuarantineDir && localwal.ValidStream(e.Name()) {
			streams = append(streams, e.Name())
		}
	}
	if segs, err := localwal.Scan(root); err == nil {
		loose = len(segs)
	}
	return streams, loose, nil
}

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
	PastRetention func(t *table.Table, now time.Time) (*merge.RowFilter, int64)
}

func (d *Drain) publisher() Publisher {
	if d.Publish == nil {
		return nopPublisher{}
	}
	return d.Publish
}

// drainBackoff delays a table after failed batches: 1 s, 2 s, ... 32 s. No jitter: the delay
// is a deadline against the drain's own clock, and each table backs off on its own.
var drainBackoff = lake.Backoff{Min: time.Second, Max: 32 * time.Second, Factor: 2, Jitter: lake.NoJitter}

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

// ScanDirs lists the sealed segments of every dir; each batch remembers its dir. A dir that
// cannot be scanned is left out and its error returned with the others' segments, so one bad
// stream directory does not stop the streams beside it.
func ScanDirs(dirs []string) ([]localwal.SegmentInfo, map[string]string, []error) {
	all, dirOf, _, errs := scanDirs(dirs)
	return all, dirOf, errs
}

// scanDirs is ScanDirs plus the entries of the dirs that look like segments but are not listed.
func scanDirs(dirs []string) ([]localwal.SegmentInfo, map[string]string, []localwal.Ignored, []error) {
	var all []localwal.SegmentInfo
	var ignored []localwal.Ignored
	var errs []error
	dirOf := map[string]string{}
	for _, dir := range dirs {
		segs, ign, err := localwal.ScanIgnored(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range segs {
			dirOf[s.Path] = dir
		}
		all = append(all, segs...)
		ignored = append(ignored, ign...)
	}
	return all, dirOf, ignored, errs
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
	segs, dirOf, ignored, errs := scanDirs(dirs)
	d.observeIgnored(ignored)
	for _, err := range errs {
		d.Metrics.DrainErrors.WithLabelValues("scan").Inc()
		d.publisher().Error(now, "scan", "", err)
		if d.Claims == nil { // the one WAL dir: nothing to drain
			return res, fmt.Errorf("%w (--wal-dir / SIGLAKE_WAL_DIR): %w", ErrWALDir, err)
		}
		d.Log.Warn("a claimed stream directory cannot be scanned; the other streams go on", zap.Error(err))
	}
	segs = d.quarantineOversize(segs, dirOf)
	d.ObserveBacklog(segs, now)
	var firstErr error
	// Batches never mix WAL dirs: each dir is one stream, and a batch commits one stream's mark.
	byDir := map[string][]localwal.SegmentInfo{}
	for _, s := range segs {
		byDir[dirOf[s.Path]] = append(byDir[dirOf[s.Path]], s)
	}
	var batches []batch
	for _, dir := range dirs {
		for _, b := range planBatches(byDir[dir], now, d.Cfg.CommitBatchTargetBytes, d.Cfg.CommitBatchMaxAge, flush) {
			b.dir = dir
			batches = append(batches, b)
		}
	}
	failed := map[string]bool{}
	for _, b := range batches {
		if ctx.Err() != nil || membudget.Stopping(d.Stop) != nil {
			break // shutting down: take no new batch
		}
		// The backoff also keeps a stream's batches of one table in order: a later batch must not
		// commit (and move the mark past) an earlier one that failed.
		key := b.dir + "\x00" + b.table
		if failed[key] {
			continue // an earlier batch of this dir and table failed: never overtake it, even on flush
		}
		if until, ok := d.backoffUntil[key]; ok && now.Before(until) && !flush {
			continue
		}
		res.Batches++
		stopWatch := d.watchBacklog(dirs)
		out := d.commitBatch(ctx, b)
		stopWatch()
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
		d.observe(out)
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
	if after, _, err := ScanDirs(dirs); err == nil {
		d.ObserveBacklog(after, d.Now())
		res.Pending = len(after)
	}
	return res, firstErr
}

// maxIgnoredLogged is how many newly seen ignored paths one cycle logs one by one.
const maxIgnoredLogged = 20

// observeIgnored counts the entries that look like segments but are never drained, and logs each
// path once while it stays (again if it comes back after it was gone).
func (d *Drain) observeIgnored(ignored []localwal.Ignored) {
	counts := map[string]int{}
	seen := make(map[string]bool, len(ignored))
	logged, unlogged := 0, 0
	for _, ig := range ignored {
		counts[ig.Reason]++
		seen[ig.Path] = true
		if d.ignoredLogged[ig.Path] {
			continue
		}
		// Thousands of stray files must not become thousands of lines in one cycle: the first few
		// paths, then one line with the counts (the gauge has them too).
		if logged == maxIgnoredLogged {
			unlogged++
			continue
		}
		logged++
		d.Log.Warn("a file in the WAL dir looks like a segment but is not drained: its rows do not reach the lake, and once later segments of its stream commit, the mark is past it",
			zap.String("path", ig.Path), zap.String("reason", ig.Reason))
	}
	if unlogged > 0 {
		d.Log.Warn("more files in the WAL dir look like segments and are not drained; their paths are not logged",
			zap.Int("not_logged", unlogged), zap.Any("ignored_by_reason", counts))
	}
	d.ignoredLogged = seen
	for _, r := range localwal.IgnoredReasons {
		d.Metrics.IgnoredFiles.WithLabelValues(r).Set(float64(counts[r]))
	}
}

// quarantineOversize moves the segments above Cfg.MaxSegmentBytes to quarantine before a batch
// counts, reserves memory for or reads them: a batch holding one would wait for (or take) more
// memory than the process has, and hold back every good segment behind it.
func (d *Drain) quarantineOversize(segs []localwal.SegmentInfo, dirOf map[string]string) []localwal.SegmentInfo {
	limit := d.Cfg.MaxSegmentBytes
	if limit <= 0 {
		return segs
	}
	kept := segs[:0:0]
	for _, s := range segs {
		if s.Size > limit {
			d.quarantine(dirOf[s.Path], s, localwal.ReasonOversize, fmt.Errorf(
				"%d bytes, above the limit of %d (--wal-segment-max-mb / SIGLAKE_WAL_SEGMENT_MAX_MB); not read", s.Size, limit))
			continue
		}
		kept = append(kept, s)
	}
	return kept
}

func (d *Drain) noteFailure(key string, now time.Time) {
	if d.backoffUntil == nil {
		d.backoffUntil, d.failures = map[string]time.Time{}, map[string]int{}
	}
	d.failures[key]++
	d.backoffUntil[key] = now.Add(drainBackoff.Wait(d.failures[key], nil))
}

// ObserveBacklog publishes the sealed backlog segs (gauges and status); the process calls it
// while the catalog is unreachable, when no cycle runs.
func (d *Drain) ObserveBacklog(segs []localwal.SegmentInfo, now time.Time) {
	d.listQuarantine(now)
	d.observeBacklog(segs, now, d.quarantined, d.inQuarantine)
}

// scanBacklog scans dirs and publishes their backlog; a dir that cannot be scanned is left out
// with claims (as Cycle does), and without them nothing is published (Cycle reports the error).
func (d *Drain) scanBacklog(dirs []string, quarantined int64, inQuarantine int) {
	segs, _, errs := ScanDirs(dirs)
	if len(errs) > 0 && d.Claims == nil {
		return
	}
	d.observeBacklog(segs, d.Now(), quarantined, inQuarantine)
}

// watchBacklog republishes the backlog of dirs every BacklogEvery until the returned stop is
// called (it returns once the watcher is done), so the gauges follow the WAL while a batch's
// commit waits. The quarantine count is the one at the start: the batch may change it.
func (d *Drain) watchBacklog(dirs []string) (stop func()) {
	every := d.BacklogEvery
	if every <= 0 {
		every = time.Second
	}
	q, iq := d.quarantined, d.inQuarantine
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				d.scanBacklog(dirs, q, iq)
			}
		}
	}()
	return func() { close(done); <-finished }
}

// observeBacklog takes the quarantine counts as values: the watcher goroutine calls it while the
// drain's own goroutine may quarantine, so only that goroutine reads and writes the drain's counts.
func (d *Drain) observeBacklog(segs []localwal.SegmentInfo, now time.Time, quarantined int64, inQuarantine int) {
	var bytes int64
	var oldest time.Time
	for _, s := range segs {
		bytes += s.Size
		if oldest.IsZero() || s.ModTime.Before(oldest) {
			oldest = s.ModTime
		}
	}
	age := 0.0
	if !oldest.IsZero() {
		age = max(0, now.Sub(oldest).Seconds())
	}
	d.Metrics.SealedSegments.Set(float64(len(segs)))
	d.Metrics.SealedBytes.Set(float64(bytes))
	d.Metrics.OldestSealedAge.Set(age)
	d.publisher().Backlog(Backlog{Segments: len(segs), Bytes: bytes, OldestAgeSeconds: age, Quarantined: quarantined,
		InQuarantine: inQuarantine})
}

// listQuarantine recounts the segments in the quarantine dirs on the first call (so a restart
// shows what earlier runs left there), after a quarantine, and every quarantineRelist. A dir that
// cannot be listed keeps the last count: a wrong 0 would hide quarantined rows.
func (d *Drain) listQuarantine(now time.Time) {
	if !d.quarantineDirty && !d.quarantineListed.IsZero() && now.Sub(d.quarantineListed) < quarantineRelist {
		return
	}
	total := 0
	for _, dir := range d.walDirs() {
		n, err := localwal.Quarantined(dir)
		if err != nil {
			d.Log.Warn("cannot count the segments in quarantine; the gauge keeps its last value", zap.Error(err))
			return
		}
		total += n
	}
	d.inQuarantine, d.quarantineListed, d.quarantineDirty = total, now, false
	d.Metrics.InQuarantine.Set(float64(total))
}

// batchMemoryFactor is what a batch holds at its peak per byte of decoded segments: the segments
// decoded (in place for uncompressed ones: about their file size), the write's sort order,
// gathered chunk and encoded row group on top. The drain benchmark's batches peaked at 1.7 times
// their size in live heap.
const batchMemoryFactor = 2

// BatchMemory is the share of the process memory budget a batch of segBytes takes, whose
// compressed bodies decode to extra more bytes (localwal.DecodedSize): a compressed segment's
// records are allocated beside its file bytes, so sizing by the file alone under-reserves it.
func BatchMemory(segBytes, extra int64) int64 { return batchMemoryFactor * (segBytes + extra) }

// fitBudget returns b cut to what the memory budget holds and its share (BatchMemory of its
// segments, from their IPC metadata; a segment whose metadata cannot be read counts by its file
// size, and the read reports it). The reservation is capped at the budget, so a segment whose
// share alone is above it would be decoded past the budget (a small zstd segment of repeated
// values can decode to gigabytes): it is quarantined as oversize without reading its body. The
// segments after the first that does not fit beside the others wait for a later batch.
func (d *Drain) fitBudget(b batch) (batch, int64) {
	limit := d.MemoryLimit
	var share, bytes int64
	kept := b.segs[:0:0]
	for _, s := range b.segs {
		extra, err := localwal.DecodedSize(s.Path)
		if err != nil {
			extra = 0
		}
		need := BatchMemory(s.Size, extra)
		if limit > 0 && need > limit {
			d.quarantine(b.dir, s, localwal.ReasonOversize, fmt.Errorf(
				"%d bytes on disk decode to %d more, a batch share of %d bytes, above the process memory budget of %d bytes (--memory-budget-bytes / SIGLAKE_MEMORY_BUDGET_BYTES); not read",
				s.Size, extra, need, limit))
			continue
		}
		if limit > 0 && len(kept) > 0 && share+need > limit {
			break // in order: a later segment must not commit (move the mark) before this one
		}
		kept = append(kept, s)
		share += need
		bytes += s.Size
	}
	b.segs, b.bytes = kept, bytes
	return b, share
}

// loaded is a decoded segment of a batch.
type loaded struct {
	info localwal.SegmentInfo
	seg  *localwal.Segment
}

// commitBatch runs the exactly-once protocol for one batch and returns what it did; observe turns
// that into metrics, status and log lines. (A quarantine is recorded where it happens: it is the
// end of that segment, not of the batch.)
func (d *Drain) commitBatch(ctx context.Context, b batch) (out BatchOutcome) {
	start := d.Now()
	cost0 := lake.ObjectStoreCost(b.table) // includes concurrent work on the same table (its rewrites)
	out = BatchOutcome{Table: b.table, Dir: b.dir}
	defer func() { out.Took, out.Cost = d.Now().Sub(start), lake.ObjectStoreCost(b.table).Sub(cost0) }()
	fail := func(stage string, err error) BatchOutcome { out.Stage, out.Err = stage, err; return out }
	log := d.Log.With(zap.String("table", b.table))
	var epoch uint64
	if d.Claims != nil {
		// While the batch is in flight its stream is not released; Valid fences the commit itself.
		stream := filepath.Base(b.dir)
		e, ok := d.Claims.Begin(stream)
		if !ok {
			d.Claims.Fenced()
			return fail("", fmt.Errorf("stream %s: %w", stream, errNotClaimed))
		}
		defer d.Claims.End(stream)
		epoch = e
		log = log.With(zap.String("stream_dir", stream), zap.Uint64("claim_epoch", epoch))
	}

	// 1. Decode. A bad segment is quarantined and the rest of the batch goes on.
	b, share := d.fitBudget(b)
	if len(b.segs) == 0 {
		return out
	}
	// A wait for memory is not a batch in flight: SIGTERM (Stop) ends it, so the batch does not
	// start only for the shutdown timeout to cut it.
	release, err := membudget.ReserveForWork(ctx, d.Stop, d.Reserve, share)
	if membudget.IsStopping(ctx, err) { // only a stop ends the wait: not a drain error
		out.Err, out.shutdown = err, true
		return out
	}
	if err != nil {
		return fail("", err)
	}
	releaseShare := sync.OnceFunc(release)
	defer releaseShare()
	var segs []loaded
	var decoded []*localwal.Segment // every decoded segment, released on return (Release is idempotent)
	defer func() {
		for _, s := range decoded {
			s.Release()
		}
	}()
	for _, info := range b.segs {
		opts := localwal.ReadOptions{Mem: d.Mem, MaxFileBytes: d.Cfg.MaxSegmentBytes}
		if d.MemoryLimit > 0 {
			// Without it the cap is 64 MiB + 64 x the file size: gigabytes at the size limit.
			opts.MaxDecodedBytes = share
		}
		seg, err := localwal.ReadAll(info.Path, opts)
		var se *localwal.SegmentError
		if errors.As(err, &se) && se.Reason != localwal.ReasonIO {
			reason := se.Reason
			if errors.Is(err, localwal.ErrDecodeBudget) && d.MemoryLimit > 0 {
				reason = localwal.ReasonOversize
				err = fmt.Errorf("%w (the batch's share of the process memory budget, --memory-budget-bytes / SIGLAKE_MEMORY_BUDGET_BYTES)", err)
			}
			d.quarantine(b.dir, info, reason, err)
			continue
		}
		if err != nil {
			return fail("read", fmt.Errorf("read segment %s: %w", info.Path, err))
		}
		decoded = append(decoded, seg)
		// With claims the directory name is the claim key: a stream written under another name
		// could be drained by two claim holders at once (two directories, one mark).
		if d.Claims != nil && seg.Header.Stream != filepath.Base(b.dir) {
			seg.Release()
			d.quarantine(b.dir, info, localwal.ReasonBadHeader, fmt.Errorf("stream %q in the stream directory %q: with catalog claims each stream directory is named by its stream", seg.Header.Stream, filepath.Base(b.dir)))
			continue
		}
		if len(segs) > 0 && seg.Header.Stream != segs[0].seg.Header.Stream {
			seg.Release()
			d.quarantine(b.dir, info, localwal.ReasonBadHeader, fmt.Errorf("stream %q differs from stream %q of the other segments in this WAL dir", seg.Header.Stream, segs[0].seg.Header.Stream))
			continue
		}
		segs = append(segs, loaded{info, seg})
	}
	if len(segs) == 0 {
		return out
	}
	stream := segs[0].seg.Header.Stream
	out.Stream = stream

	// 2. Make sure the table exists and holds every column; a type conflict quarantines that segment.
	var t *table.Table
	kept := segs[:0]
	for _, l := range segs {
		nt, err := d.Lake.EnsureTable(ctx, b.table, segmentTableSchema(l.seg.Schema))
		var schemaErr *lake.SchemaError
		if errors.As(err, &schemaErr) {
			l.seg.Release()
			d.quarantine(b.dir, l.info, ReasonIncompatibleSchema, err)
			continue
		}
		if err != nil {
			return fail("table", err)
		}
		sc, err := lake.ArrowSchema(nt)
		if err != nil {
			return fail("", err)
		}
		if err := conforms(sc, l.seg, d.Mem); err != nil {
			l.seg.Release()
			d.quarantine(b.dir, l.info, ReasonIncompatibleSchema, err)
			continue
		}
		t = nt
		kept = append(kept, l)
	}
	segs = kept
	if len(segs) == 0 {
		return out
	}

	// 3. Drop what an earlier commit already holds (a crash between commit and removal).
	mark, hasMark, err := lake.ReadMark(t, stream)
	if err != nil {
		return fail("", err)
	}
	fresh := segs[:0]
	for _, l := range segs {
		m := lake.Mark{Incarnation: l.seg.Header.Incarnation, Seq: l.seg.Header.Seq}
		if hasMark && !mark.Less(m) {
			l.seg.Release()
			if err := localwal.Remove(b.dir, l.info); err != nil {
				return fail("remove", fmt.Errorf("remove already-committed segment %s: %w", l.info.Path, err))
			}
			log.Info("removed segment an earlier commit already holds",
				zap.String("path", l.info.Path), zap.Stringer("mark", mark))
			out.Removed++
			continue
		}
		fresh = append(fresh, l)
	}
	segs = fresh
	if len(segs) == 0 {
		return out
	}

	// 4. Write generation-0 Parquet, one sorted file per day partition. The marker says a batch is
	// in flight until this returns: a start that finds it knows the run before was killed.
	// The marker only informs; a failed write (a full WAL disk) must not stop the batch, since
	// its commit is what frees the disk.
	flight := inflight{Table: b.table, Started: d.Now(), PID: os.Getpid()}
	d.recordInflight(b.dir, flight)
	defer os.Remove(inflightPath(b.dir, b.table))
	outputs, rows, past, err := d.writeFiles(ctx, t, segs)
	// The write released the batch's records: the commit and its retries hold no rows, so the
	// share goes back now rather than after a commit that may retry for seconds.
	releaseShare()
	if err != nil {
		return fail("write", err)
	}
	out.PastRetention = past
	files, err := lake.DataFiles(t, outputs)
	if err != nil {
		d.removeOutputs(ctx, t, outputs)
		return fail("", err)
	}
	for _, f := range files {
		flight.Files = append(flight.Files, f.FilePath())
	}
	d.recordInflight(b.dir, flight)
	var bytes int64
	for _, o := range outputs {
		bytes += o.Size
	}

	// 5. One commit: the files and the stream mark together.
	first, last := segs[0].seg.Header, segs[len(segs)-1].seg.Header
	req := lake.AppendRequest{
		Table: b.table, Files: files, Stream: stream,
		First: lake.Mark{Incarnation: first.Incarnation, Seq: first.Seq},
		Last:  lake.Mark{Incarnation: last.Incarnation, Seq: last.Seq},
		Summary: iceberg.Properties{
			"siglake.segments": strconv.Itoa(len(segs)),
			"siglake.rows":     strconv.FormatInt(rows, 10),
		},
	}
	if d.Claims != nil {
		req.Summary["siglake.claim.holder"] = d.Cfg.NodeName
		req.Summary["siglake.claim.epoch"] = strconv.FormatUint(epoch, 10)
		// The fence: past it another process may take the stream over, so this one must not
		// start the commit. (A commit that started in time and lands late is caught by the mark.)
		stream := filepath.Base(b.dir)
		if !d.Claims.Valid(stream) {
			d.Claims.Fenced()
			d.removeOutputs(ctx, t, outputs)
			return fail("", fmt.Errorf("stream %s: %w", stream, errNotClaimed))
		}
		// And before every retry: CommitAppend's attempts can take seconds.
		req.Fence = func() error {
			if !d.Claims.Valid(stream) {
				d.Claims.Fenced()
				return fmt.Errorf("stream %s: %w", stream, errNotClaimed)
			}
			return nil
		}
	}
	log.Debug("committing batch", zap.Int("segments", len(segs)), zap.Int("files", len(files)), zap.Stringer("mark", req.Last))
	if d.beforeCommit != nil {
		d.beforeCommit()
	}
	res, err := d.Lake.CommitAppend(ctx, req, d.Retry)
	if err != nil {
		if !res.MaybeCommitted {
			d.removeOutputs(ctx, t, outputs) // nothing references them
		}
		return fail("commit", err)
	}
	out.Commit, out.Mark, out.Rows, out.Files, out.Bytes = res, req.Last, rows, len(files), bytes
	if res.Outcome == lake.AlreadyCommitted {
		// Segments above the mark were filtered before writing, so the mark reached this batch
		// through an earlier attempt of this very commit (its files are ours and referenced), or
		// through another process draining the same stream (a claim holder past its fence; its
		// files hold the rows and ours are orphans for gc). Either way: append nothing again.
		log.Warn("the stream mark shows the batch committed (a lost commit response, or another process drained this stream); not appending again",
			zap.Stringer("mark", req.Last), zap.Int64("snapshot_id", res.SnapshotID))
	}

	// 6. Only now may the segments go.
	if d.Retire != nil && res.Outcome == lake.Committed {
		infos := make([]localwal.SegmentInfo, len(segs))
		for i, l := range segs {
			infos[i] = l.info
		}
		if err := d.Retire(b.dir, res.Prev, infos); err != nil {
			return fail("remove", fmt.Errorf("retire drained segments of %s (their rows are committed; the mark drops them next cycle): %w", b.dir, err))
		}
		out.Removed, out.Segments = len(segs), len(segs)
		return out
	}
	for _, l := range segs {
		if err := localwal.Remove(b.dir, l.info); err != nil {
			return fail("remove", fmt.Errorf("remove drained segment %s (its rows are committed; the mark drops it next cycle): %w", l.info.Path, err))
		}
		out.Removed++
	}
	out.Segments = len(segs)
	return out
}

// conforms checks that every record of seg converts to the table schema sc. Some do not although the
// Iceberg types match (uint64 data for a long column, nulls in a required column); without this
// check such a segment would fail its batch on every retry and stall the table's drain.
func conforms(sc *arrow.Schema, seg *localwal.Segment, mem memory.Allocator) error {
	for _, rec := range seg.Records {
		c, err := merge.Conform(rec, sc, mem)
		if err != nil {
			return fmt.Errorf("segment rows do not fit the table schema: %w", err)
		}
		c.Release()
	}
	return nil
}

// writeFiles conforms every record to the table schema, drops the rows already past the table's
// retention, splits the rest by day and writes one sorted generation-0 file per day. It returns
// the rows written and the rows dropped. It releases the segments' records as it goes (their
// headers stay): a batch's memory shrinks while its files are written.
func (d *Drain) writeFiles(ctx context.Context, t *table.Table, segs []loaded) ([]merge.Output, int64, int64, error) {
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return nil, 0, 0, err
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("open FileIO of %s: %w", t.Location(), err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, 0, 0, fmt.Errorf("FileIO of %s cannot write", t.Location())
	}
	expired, cutoff := d.retentionFilter(t)
	byDay := map[int64][]arrow.RecordBatch{}
	defer func() {
		for _, rs := range byDay {
			for _, r := range rs {
				r.Release()
			}
		}
	}()
	var rows, past int64
	tsIdx := sc.FieldIndices(lake.TimestampColumn)[0]
	for _, l := range segs {
		for _, rec := range l.seg.Records {
			c, err := merge.Conform(rec, sc, d.Mem)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("segment %s: %w", l.info.Path, err)
			}
			if expired != nil && minTimestamp(c, tsIdx) < cutoff {
				kept, dropped, err := merge.FilterRecord(c, lake.TimestampColumn, expired, d.Mem)
				c.Release()
				if err != nil {
					return nil, 0, 0, fmt.Errorf("segment %s: drop rows past retention: %w", l.info.Path, err)
				}
				for _, n := range dropped {
					past += n
				}
				c = kept
			}
			rows += c.NumRows()
			err = splitByDay(ctx, c, tsIdx, d.Mem, byDay)
			c.Release()
			if err != nil {
				return nil, 0, 0, err
			}
		}
		// Its rows are in byDay now (slices of the same buffers); nothing else may hold the
		// segment's records, or its memory would outlive the write below.
		l.seg.Release()
	}
	// One set of density cuts for the whole batch: the rows it brings to a day that has closed
	// are all late, and go to the late stream, as its late rows in the current day do.
	var all []arrow.RecordBatch
	for _, recs := range byDay {
		all = append(all, recs...)
	}
	cuts := merge.BatchDensityCuts(all, lake.TimestampColumn, d.Cfg.SplitSparse)
	var latePath func(int) string
	var outs []merge.Output
	for day, recs := range byDay {
		delete(byDay, day) // the writer owns recs now and releases each as it writes its rows
		dir := lake.DataDir(t, time.Unix(day*86400, 0).UTC().Format("2006-01-02"))
		if d.Cfg.SplitSparse > 0 {
			latePath = func(int) string { return dir + "/" + merge.LateFileName(0) }
		}
		o, err := merge.WriteSortedReleasing(ctx, wfs, func(int) string { return dir + "/" + merge.DataFileName(0) }, sc, recs,
			merge.WriterOptions{TimestampColumn: lake.TimestampColumn, TargetFileBytes: d.Cfg.TargetFileBytes, SplitSparse: d.Cfg.SplitSparse, Generation: 0, Allocator: d.Mem,
				Cuts: &cuts, LatePath: latePath, Metadata: d.Cfg.Metadata.For(t)})
		if err != nil {
			d.removeOutputs(ctx, t, outs)
			return nil, 0, 0, fmt.Errorf("write %s: %w", dir, err)
		}
		d.Metrics.Merge.CountSkipped(o)
		outs = append(outs, o...)
	}
	return outs, rows, past, nil
}

// retentionFilter is the row filter of rows already past t's retention, and the latest cutoff;
// nil when retention is not wired or keeps every row.
func (d *Drain) retentionFilter(t *table.Table) (*merge.RowFilter, int64) {
	if d.Cfg.PastRetention == nil {
		return nil, 0
	}
	return d.Cfg.PastRetention(t, d.Now())
}

// minTimestamp is the smallest value of rec's timestamp column ts (microseconds).
func minTimestamp(rec arrow.RecordBatch, ts int) int64 {
	col := rec.Column(ts).(*array.Timestamp)
	m := int64(math.MaxInt64)
	for i := 0; i < col.Len(); i++ {
		if col.IsValid(i) {
			m = min(m, int64(col.Value(i)))
		}
	}
	return m
}

// splitByDay appends rec's rows to out by UTC day of column ts (microseconds).
func splitByDay(ctx context.Context, rec arrow.RecordBatch, ts int, mem memory.Allocator, out map[int64][]arrow.RecordBatch) error {
	col := rec.Column(ts).(*array.Timestamp)
	day := func(i int) int64 { return floorDiv(int64(col.Value(i)), 86400_000_000) }
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	first, uniform := day(0), true
	for i := 1; i < n && uniform; i++ {
		uniform = day(i) == first
	}
	if uniform {
		rec.Retain()
		out[first] = append(out[first], rec)
		return nil
	}
	days := map[int64]bool{}
	for i := 0; i < n; i++ {
		days[day(i)] = true
	}
	for dd := range days {
		mb := array.NewBooleanBuilder(mem)
		for i := 0; i < n; i++ {
			mb.Append(day(i) == dd)
		}
		mask := mb.NewBooleanArray()
		mb.Release()
		part, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			return fmt.Errorf("split rows by day: %w", err)
		}
		out[dd] = append(out[dd], part)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// segmentTableSchema is the table schema a segment asks for: its columns, with the timestamp in
// microseconds UTC (Iceberg timestamptz) and without the segment header metadata.
func segmentTableSchema(sc *arrow.Schema) *arrow.Schema {
	fields := append([]arrow.Field(nil), sc.Fields()...)
	for i, f := range fields {
		if f.Name == lake.TimestampColumn {
			fields[i].Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
		}
		fields[i].Metadata = arrow.Metadata{}
	}
	return arrow.NewSchema(fields, nil)
}

func (d *Drain) removeOutputs(ctx context.Context, t *table.Table, outs []merge.Output) {
	fsys, err := t.FS(ctx)
	if err != nil {
		return
	}
	if orphans, err := lake.RemoveFiles(fsys, outs); len(orphans) > 0 {
		d.Log.Warn("could not remove uncommitted outputs; gc will", zap.Strings("paths", orphans), zap.Error(err))
	}
}

func (d *Drain) quarantine(dir string, info localwal.SegmentInfo, reason string, cause error) {
	dest, err := localwal.Quarantine(dir, info, reason, cause.Error())
	d.publisher().Error(d.Now(), "quarantine", info.Table, cause)
	if err != nil {
		// Not counted: the metric counts segments moved, and this one is retried every cycle.
		d.Log.Error("could not quarantine bad segment; it stays in place", zap.String("path", info.Path),
			zap.String("reason", reason), zap.NamedError("cause", cause), zap.Error(err))
		return
	}
	d.Metrics.Quarantined.WithLabelValues(reason).Inc()
	d.quarantined++
	d.quarantineDirty = true
	d.Log.Error("quarantined bad segment", zap.String("table", info.Table), zap.String("path", info.Path),
		zap.String("quarantined_to", dest), zap.String("reason", reason), zap.NamedError("cause", cause))
}
