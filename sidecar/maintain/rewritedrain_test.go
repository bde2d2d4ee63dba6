package maintain

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
)

// TestRewriteCommitsDespiteConcurrentAppends: in production the drains of every pod append to a
// table all the time, so a rewrite's replace nearly always meets a table that moved since the
// pass loaded it. An append does not touch the rewrite's inputs: the replace must commit on the
// new head (inputs still live), not be thrown away as a conflict. Rows stay exactly once.
func TestRewriteCommitsDespiteConcurrentAppends(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	// The maintainer is another process than the drain's: one Lake serialises its own commits of
	// a table (its table lock), so the race needs two.
	other, err := lake.Open(context.Background(), e.te.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	m := newMaintainer(t, e, other, func() time.Time { return now })
	// While armed, before runs ahead of the commit that reaches the catalog: another writer (the
	// drain of another pod) commits to the table while a rewrite is being committed.
	var armed atomic.Bool
	seed, appends := uint64(900), 0
	before := func() {
		// The drain commits new segments first: the table moves under the replace.
		seed++
		appends++
		want.Merge(e.writeSegments("events", 1, 200, seed, time.Date(2026, 11, 29, 7, 0, 0, 0, time.UTC)))
		if _, err := e.drain.Cycle(context.Background(), true); err != nil {
			t.Errorf("concurrent drain: %v", err)
		}
		if appends < 3 {
			armed.Store(true) // and again before the next commit
		}
	}
	catalogtest.Hook(m.Lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if armed.CompareAndSwap(true, false) {
			before()
		}
		return next(ctx, id, reqs, ups)
	})
	armed.Store(true)
	rep, err := m.Cycle(context.Background())
	armed.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	if appends != 3 {
		t.Fatalf("the concurrent drain committed %d times before the rewrite's commits, want 3: the fault did not fire", appends)
	}
	if rep.Rewrites == 0 {
		t.Fatalf("cycle %+v: no rewrite committed while other streams appended", rep)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
}
