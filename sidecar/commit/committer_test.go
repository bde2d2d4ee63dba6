package commit

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/peermsg"
)

var day = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// TestGroupCommitManyPods: N pods' drains hand every batch to one committer, which commits them
// in fewer snapshots than batches; every row is in once and no pod fell back.
func TestGroupCommitManyPods(t *testing.T) {
	cl := newCluster(t)
	const interval = 300 * time.Millisecond
	c, _, cobs, _ := cl.committer("owner", func(c *CommitterConfig) { c.Interval = interval })
	const pods, segments = 6, 3
	for i := 0; i < pods; i++ {
		// The pods' interval is the committer's, as one option sets both in a fleet.
		p := cl.pod("owner", func(c *ClientConfig) { c.Interval = interval })
		cl.seal(p, segments, 500, day.Add(time.Duration(i)*time.Hour))
	}
	cl.drainAll()
	cl.checkOnce()
	batches := pods * segments
	if n := cl.snapshots(); n >= batches || n == 0 {
		t.Fatalf("%d snapshots for %d batches: group commit did not group", n, batches)
	}
	if n := cobs.count("committed"); n != batches {
		t.Fatalf("the committer committed %d requests, want %d", n, batches)
	}
	// A pod whose answer is slower than its answer timeout (a loaded machine) learns the outcome
	// from its re-read mark instead: already committed, by the committer all the same.
	for _, p := range cl.pods {
		served := p.obs.count("done:"+OutcomeCommitted) + p.obs.count("done:"+OutcomeAlreadyCommitted)
		if n := p.obs.fallbacks(); n != 0 || served != segments {
			t.Fatalf("%s: %d fallbacks, %d served by the committer; want 0 and %d", p.name, n, served, segments)
		}
	}
	grouped := false
	for _, s := range cl.table().Metadata().Snapshots() {
		if n := s.Summary.Properties[tableprops.SumGroupRequests]; n != "" && n != "1" {
			grouped = true
		}
	}
	if !grouped {
		t.Fatal("no snapshot summary counts more than one request")
	}
	st := c.Status()
	if len(st.Tables) != 1 || st.Tables[0].LastCommit == nil || len(st.Tables[0].Members) != pods {
		t.Fatalf("status %+v: want events with its last commit and %d members", st, pods)
	}
}

// TestGroupAnswerLost: the committer commits but its answer is lost. The pod hears nothing, re-
// reads its stream's mark, finds the batch in and goes on: one send, no fallback, no duplicate.
func TestGroupAnswerLost(t *testing.T) {
	cl := newCluster(t)
	cl.committer("owner", nil)
	p := cl.pod("owner", nil)
	cl.seal(p, 2, 500, day)
	var lost atomic.Int32
	cl.hub.SetFilter(func(m peermsg.LocalMessage) peermsg.Fate {
		if m.Kind() != KindAnswer {
			return peermsg.Fate{}
		}
		a, err := DecodeAnswer(m.Msg)
		if err == nil && a.Outcome == OutcomeCommitted {
			lost.Add(1)
			return peermsg.Fate{Drop: true}
		}
		return peermsg.Fate{}
	})
	cl.drainAll()
	cl.checkOnce()
	if lost.Load() != 2 {
		t.Fatalf("%d committed answers lost, want both", lost.Load())
	}
	if n := cl.hub.Sent(KindRequest); n != 2 {
		t.Fatalf("%d requests sent for 2 batches: the pod resent instead of reading the mark", n)
	}
	if n := p.obs.count("done:" + OutcomeAlreadyCommitted); n != 2 || p.obs.fallbacks() != 0 {
		t.Fatalf("pod saw %d already committed, %d fallbacks; want 2 and 0", n, p.obs.fallbacks())
	}
	if n := cl.snapshots(); n != 2 {
		t.Fatalf("%d snapshots, want 2", n)
	}
}

// TestPausedCommitterResumes: the committer's commit hangs past the pod's fallback bound; the pod
// commits the same files directly. When the committer resumes, its commit (pinned to the head it
// read) conflicts, the re-read mark covers the batch, and nothing is doubled.
func TestPausedCommitterResumes(t *testing.T) {
	cl := newCluster(t)
	c, _, cobs, cl1 := cl.committer("owner", nil)
	stalled, release := stall(t, cl1)
	p := cl.pod("owner", func(c *ClientConfig) { c.FallbackAfter = time.Second })
	cl.seal(p, 1, 500, day)
	drained := cl.drainAsync()
	waitFor(t, "the committer's commit to hang", stalled)
	if st := p.client.Status(); len(st.Outstanding) != 1 || st.Outstanding[0].To != "owner" || st.Outstanding[0].Sends != 1 ||
		st.Outstanding[0].LastAnswer != KindAck {
		t.Errorf("pod status %+v: want its request to owner, sent once, acked", st)
	}
	<-drained
	if n := p.obs.count("fallback:" + FallbackTimeout); n != 1 {
		t.Fatalf("%d timeout fallbacks, want 1", n)
	}
	release()
	waitFor(t, "the resumed committer's round", func() bool { st := c.Status(); return len(st.Tables) == 1 && st.Tables[0].QueueRequests == 0 })
	cl.checkOnce()
	if n := cl.snapshots(); n != 1 {
		t.Fatalf("%d snapshots, want the direct commit's only", n)
	}
	if cobs.count("committed") != 0 {
		t.Fatal("the resumed committer committed the batch again")
	}
}

