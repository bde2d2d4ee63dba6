package drain

import (
	"context"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake"
)

// commitAppend commits req in one catalog commit: directly, or through the group committer when
// one is set. handedOff: a committer may hold the files (handoff.GroupCommitter.Commit).
//
// It returns only once the outcome is known or the batch failed, and the drain loop waits for it:
// the pod invariant (Cycle) needs the stream's next batch to go out only after this one is known
// committed. Handing off without waiting, to overlap the next batch's write with this commit,
// would break exactly-once.
func (d *Drain) commitAppend(ctx context.Context, c *batchCommit, req lake.AppendRequest) (lake.CommitResult, bool, error) {
	if d.Group == nil {
		res, err := d.Lake.CommitAppend(ctx, req, d.Retry)
		return res, false, err
	}
	// Before the hand-off: a kill during it leaves files that a committer may still commit.
	c.flight.HandedOff = true
	d.recordInflight(c)
	res, handedOff, err := d.Group.Commit(ctx, c.table, req, c.epoch, c.at)
	d.beats.HandedOff(c.b.Dir, c.b.Table, c.stream, d.Now())
	return res, handedOff, err
}

// batchAge is a table's batch age: commitBatch.maxAge, or longer while its committer is behind.
func (d *Drain) batchAge(table string) time.Duration {
	if d.Group == nil {
		return d.Cfg.CommitBatchMaxAge
	}
	return max(d.Cfg.CommitBatchMaxAge, d.Group.SlowDown(table))
}

// heartbeat sends the heartbeats due after a cycle (handoff.Schedule.Due) from the scan taken at
// scan after its batches. Nothing of a stream is in flight then (commitBatch is synchronous), so
// whatever it sealed before its oldest segment left is committed.
func (d *Drain) heartbeat(pending []localwal.SegmentInfo, dirOf map[string]string, scan time.Time, ran map[string]bool) {
	if d.Group == nil {
		return
	}
	for _, b := range d.beats.Due(pending, dirOf, scan, ran, d.batchAge) {
		d.Group.Heartbeat(b.Table, b.Stream, scan, b.PendingSince)
	}
}
