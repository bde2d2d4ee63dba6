package commit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// recvAs receives msg from the member it claims to come from, as an honest pod sends it.
func recvAs(q *Queue, msg []byte, now time.Time) Verdict {
	return q.Receive(partial(msg).From, msg, now)
}

// TestForgedFromRefused: a request whose From is not the member the transport's envelope names
// is refused, answered to the envelope's sender only, and counted; nothing of it is queued.
func TestForgedFromRefused(t *testing.T) {
	q := newTestQueue(8)
	r := request(1, "events", "s", 1) // From pod-s
	v := q.Receive("mallory", mustEncode(t, r), time.Now())
	if v.To != "mallory" || v.Reason != ReasonInvalid || v.Answer.Kind != KindDone || v.Answer.Outcome != OutcomeRefused ||
		!strings.Contains(v.Answer.Error, "not the sender") {
		t.Fatalf("verdict %+v: want refused to mallory, reason invalid", v)
	}
	if n, _ := q.Totals(); n != 0 {
		t.Fatalf("%d queued: a forged request was queued", n)
	}
	// A resend of a queued batch under another name does not move its answers either.
	if v := recvAs(q, mustEncode(t, r), time.Now()); v.Answer.Kind != KindAck {
		t.Fatalf("honest request: %+v", v)
	}
	if v := q.Receive("mallory", mustEncode(t, r), time.Now()); v.To != "mallory" || v.Reason != ReasonInvalid {
		t.Fatalf("forged resend: %+v", v)
	}
	if got := q.Pending("events")[0].Request.From; got != "pod-s" {
		t.Fatalf("answers of the queued request now go to %q", got)
	}
	h := Request{V: 1, ID: testID(9), From: "pod-h", Catalog: testCatalog, Table: "events", Stream: "h", ScanMs: 1}
	if v := q.Receive("mallory", mustEncode(t, h), time.Now()); v.To != "" || v.Reason != ReasonInvalid {
		t.Fatalf("forged heartbeat: %+v, want refused and not answered", v)
	}
}

// TestForgedFromNotAnsweredToVictim: through a committer, one member's request naming another
// member as From makes the committer answer the sender, never the member named.
func TestForgedFromNotAnsweredToVictim(t *testing.T) {
	hub := peermsg.NewLocalHub()
	v, obs := newView("owner"), newRecorder()
	v.owns = true
	c := NewCommitter(CommitterConfig{Interval: time.Hour, Observer: obs}, hub.Member("owner"), v)
	stop := runCommitter(t, c)
	defer stop()
	var mu sync.Mutex
	got := map[string]int{}
	for _, name := range []string{"mallory", "pod-s"} {
		hub.Member(name).Handle(KindAnswer, func(_ string, msg []byte) {
			mu.Lock()
			got[name]++
			mu.Unlock()
		})
	}
	msg := mustEncode(t, request(1, "events", "s", 1))
	waitFor(t, "the committer's handler", func() bool { return hubHandles(hub, "owner") })
	if err := hub.Member("mallory").Send("owner", msg); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refusal", func() bool { mu.Lock(); defer mu.Unlock(); return got["mallory"] == 1 })
	hub.Wait()
	mu.Lock()
	defer mu.Unlock()
	if got["pod-s"] != 0 || obs.count("refused:"+ReasonInvalid) != 1 {
		t.Fatalf("answers %v, refused invalid %d: want one answer to mallory only, counted", got, obs.count("refused:"+ReasonInvalid))
	}
}

// runCommitter runs c until the returned stop, which waits for Run to return.
func runCommitter(t *testing.T, c *Committer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
}

// hubHandles reports whether member handles requests yet (Run registers its handler).
func hubHandles(hub *peermsg.LocalHub, member string) bool {
	return hub.Member(member).Handles(KindRequest)
}