// TestExpiredRequest: a request older than the hand-off age bound when its round comes is not
// committed: the committer answers expired and the pod commits directly.
func TestExpiredRequest(t *testing.T) {
	cl := newCluster(t)
	var skew atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	_, _, cobs, _ := cl.committer("owner", func(c *CommitterConfig) {
		c.Now, c.CommitTimeout = now, time.Second
		c.Interval = 200 * time.Millisecond
	})
	cobs.onQueued = func(_ string, n int) {
		if n > 0 { // received: the committer pauses past the bound before its round
			skew.Store(int64(time.Hour))
		}
	}
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 500, day)
	cl.drainAll()
	cl.checkOnce()
	if n := p.obs.count("fallback:" + FallbackExpired); n != 1 {
		t.Fatalf("%d expired fallbacks, want 1", n)
	}
	if n := cobs.count("refused:" + OutcomeExpired); n != 1 || cobs.count("committed") != 0 {
		t.Fatalf("committer: %d expired, %d committed; want 1 and 0", n, cobs.count("committed"))
	}
}

// TestTwoCommitters: two committers on two Lakes both believe they own the table. Half the pods
// send to the first, which is paused; they time out and resend to the second; then the first
// resumes with their requests. Marks decide: every row once.
func TestTwoCommitters(t *testing.T) {
	cl := newCluster(t)
	_, _, c1obs, _ := cl.committer("c1", nil)
	_, _, c2obs, _ := cl.committer("c2", nil)
	var c1answers atomic.Int32
	var released atomic.Bool
	cl.hub.SetFilter(func(m peermsg.LocalMessage) peermsg.Fate {
		switch {
		case m.To == "c1" && m.Kind() == KindRequest && !released.Load():
			return peermsg.Fate{Hold: true}
		case m.To == "c2" && m.Kind() == KindRequest && strings.HasPrefix(m.From, "pod-0") && released.CompareAndSwap(false, true):
			go cl.hub.Release() // c1 resumes while c2 takes the resends
		case m.From == "c1" && m.Kind() == KindAnswer:
			if a, err := DecodeAnswer(m.Msg); err == nil && a.Kind == KindDone {
				c1answers.Add(1)
			}
		}
		return peermsg.Fate{}
	})
	for i := 0; i < 4; i++ {
		first := "c2"
		if i < 2 {
			first = "c1"
		}
		cl.pod(first, nil).view.moves(first, "c2")
		cl.seal(cl.pods[i], 2, 500, day.Add(time.Duration(i)*time.Hour))
	}
	cl.drainAll()
	cl.hub.Wait()
	waitFor(t, "c1's answers to the released requests", func() bool { return c1answers.Load() >= 2 })
	cl.checkOnce()
	// Both committers had pod-0's batch (its resend to c2 released c1's held copy; pod-1's may
	// have been answered by c1 before it resent): one committed it, the other found it under the
	// mark and says so (siglake_group_commit_answers_total).
	second := 0
	for _, o := range []*recorder{c1obs, c2obs} {
		second += o.count("answered:"+OutcomeAlreadyCommitted) + o.count("answered:"+OutcomeMarkAhead)
	}
	if second < 1 {
		t.Fatalf("no answer found a batch committed by the other committer (c1 %v, c2 %v)", c1obs.n, c2obs.n)
	}
	for _, p := range cl.pods {
		if n := p.obs.fallbacks(); n != 0 {
			t.Fatalf("%s fell back %d times: a resend elsewhere should have done", p.name, n)
		}
	}
}

// TestStopFinishesCommitInFlight: a committer stopped during a commit returns only after the
// commit ended, and the answer still reaches the pod: no fallback, no second commit.
func TestStopFinishesCommitInFlight(t *testing.T) {
	cl := newCluster(t)
	_, _, cobs, l := cl.committer("owner", nil)
	stalled, release := stall(t, l)
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 500, day)
	drained := cl.drainAsync()
	waitFor(t, "the committer's commit to hang", stalled)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		cl.stop["owner"]()
	}()
	select {
	case <-stopped:
		t.Fatal("Run returned with a commit in flight")
	case <-time.After(300 * time.Millisecond):
	}
	release()
	<-stopped
	<-drained
	if cobs.count("committed") != 1 || p.obs.count("done:"+OutcomeCommitted) != 1 || p.obs.fallbacks() != 0 {
		t.Fatalf("committer committed %d, pod heard committed %d and fell back %d times; want 1, 1, 0",
			cobs.count("committed"), p.obs.count("done:"+OutcomeCommitted), p.obs.fallbacks())
	}
	cl.checkOnce()
}

// TestTidyForgetsLostTables: once the lease moved away and the table's loop idled out, Tidy drops
// the table from the committer's status and its gauges (Forget); an owned table stays.
func TestTidyForgetsLostTables(t *testing.T) {
	cl := newCluster(t)
	c, v, cobs, _ := cl.committer("owner", nil)
	p := cl.pod("owner", nil)
	cl.seal(p, 2, 200, day)
	cl.drainAll()
	c.Tidy()
	if st := c.Status(); len(st.Tables) != 1 || cobs.count("forget") != 0 {
		t.Fatalf("owned table tidied away: %+v", st)
	}
	v.set(func(v *view) { v.owns = false })
	c.Tidy()
	if st := c.Status(); len(st.Tables) != 0 || cobs.count("forget") != 1 {
		t.Fatalf("after the lease moved: status %+v, %d forgets", st, cobs.count("forget"))
	}
}
