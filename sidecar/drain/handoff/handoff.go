// Package handoff is what the drain needs of group commit (docs/design/group-commit.md section
// 3): the GroupCommitter it hands a batch's commit to, declared here so the drain does not import
// the committer's room, and the pure schedule of the heartbeats that tell a committer a stream
// has nothing in flight. Time is an argument.
package handoff

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake"
)

// GroupCommitter hands a batch's commit to the table's group committer. The process wires
// sidecar/commit's client here.
type GroupCommitter interface {
	// Commit hands req (its files written) to the table's committer and waits for the outcome;
	// after its own bounds it commits directly with lake.CommitAppend. The result and error mean
	// what CommitAppend's do (lake.ErrMarkAhead included). handedOff: some committer may hold
	// the files, so they may still be committed after an error and must never be deleted.
	// at is the stream's progress the committer's watermark takes once the batch is committed.
	Commit(ctx context.Context, t *table.Table, req lake.AppendRequest, epoch uint64, at Progress) (res lake.CommitResult, handedOff bool, err error)
	// Heartbeat tells the committer that stream has nothing in flight for table: every segment
	// it sealed before pendingSince (zero: before scan) is committed. Fire and forget.
	Heartbeat(table, stream string, scan, pendingSince time.Time)
	// SlowDown is the batch age the table's committer asks for (0: none): it is behind.
	SlowDown(table string) time.Duration
}

// Progress is what a batch's commit tells its committer about the stream (the complete-through
// watermark, docs/group-commit.md): once the batch is committed, every segment of its (WAL dir,
// table) sealed before PendingSince is, or, when PendingSince is zero, every one sealed before Scan.
type Progress struct {
	Scan         time.Time // when the scan that planned the batch started
	PendingSince time.Time // the oldest segment that scan found and the batch leaves for later; zero: none
	// More: another batch of this (WAL dir, table) is due in the same cycle, right after this one
	// (a catch-up): its committer commits at the next interval instead of waiting for others.
	More bool
}

// ProgressOf is the Progress of a batch of segments in (dir, table) planned from segs (the whole
// scan; dirOf maps a segment's path to its dir) taken at scan. Segments older than the batch's are
// already committed: the drain plans a (dir, table) from its oldest segment on.
func ProgressOf(dir, table string, batch, segs []localwal.SegmentInfo, dirOf map[string]string, scan time.Time) Progress {
	in := make(map[string]bool, len(batch))
	for _, s := range batch {
		in[s.Path] = true
	}
	at := Progress{Scan: scan}
	for _, s := range segs {
		if s.Table != table || dirOf[s.Path] != dir || in[s.Path] {
			continue
		}
		if at.PendingSince.IsZero() || s.ModTime.Before(at.PendingSince) {
			at.PendingSince = s.ModTime
		}
	}
	return at
}

// Forget is how long a (WAL dir, table) keeps heartbeating after its last hand-off.
const Forget = time.Hour

// Beat is one heartbeat to send.
type Beat struct {
	Table, Stream string
	PendingSince  time.Time // the oldest sealed segment still in the WAL dir; zero: none
}

// Key names a (WAL dir, table): the unit that has at most one commit in flight.
func Key(dir, table string) string { return dir + "\x00" + table }

// grouped is a (WAL dir, table) whose batches went to a group committer.
type grouped struct {
	table, stream string
	handed, beat  time.Time // last hand-off, last heartbeat
}

// Schedule remembers the (WAL dir, table) pairs that hand off, and says when each heartbeats.
// The zero value is ready; one goroutine uses it (the drain loop).
type Schedule struct {
	grouped map[string]*grouped
}

// HandedOff records that a batch of stream in (dir, table) went to a committer at now.
func (s *Schedule) HandedOff(dir, table, stream string, now time.Time) {
	if s.grouped == nil {
		s.grouped = map[string]*grouped{}
	}
	g := s.grouped[Key(dir, table)]
	if g == nil {
		g = &grouped{table: table}
		s.grouped[Key(dir, table)] = g
	}
	g.stream, g.handed = stream, now
}

// Due are the heartbeats of a scan taken at scan, after a drain cycle's batches, that found
// pending (dirOf maps a segment's path to its dir): one per grouped (WAL dir, table) that had no
// batch this cycle (ran, by Key) and no heartbeat for its batch age (age). A pair that has not
// handed off for Forget is forgotten. Due marks what it returns as sent.
func (s *Schedule) Due(pending []localwal.SegmentInfo, dirOf map[string]string, scan time.Time, ran map[string]bool, age func(table string) time.Duration) []Beat {
	oldest := map[string]time.Time{}
	for _, p := range pending {
		key := Key(dirOf[p.Path], p.Table)
		if o, ok := oldest[key]; !ok || p.ModTime.Before(o) {
			oldest[key] = p.ModTime
		}
	}
	var out []Beat
	for key, g := range s.grouped {
		switch {
		case scan.Sub(g.handed) > Forget:
			delete(s.grouped, key)
		case ran[key] || scan.Sub(g.beat) < age(g.table):
		default:
			out = append(out, Beat{Table: g.table, Stream: g.stream, PendingSince: oldest[key]})
			g.beat = scan
		}
	}
	return out
}
