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
	sendsOnce(t, "wait_ms", wait,
		func(c *CommitterConfig) { c.Interval, c.MaxWait = interval, wait },
		func(c *ClientConfig) { c.Interval, c.MaxWait, c.FallbackAfter = interval, 0, 30*time.Second })
}

// sendsOnce hands one batch from a pod configured by pod to a committer configured by committer,
// which commits it no sooner than after: the pod must wait for its answer (by the ack's field
// named by what), sending the batch once and never falling back.
func sendsOnce(t *testing.T, what string, after time.Duration, committer func(*CommitterConfig), pod func(*ClientConfig)) {
	t.Helper()
	cl := newCluster(t)
	cl.committer("owner", committer)
	p := cl.pod("owner", pod)
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
	if took < after-time.Second {
		t.Fatalf("committed after %v: the committer did not wait its %v", took, after)
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("%d sends of one batch in %v; want 1: the pod waits by the ack's %s", n, took, what)
	}
	if n := p.obs.count("fallback:" + FallbackTimeout); n != 0 {
		t.Fatalf("%d fallbacks", n)
	}
}

// TestLongWaitKeepsTheFallbackBound: the ack's wait_ms lengthens a pod's wait for its answer,
// but never past --group-commit-fallback-after since it last heard from its committer. Here the
// committer (max wait 5 s) hangs in the commit of the pod's batch and re-acks its resends; the
// pod (fallback after 8 s) commits directly at about 8 s, not at about twice that.
func TestLongWaitKeepsTheFallbackBound(t *testing.T) {
	const interval, wait, fallback = 50 * time.Millisecond, 5 * time.Second, 8 * time.Second
	cl := newCluster(t)
	_, _, _, cl1 := cl.committer("owner", func(c *CommitterConfig) { c.Interval, c.MaxWait = interval, wait })
	stalled, release := stall(t, cl1)
	p := cl.pod("owner", func(c *ClientConfig) { c.Interval, c.MaxWait, c.FallbackAfter = interval, 0, fallback })
	cl.seal(p, 1, 200, day)
	start := time.Now()
	if err := cl.drain(p, 3); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if !stalled() {
		t.Fatal("the committer's commit never hung: the test did not test the bound")
	}
	release()
	if n := p.obs.count("fallback:" + FallbackTimeout); n != 1 {
		t.Fatalf("%d timeout fallbacks, want 1", n)
	}
	if took > fallback+3*time.Second {
		t.Fatalf("fell back after %v; want about the %v fallback bound", took, fallback)
	}
	cl.checkOnce()
}

// TestPodWaitsOutTheCommittersInterval: a pod whose own --group-commit-interval is 100 ms hands a
// batch to a committer that commits every 5 s (a rollout changing the option). The ack's
// interval_ms makes the pod wait for that committer's round; by its own interval alone (an answer
// timeout of at most 3.45 s) it would re-read its mark and resend before the commit.
func TestPodWaitsOutTheCommittersInterval(t *testing.T) {
	const interval = 5 * time.Second
	sendsOnce(t, "interval_ms", interval,
		func(c *CommitterConfig) { c.Interval, c.MaxWait = interval, 0 },
		func(c *ClientConfig) {
			c.Interval, c.MaxWait, c.FallbackAfter = 100*time.Millisecond, 0, 30*time.Second
		})
}

// TestRefusedHandOffCommitsAtOnce: a hand-off the committer's transport refuses (another key, a
// wrong address: peermsg.ErrRefused) would be refused again on every resend, so the pod commits
// the batch directly at once, not after its 20 s fallback bound.
func TestRefusedHandOffCommitsAtOnce(t *testing.T) {
	cl := newCluster(t)
	cl.committer("owner", nil)
	p := cl.pod("owner", func(c *ClientConfig) { c.FallbackAfter = 20 * time.Second })
	cl.hub.SetFilter(func(m peermsg.LocalMessage) peermsg.Fate {
		return peermsg.Fate{Refuse: m.Kind() == KindRequest}
	})
	cl.seal(p, 1, 200, day)
	start := time.Now()
	if err := cl.drain(p, 3); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("committed after %v: the pod waited on a refusing committer", took)
	}
	cl.checkOnce()
	if n := p.obs.count("fallback:" + FallbackRefused); n != 1 {
		t.Fatalf("%d refused fallbacks, want 1 (%v)", n, p.obs.n)
	}
}
