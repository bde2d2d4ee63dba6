package commit

import (
	"testing"
	"time"
)

// TestBusyIsNoProgress: a committer hung in a commit with its queue full (QueueMax 1) answers
// every other pod busy; such a pod still falls back after its fallback bound (reason timeout),
// not after the hand-off age bound (reason expired, 6 x the commit timeout).
func TestBusyIsNoProgress(t *testing.T) {
	cl := newCluster(t)
	_, _, _, cl1 := cl.committer("owner", func(c *CommitterConfig) { c.QueueMax = 1 })
	stalled, _ := stall(t, cl1) // released at the test's end
	first := cl.pod("owner", func(c *ClientConfig) { c.FallbackAfter = time.Second })
	cl.seal(first, 1, 300, day)
	second := cl.pod("owner", func(c *ClientConfig) { c.FallbackAfter = time.Second })
	cl.seal(second, 1, 300, day.Add(time.Hour))
	// The first pod's request is in the hung commit and fills the queue (it leaves the queue
	// when its commit ends); the second pod's comes once it hangs.
	firstDone := make(chan error, 1)
	go func() { firstDone <- cl.drain(first, 5) }()
	waitFor(t, "the committer's commit to hang", stalled)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cl.drain(second, 5) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("told busy for %v (busy %d times) and not fallen back: a 1 s fallback bound", time.Since(start), second.obs.count("busy"))
	}
	if second.obs.count("busy") == 0 || second.obs.count("fallback:"+FallbackTimeout) != 1 || second.obs.count("fallback:"+FallbackExpired) != 0 {
		t.Fatalf("second pod: %d busy, %d timeout and %d expired fallbacks; want busy, then one timeout fallback",
			second.obs.count("busy"), second.obs.count("fallback:"+FallbackTimeout), second.obs.count("fallback:"+FallbackExpired))
	}
	for _, ch := range []chan error{firstDone} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
}
