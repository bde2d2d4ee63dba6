package drain

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
)

// raceCommits runs first (another drainer's whole commit of the same stream) right before the
// first data commit through l reaches the catalog: both read the same mark. rest makes a failed
// requirement look as a REST catalog reports it. done says whether first ran.
func raceCommits(l *lake.Lake, rest bool, first func()) (done *atomic.Bool) {
	done = &atomic.Bool{}
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if done.CompareAndSwap(false, true) {
			first()
		}
		m, loc, err := next(ctx, id, reqs, ups)
		if err != nil && rest && strings.Contains(err.Error(), "requirement failed") {
			// A REST catalog answers a failed requirement with 409 CommitFailedException, which
			// iceberg-go's REST client maps to table.ErrCommitFailed.
			err = fmt.Errorf("%w: %v", table.ErrCommitFailed, err)
		}
		return m, loc, err
	})
	return done
}

// TestTwoDrainersReplay: two drainers of one stream (a holder past its fence and the taker)
// commit the same batch from the same mark. With iceberg-go's standard commit.retry.num-retries
// set on the table, the loser's Transaction.Commit refreshes, rewrites its assert-ref-snapshot-id
// to the new head and replays the append: the mark check in CommitAppend is bypassed.
func TestTwoDrainersReplay(t *testing.T) {
	for _, c := range []struct {
		retries string
		rest    bool
	}{{"", false}, {"4", false}, {"", true}, {"4", true}} {
		retries := c.retries
		t.Run(fmt.Sprintf("num-retries=%s,rest=%v", retries, c.rest), func(t *testing.T) {
			e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
			start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			want := e.writeSegments("events", 1, 500, 3, start)
			if _, err := e.drain.Cycle(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			if retries != "" {
				tb, err := e.lake.LoadTable(context.Background(), "events")
				if err != nil {
					t.Fatal(err)
				}
				txn := tb.NewTransaction()
				if err := txn.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: retries}); err != nil {
					t.Fatal(err)
				}
				if _, err := txn.Commit(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			want.Merge(e.writeSegments("events", 1, 500, 4, start.Add(time.Hour)))

			l2, err := lake.Open(context.Background(), e.cfg.Lake)
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			other := *e.drain
			other.Lake, other.Metrics, other.Publish = l2, newMetrics(), nil
			var otherCommitted int
			raced := raceCommits(e.lake, c.rest, func() {
				res, err := other.Cycle(context.Background(), true)
				otherCommitted = res.Committed
				t.Logf("other drainer: %+v %v", res, err)
			})
			res, err := e.drain.Cycle(context.Background(), true)
			t.Logf("this drainer: %+v %v", res, err)
			if !raced.Load() || otherCommitted != 1 {
				t.Fatalf("the race did not happen: injected %v, the other drainer committed %d batches (want 1)", raced.Load(), otherCommitted)
			}
			if got := e.tableSum("events"); got != want {
				t.Fatalf("table %+v, want %+v: one batch committed twice", got, want)
			}
		})
	}
}
