package drain

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/objstore"
)

// Backlog is the sealed WAL waiting to be drained.
type Backlog struct {
	Segments         int     `json:"segments"`
	Bytes            int64   `json:"bytes"`
	OldestAgeSeconds float64 `json:"oldest_age_seconds"`
	Quarantined      int64   `json:"quarantined_total"`
	// InQuarantine is what siglake_wal_segments_in_quarantine shows: segments in quarantine/
	// now, whoever moved them there and whenever.
	InQuarantine int `json:"in_quarantine"`
}

// CommitReport describes a drain commit.
type CommitReport struct {
	Time       time.Time `json:"time"`
	SnapshotID int64     `json:"snapshot_id"`
	Outcome    string    `json:"outcome"`
	Segments   int       `json:"segments"`
	Rows       int64     `json:"rows"`
	Files      int       `json:"files"`
	Bytes      int64     `json:"bytes"`
	Mark       string    `json:"mark"`
	Seconds    float64   `json:"seconds"`
}

// Publisher receives the drain's status as values it never writes again (the process shows them
// in /debug/status). Methods are called from the drain loop, and Backlog also from its backlog
// watcher while a batch runs, so an implementation must be safe for concurrent use.
type Publisher interface {
	Backlog(b Backlog)
	Committed(table string, c *CommitReport)
	Error(at time.Time, stage, table string, err error)
}

// BatchOutcome is what one batch's commit protocol did; observe turns it into metrics, status and
// log lines.
type BatchOutcome struct {
	// shutdown: the batch's context ended while it waited for its memory share; nothing ran.
	shutdown bool
	Table    string
	Stream   string
	Dir      string
	// StreamDir and ClaimEpoch are the stream directory and claim the batch ran under (claims on).
	StreamDir  string
	ClaimEpoch uint64
	// Fenced: the stream's claim was not validly held when the batch began or its commit was
	// tried, so the batch stopped (claim.Manager.Fenced counts it).
	Fenced bool
	// Quarantines are the batch's segments moved to quarantine, in order; the batch went on.
	Quarantines []Quarantine
	// HeldBefore are segments removed because the stream mark, PriorMark, already held them (a
	// crash between an earlier commit and its removal).
	HeldBefore []string
	PriorMark  marks.Mark
	// MarkerErrors are in-flight marker writes that failed (a full WAL disk); the batch went on.
	MarkerErrors []error
	// Written are the files the batch wrote, committed or not (their skipped footer indexes are
	// counted); Orphans are those it could not remove after a failure (left for gc), OrphanErr why.
	Written   []merge.Output
	Orphans   []string
	OrphanErr error
	// Tried is how many segments the commit was tried with (0: no commit was tried).
	Tried    int
	Segments int // segments whose rows this commit holds, removed
	Removed  int // segments removed in all (the above, plus those an earlier commit already held)
	Rows     int64
	// PastRetention are rows dropped before writing: already past their table's retention.
	PastRetention int64
	Files         int
	Bytes         int64
	Commit        lake.CommitResult
	// HandedOff: the commit went to a group committer, which may hold the files (kept on failure).
	HandedOff bool
	Mark      marks.Mark
	Took      time.Duration
	Cost      objstore.Cost
	// Stage is where a failed batch failed (read, table, write, commit, remove), for
	// siglake_drain_errors_total; "" when it did not, or failed where no stage is counted.
	Stage string
	Err   error
}

// observe records one batch's outcome.
func (d *Drain) observe(out BatchOutcome) {
	for _, q := range out.Quarantines {
		d.observeQuarantine(q)
	}
	if out.shutdown {
		return // a stop ended the wait for memory: no failure, nothing ran
	}
	d.observeSteps(out)
	if out.Table != "" {
		d.Metrics.SeeTable(out.Table)
	}
	if out.Stage != "" {
		d.Metrics.DrainErrors.WithLabelValues(out.Stage).Inc()
	}
	if out.Stage == "commit" {
		d.Metrics.Commits.WithLabelValues(out.Table, "failed").Inc()
	}
	if out.Removed > 0 { // committed now, or found committed by an earlier commit
		d.Metrics.SegmentsDrained.WithLabelValues(out.Table).Add(float64(out.Removed))
	}
	log := d.Log.With(zap.String("table", out.Table))
	if out.PastRetention > 0 && out.Err == nil {
		d.Metrics.RowsPastRetention.WithLabelValues(out.Table).Add(float64(out.PastRetention))
		log.Warn("dropped rows already past the table's retention (an old WAL replayed, or a clock far behind)",
			zap.String("stream", out.Stream), zap.Int("segments", out.Segments), zap.Int64("rows_dropped", out.PastRetention),
			zap.Int64("rows_kept", out.Rows), zap.Int64("snapshot_id", out.Commit.SnapshotID), zap.Stringer("mark", out.Mark))
	}
	if out.Err != nil {
		d.publisher().Error(d.Now(), "drain", out.Table, out.Err)
		log.Warn("drain batch failed; segments kept for the next cycle", zap.String("stream", out.Stream),
			zap.Int("segments_removed", out.Removed), zap.Bool("handed_off", out.HandedOff), zap.Error(out.Err))
		return
	}
	if out.Segments == 0 {
		return // nothing committed: every segment was quarantined or already committed
	}
	res := out.Commit
	d.Metrics.Commits.WithLabelValues(out.Table, string(res.Outcome)).Inc()
	d.Metrics.RowsCommitted.WithLabelValues(out.Table).Add(float64(out.Rows))
	d.Metrics.BytesCommitted.WithLabelValues(out.Table).Add(float64(out.Bytes))
	d.Metrics.CommitDuration.WithLabelValues(out.Table).Observe(out.Took.Seconds())
	d.Metrics.LastCommitSeconds.WithLabelValues(out.Table).Set(float64(d.Now().Unix()))
	d.publisher().Committed(out.Table, &CommitReport{
		Time: d.Now(), SnapshotID: res.SnapshotID, Outcome: string(res.Outcome), Segments: out.Segments,
		Rows: out.Rows, Files: out.Files, Bytes: out.Bytes, Mark: out.Mark.String(), Seconds: out.Took.Seconds(),
	})
	log.Info("drained batch", zap.Int64("snapshot_id", res.SnapshotID), zap.String("outcome", string(res.Outcome)),
		zap.Int("segments", out.Segments), zap.Int64("rows", out.Rows), zap.Int("files", out.Files),
		zap.Int64("bytes", out.Bytes), zap.Stringer("mark", out.Mark), zap.Duration("took", out.Took),
		zap.String("encoder", encoderOf(out.Written)), instrument.CostField(out.Cost))
}

