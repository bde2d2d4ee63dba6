package commit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestMaxWaitGathersCommits: with group-commit-max-wait well above the interval, the batches of
// pods draining 200 ms apart wait for each other and land in one commit, the first no longer
// than the wait; at the interval alone they land one commit each; and a queue holding the
// target bytes commits at the next interval without waiting.
func TestMaxWaitGathersCommits(t *testing.T) {
	// Bounds are loose for the race detector on a loaded machine; each broken rule misses them by
	// seconds (the backlog without `more` took 4 max waits).
	const interval, wait, pods, gap = 100 * time.Millisecond, 3 * time.Second, 4, 200 * time.Millisecond
	run := func(maxWait time.Duration, target int64, segments ...int) (commits int, first time.Duration) {
		cl := newCluster(t)
		cl.committer("owner", func(c *CommitterConfig) { c.Interval, c.MaxWait, c.TargetBytes = interval, maxWait, target })
		if len(segments) == 0 {
			segments = []int{1, 1, 1, 1}
		}
		for i, n := range segments {
			p := cl.pod("owner", func(c *ClientConfig) { c.Interval, c.MaxWait = interval, maxWait })
			cl.seal(p, n, 200, day.Add(time.Duration(i)*time.Hour))
		}
		before := 0
		if _, err := cl.base.Lake.LoadTable(context.Background(), "events"); err == nil {
			before = cl.snapshots()
		}
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for i, p := range cl.pods {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * gap)
				if err := cl.drain(p, 5); err != nil {
					t.Error(err)
				}
				if i == 0 {
					mu.Lock()
					first = time.Since(start)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		cl.checkOnce()
		return cl.snapshots() - before, first
	}
	if n, first := run(wait, 0); n != 1 || first < wait-2*interval || first > wait+3*time.Second {
		t.Errorf("max wait %v: %d commits, the first batch visible after %v; want 1 commit after about %v", wait, n, first, wait)
	}
	if n, _ := run(0, 0); n < pods-1 {
		t.Errorf("no max wait: %d commits for %d batches %v apart at a %v interval; want about one each", n, pods, gap, interval)
	}
	if n, first := run(wait, 1); n < pods-1 || first > wait*3/4 {
		t.Errorf("target bytes reached by every batch: %d commits, the first visible after %v; want one a batch, well before %v", n, first, wait)
	}
	// A pod with a backlog sends one batch at a time, each saying more wait behind it: they go at
	// the interval, not one per max wait (which would hold a catching-up pod to a batch per 2 s).
	if n, took := run(wait, 0, 4); n != 4 || took > 2*wait+time.Second {
		t.Errorf("one pod's 4 batches: %d commits in %v; want 4, the last one waiting out the max wait (%v), the others not", n, took, wait)
	}
}
