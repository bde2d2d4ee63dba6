package lake_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/lib/pq"

	"github.com/siglake/siglake/sidecar/lake"
)

// fullCatalog refuses its first loads and table commits as a PostgreSQL with no connection left
// does (53300), then passes them on.
type fullCatalog struct {
	catalog.Catalog
	loads, commits atomic.Int32 // refusals left
}

var errFull = &pq.Error{Code: "53300", Message: "sorry, too many clients already"}

func (c *fullCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	if c.loads.Add(-1) >= 0 {
		return nil, errFull
	}
	t, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, c), nil
}

func (c *fullCatalog) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	if c.commits.Add(-1) >= 0 {
		return nil, "", errFull
	}
	return c.Catalog.CommitTable(ctx, id, reqs, ups)
}

// TestFullCatalogWaitedOut: loads and commits refused for want of a connection are made again
// after a backoff, each wait reported, and none counts as an attempt: a group allowed one
// attempt commits, its outcome known (a refused connection applied nothing).
func TestFullCatalogWaitedOut(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	ia, _ := item(t, l, "a", 1, 1)
	fc := &fullCatalog{}
	fc.loads.Store(2)
	fc.commits.Store(3)
	l.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { fc.Catalog = c; return fc })
	var mu sync.Mutex
	seen := map[string]int{}
	l.WatchFull(func(e lake.FullEvent) {
		mu.Lock()
		defer mu.Unlock()
		if e.Wait <= 0 || e.Err == nil {
			t.Errorf("event %+v: want its refusal and a wait", e)
		}
		seen[e.Op]++
	})
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia}}, lake.Retry{Attempts: 1})
	if err != nil {
		t.Fatalf("the group failed on a full catalog: %v", err)
	}
	if res.Items[0].Outcome != lake.Committed || res.MaybeCommitted || res.Attempts != 1 {
		t.Fatalf("result %+v: want committed in one attempt, outcome known", res)
	}
	mu.Lock()
	defer mu.Unlock()
	// The refused commits' attempts load again: 2 refused loads, 3 refused commits.
	if seen["load"] != 2 || seen["commit"] != 3 {
		t.Fatalf("waits reported %v, want 2 loads and 3 commits", seen)
	}
}
