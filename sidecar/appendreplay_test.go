package sidecar

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// raceCatalog runs `first` (another drainer's whole commit of the same stream) right before the
// first data commit of this drainer reaches the catalog: both read the same mark.
type raceCatalog struct {
	catalog.Catalog
	first func()
	done  atomic.Bool
	rest  bool
}

func (c *raceCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	t, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, c), nil
}

func (c *raceCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if c.done.CompareAndSwap(false, true) {
		c.first()
	}
	m, loc, err := c.Catalog.CommitTable(ctx, id, reqs, ups)
	if err != nil && c.rest && strings.Contains(err.Error(), "requirement failed") {
		// A REST catalog answers a failed requirement with 409 CommitFailedException, which
		// iceberg-go's REST client maps to table.ErrCommitFailed.
		err = fmt.Errorf("%w: %v", table.ErrCommitFailed, err)
	}
	return m, loc, err
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
			e := newEnv(t, func(c *Config) { c.CommitBatchTargetBytes = 0 })
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

			l2, err := lake.Open(context.Background(), LakeConfig(e.cfg))
			if err != nil {
				t.Fatal(err)
			}
			defer l2.Close()
			other := *e.drain
			other.Lake, other.Metrics, other.Status = l2, NewMetrics(), NewStatus("other", e.cfg.Role, "test", time.Now())
			var otherCommitted int
			rc := &raceCatalog{rest: c.rest, first: func() {
				res, err := other.Cycle(context.Background(), true)
				otherCommitted = res.Committed
				t.Logf("other drainer: %+v %v", res, err)
			}}
			e.lake.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { rc.Catalog = c; return rc })
			res, err := e.drain.Cycle(context.Background(), true)
			t.Logf("this drainer: %+v %v", res, err)
			if !rc.done.Load() || otherCommitted != 1 {
				t.Fatalf("the race did not happen: injected %v, the other drainer committed %d batches (want 1)", rc.done.Load(), otherCommitted)
			}
			if got := e.tableSum("events"); got != want {
				t.Fatalf("table %+v, want %+v: one batch committed twice", got, want)
			}
		})
	}
}
