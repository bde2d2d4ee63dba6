package drain

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
)

// lostResponses counts the commit responses loseResponses drops.
type lostResponses struct {
	lose   atomic.Int32 // responses still to lose
	losses atomic.Int32 // responses lost
}

// loseResponses makes l's catalog commit for real but, while lose > 0, report failure: the
// response was lost.
func loseResponses(l *lake.Lake) *lostResponses {
	lr := &lostResponses{}
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		m, loc, err := next(ctx, id, reqs, ups)
		if err == nil && lr.lose.Add(-1) >= 0 {
			lr.losses.Add(1)
			return nil, "", errors.New("read tcp: connection reset by peer (the commit went through; its response did not)")
		}
		return m, loc, err
	})
	return lr
}

// TestLostCommitResponseNoDuplicate: the catalog commits the batch but the drain sees an error.
// The retry re-reads the stream mark, sees the batch is in, and appends nothing again.
func TestLostCommitResponseNoDuplicate(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 2, 5000, 7, start)
	// Create the table first so the lossy wrapper only meets data commits.
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	lossy := loseResponses(e.lake)
	want.Merge(e.writeSegments("events", 3, 5000, 8, start.Add(time.Hour)))
	lossy.lose.Store(3) // each of the three segments' commits loses its response once

	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if lossy.losses.Load() != 3 {
		t.Fatalf("%d responses lost, want 3", lossy.losses.Load())
	}
	if res.Segments != 3 || res.Pending != 0 {
		t.Fatalf("cycle %+v", res)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v (a lost response duplicated or lost rows)", got, want)
	}
	if n := counterValue(t, e.drain.Metrics, "siglake_drain_commits_total", "already_committed"); n != 3 {
		t.Fatalf("already_committed commits = %v, want 3", n)
	}
}