// encoderOf names the Parquet encoder of a batch's files (one sink's options, so one encoder).
func encoderOf(outs []merge.Output) string {
	if len(outs) == 0 {
		return ""
	}
	return string(outs[0].Encoder)
}

// observeSteps records what the batch's steps met on the way: a fenced claim, segments an earlier
// commit held, marker write failures, files left for gc, the commit tried and its outcome.
func (d *Drain) observeSteps(out BatchOutcome) {
	if out.Fenced && d.Claims != nil {
		d.Claims.Fenced()
	}
	d.Metrics.Merge.CountSkipped(out.Written)
	log := d.Log.With(zap.String("table", out.Table))
	if out.StreamDir != "" {
		log = log.With(zap.String("stream_dir", out.StreamDir), zap.Uint64("claim_epoch", out.ClaimEpoch))
	}
	for _, p := range out.HeldBefore {
		log.Info("removed segment an earlier commit already holds", zap.String("path", p), zap.Stringer("mark", out.PriorMark))
	}
	for _, err := range out.MarkerErrors {
		d.Log.Warn("could not record the batch in flight (is the WAL disk full?); the batch goes on, but a kill during it will not be reported at the next start",
			zap.String("table", out.Table), zap.String("dir", out.Dir), zap.Error(err))
		if d.Metrics.MarkerErrors != nil {
			d.Metrics.MarkerErrors.Inc()
		}
	}
	if len(out.Orphans) > 0 {
		d.Log.Warn("could not remove uncommitted outputs; gc will", zap.Strings("paths", out.Orphans), zap.Error(out.OrphanErr))
	}
	if out.Commit.Outcome == lake.AlreadyCommitted {
		log.Warn("the stream mark shows the batch committed (a lost commit response, or another process drained this stream); not appending again",
			zap.Stringer("mark", out.Mark), zap.Int64("snapshot_id", out.Commit.SnapshotID))
	}
}

// observeQuarantine records a segment moved to quarantine, or that could not be.
func (d *Drain) observeQuarantine(q Quarantine) {
	d.publisher().Error(d.Now(), "quarantine", q.Table, q.Cause)
	if q.Err != nil {
		// Not counted: the metric counts segments moved, and this one is retried every cycle.
		d.Log.Error("could not quarantine bad segment; it stays in place", zap.String("path", q.Path),
			zap.String("reason", q.Reason), zap.NamedError("cause", q.Cause), zap.Error(q.Err))
		return
	}
	d.Metrics.Quarantined.WithLabelValues(q.Reason).Inc()
	d.quarantined++
	d.quarantineDirty = true
	d.Log.Error("quarantined bad segment", zap.String("table", q.Table), zap.String("path", q.Path),
		zap.String("quarantined_to", q.Dest), zap.String("reason", q.Reason), zap.NamedError("cause", q.Cause))
}

// observeScanErrors records the WAL dirs a cycle could not scan. Without claims the one WAL dir
// is all there is to drain, so its error ends the cycle; with claims the other streams go on.
func (d *Drain) observeScanErrors(now time.Time, errs []error) error {
	for _, err := range errs {
		d.Metrics.DrainErrors.WithLabelValues("scan").Inc()
		d.publisher().Error(now, "scan", "", err)
		if d.Claims == nil {
			return fmt.Errorf("%w (--wal-dir / SIGLAKE_WAL_DIR): %w", ErrWALDir, err)
		}
		d.Log.Warn("a claimed stream directory cannot be scanned; the other streams go on", zap.Error(err))
	}
	return nil
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

// nopPublisher publishes nothing (a drain without a process around it: tools, benchmarks).
type nopPublisher struct{}

func (nopPublisher) Backlog(Backlog)                        {}
func (nopPublisher) Committed(string, *CommitReport)        {}
func (nopPublisher) Error(time.Time, string, string, error) {}
