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

// TestLandedAfterLostCatalogAnswer: the catalog applies a group commit and then cuts the
// connection; the retry finds every request covered by its mark. That commit landed: it counts as
// committed (commits_total, the requests it answered) and Landed is told, so a prune it carried is
// counted and not tried again.
func TestLandedAfterLostCatalogAnswer(t *testing.T) {
	cl := newCluster(t)
	var mu sync.Mutex
	var landed []string
	var cut atomic.Bool
	cut.Store(true)
	_, _, obs, l := cl.committer("owner", func(c *CommitterConfig) {
		c.Retry = lake.Retry{Attempts: 3, MinWait: time.Millisecond, MaxWait: time.Millisecond}
		c.Landed = func(name string) {
			mu.Lock()
			defer mu.Unlock()
			landed = append(landed, name)
		}
	})
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		md, loc, err := next(ctx, id, reqs, ups)
		if err == nil && cut.CompareAndSwap(true, false) {
			return nil, "", errors.New("read tcp: connection reset by peer")
		}
		return md, loc, err
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
	if cut.Load() {
		t.Fatal("the catalog never cut a commit's answer")
	}
	if obs.count("commit:"+CommitCommitted) != 1 || obs.count("committed") != 1 {
		t.Fatalf("%d committed group commits answering %d requests; want the one that landed, 1", obs.count("commit:"+CommitCommitted), obs.count("committed"))
	}
	if len(landed) != 1 || landed[0] != "events" {
		t.Fatalf("Landed told %v, want events once", landed)
	}
	if n := p.obs.count("done:" + OutcomeAlreadyCommitted); n != 1 || p.obs.fallbacks() != 0 {
		t.Fatalf("pod saw %d already committed, %d fallbacks; want 1 and 0", n, p.obs.fallbacks())
	}
}
