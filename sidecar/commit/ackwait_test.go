package commit

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// TestPodWaitsOutTheCommittersMaxWait: a pod whose own --group-commit-max-wait is 0 hands a
// batch to a committer that waits 6 s for a fuller commit. The ack's wait_ms makes the pod wait
// for that committer's answer; by its own setting alone (an answer timeout of at most 3.2 s) it
// would re-read its mark and resend before the commit.
func TestPodWaitsOutTheCommittersMaxWait(t *testing.T) {
	const interval, wait = 50 * time.Millisecond, 6 * time.Second
	cl := newCluster(t)
	cl.committer("owner", func(c *CommitterConfig) { c.Interval, c.MaxWait = interval, wait })
	p := cl.pod("owner", func(c *ClientConfig) { c.Interval, c.MaxWait, c.FallbackAfter = interval, 0, 30*time.Second })
	var sent atomic.Int32
	cl.hub.SetFilter(func(m peermsg.LocalMessage) peermsg.Fate {
		if m.Kind() == KindRequest {
			sent.Add(1)
		}
		return peermsg.Fate{}
	})
	cl.seal(p, 1, 200, day)
	start := time.Now()
	if err := cl.drain(p, 3); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	cl.checkOnce()
	if took < wait-time.Second {
		t.Fatalf("committed after %v: the committer did not wait its %v", took, wait)
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d sends of one batch in %v; want 1: the pod waits by the ack's wait_ms", n, took)
	}
	if n := p.obs.count("fallback:" + FallbackTimeout); n != 0 {
		t.Fatalf("%d fallbacks", n)
	}
}
