package commit

import (
	"time"

	"github.com/apache/iceberg-go"
)

// Watermark is one table's complete-through state in its committer (docs/design/group-commit.md
// section 6.1): per stream, the seal time through which everything it sealed is committed.
type Watermark struct{}

// NewWatermark starts a table's watermark when this process began owning the table at since:
// nothing is published until it owned it for one liveness window (it heard every live pod).
func NewWatermark(since time.Time) *Watermark { return &Watermark{} }

// Heard records a heartbeat, or a request found committed (committed or already_committed), at now.
func (w *Watermark) Heard(r Request, now time.Time) {}

// Through is the table's complete-through time at now over the live streams, and how many are
// live; ok false: nothing to publish yet.
func (w *Watermark) Through(now time.Time) (t time.Time, live int, ok bool) {
	return time.Time{}, 0, false
}

// CompleteThroughProps is the siglake.complete-through property to set in the next group commit
// given the table's current properties, or nil when it did not advance by a second (written as
// the max of old and new: two committers, failover). by is the committer's member name.
func CompleteThroughProps(current iceberg.Properties, t time.Time, live int, by string) iceberg.Properties {
	return nil
}
