package commit

import (
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// TestStopAnswersNotOwner: a committer that stops answers the requests it still holds not_owner,
// and every request that reaches it after it stopped too, so their pods ask the next owner at once
// instead of waiting out an answer timeout.
func TestStopAnswersNotOwner(t *testing.T) {
	hub := peermsg.NewLocalHub()
	v, obs := newView("owner"), newRecorder()
	v.owns = true
	c := NewCommitter(CommitterConfig{Interval: time.Hour, Observer: obs}, hub.Member("owner"), v)
	stop := runCommitter(t, c)
	defer stop()
	var mu sync.Mutex
	kinds := map[string][]string{} // request id -> answer kinds
	hub.Member("pod-s").Handle(KindAnswer, func(_ string, msg []byte) {
		if a, err := DecodeAnswer(msg); err == nil {
			mu.Lock()
			kinds[a.ID] = append(kinds[a.ID], a.Kind)
			mu.Unlock()
		}
	})
	answered := func(id, kind string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			k := kinds[id]
			return len(k) > 0 && k[len(k)-1] == kind
		}
	}
	waitFor(t, "the committer's handler", func() bool { return hubHandles(hub, "owner") })
	held := request(1, "events", "s", 1)
	if err := hub.Member("pod-s").Send("owner", mustEncode(t, held)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ack", answered(held.ID, KindAck))
	start := time.Now()
	stop()
	waitFor(t, "not_owner for the held request", answered(held.ID, KindNotOwner))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("not_owner %v after the stop", took)
	}
	late := request(2, "events", "s2", 1)
	late.From = "pod-s"
	if err := hub.Member("pod-s").Send("owner", mustEncode(t, late)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "not_owner for a request after the stop", answered(late.ID, KindNotOwner))
	if n := obs.count("refused:" + ReasonNotOwner); n != 2 {
		t.Fatalf("refused not_owner %d, want 2", n)
	}
}

// TestStopReroutesPods: a pod whose request a stopping committer held reaches the next owner
// without waiting out its answer timeout, and its rows land once.
func TestStopReroutesPods(t *testing.T) {
	cl := newCluster(t)
	_, _, oldObs, _ := cl.committer("old", func(c *CommitterConfig) { c.Interval = time.Hour })
	cl.committer("new", nil)
	var stoppedAt time.Time
	var once sync.Once
	stopped := make(chan struct{})
	oldObs.onQueued = func(_ string, n int) {
		if n > 0 {
			once.Do(func() {
				go func() {
					stoppedAt = time.Now()
					cl.stop["old"]()
					close(stopped)
				}()
			})
		}
	}
	p := cl.pod("old", nil)
	p.view.moves("old", "new")
	cl.seal(p, 1, 300, day)
	cl.drainAll()
	<-stopped
	took := time.Since(stoppedAt)
	t.Logf("the pod's batch was visible %v after its committer stopped", took)
	cl.checkOnce()
	if timeout := p.client.answerTimeout(); took > timeout/2 {
		t.Fatalf("the pod reached the next owner %v after the stop; its answer timeout is %v", took, timeout)
	}
	if p.obs.fallbacks() != 0 {
		t.Fatalf("the pod fell back %d times", p.obs.fallbacks())
	}
}
