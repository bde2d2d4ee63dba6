package commit

import (
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/membudget"
)

// TestQueueCountsAgainstMemoryBudget: queued requests hold their encoded bytes of the process
// memory budget, so a queue under a small budget answers busy instead of growing, and answering a
// request gives its bytes back.
func TestQueueCountsAgainstMemoryBudget(t *testing.T) {
	one := len(mustEncode(t, request(1, "events", "a", 1)))
	b := membudget.New(int64(one*3/2), membudget.Options{}) // room for one request, not two
	share := b.For(membudget.LoopGroupCommit)
	q := NewQueue(QueueConfig{Catalog: testCatalog, MaxFiles: 4, Interval: time.Second, Owner: owns("events"), Reserve: share.TryReserve})
	now := time.Now()
	if v := recvAs(q, mustEncode(t, request(1, "events", "a", 1)), now); v.Answer.Kind != KindAck {
		t.Fatalf("first request: %+v", v)
	}
	held := func() int64 { return b.Snapshot().HeldBytes }
	if held() != int64(one) {
		t.Fatalf("the budget holds %d, want the request's %d encoded bytes", held(), one)
	}
	v := recvAs(q, mustEncode(t, request(2, "events", "b", 1)), now)
	if v.Answer.Kind != KindBusy || v.Reason != ReasonBusy || v.Answer.SlowMs < 1000 {
		t.Fatalf("second request under a spent budget: %+v, want busy", v)
	}
	if n, _ := q.Totals(); n != 1 {
		t.Fatalf("%d queued, want 1", n)
	}
	q.Remove("events", testID(1))
	if held() != 0 {
		t.Fatalf("the budget holds %d after the request left", held())
	}
	if v := recvAs(q, mustEncode(t, request(2, "events", "b", 1)), now); v.Answer.Kind != KindAck {
		t.Fatalf("resend after the budget freed: %+v", v)
	}
	q.Close()
	if held() != 0 {
		t.Fatalf("the budget holds %d after Close", held())
	}
}

// TestCommitterBusyUnderMemoryBudget: a committer whose process memory budget is spent answers
// pods busy, and they keep their batches (no fallback while busy), committing once it frees.
func TestCommitterBusyUnderMemoryBudget(t *testing.T) {
	cl := newCluster(t)
	b := membudget.New(64<<10, membudget.Options{})
	hog, err := b.Acquire(t.Context(), membudget.LoopDrain, 64<<10) // the process's other loops hold it all
	if err != nil {
		t.Fatal(err)
	}
	_, _, cobs, _ := cl.committer("owner", func(c *CommitterConfig) { c.Reserve = b.For(membudget.LoopGroupCommit).TryReserve })
	p := cl.pod("owner", nil)
	cl.seal(p, 1, 300, day)
	done := cl.drainAsync()
	waitFor(t, "a busy answer", func() bool { return cobs.count("refused:"+ReasonBusy) > 0 })
	hog.Release()
	<-done
	cl.checkOnce()
	if p.obs.count("busy") == 0 || p.obs.fallbacks() != 0 || cobs.count("committed") != 1 {
		t.Fatalf("pod busy %d, fallbacks %d, committed %d: want busy, no fallback, then committed", p.obs.count("busy"), p.obs.fallbacks(), cobs.count("committed"))
	}
}
