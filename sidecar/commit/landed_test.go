package commit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
)

// TestLandedOnlyAfterACommitLanded: Landed (the mark prune's tick) is told of a group commit that
// landed, and not of one whose attempts all conflicted: the first group commit fails, the pod's
// resend commits, and Landed is told exactly once, after that one.
func TestLandedOnlyAfterACommitLanded(t *testing.T) {
	cl := newCluster(t)
	var mu sync.Mutex
	var landed []string
	var failing atomic.Bool
	failing.Store(true)
	_, _, obs, l := cl.committer("owner", func(c *CommitterConfig) {
		c.Retry = lake.Retry{Attempts: 1, MinWait: time.Millisecond, MaxWait: time.Millisecond}
		c.Landed = func(name string) {
			mu.Lock()
			defer mu.Unlock()
			landed = append(landed, name)
		}
	})
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if failing.CompareAndSwap(true, false) {
			return nil, "", errors.New("requirement failed: branch main has changed")
		}
		return next(ctx, id, reqs, ups)
	})
	setup := cl.pod("", nil) // creates the table, committing directly
	cl.seal(setup, 1, 100, day)
	cl.drainAll()
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 300, day.Add(time.Hour))
	cl.drainAll()
	cl.checkOnce()
	mu.Lock()
	defer mu.Unlock()
	if obs.count("commit:"+CommitConflict) != 1 || obs.count("commit:"+CommitCommitted) != 1 {
		t.Fatalf("conflicted %d, committed %d group commits; want 1 and 1", obs.count("commit:"+CommitConflict), obs.count("commit:"+CommitCommitted))
	}
	if len(landed) != 1 || landed[0] != "events" {
		t.Fatalf("Landed told %v, want events once: only the commit that landed", landed)
	}
}
