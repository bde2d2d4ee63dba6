package commit

import (
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// slowTo is a transport whose sends to one member block until released, as memberlist's do to a
// member that died but is still alive in gossip.
type slowTo struct {
	peermsg.Transport
	slow    string
	release chan struct{}
}

func (s slowTo) Send(member string, msg []byte) error {
	if member == s.slow {
		<-s.release
	}
	return s.Transport.Send(member, msg)
}

// TestSlowMemberDoesNotHoldOthersAnswers: answers to a member whose sends hang still leave for
// every other member at once; the hung ones follow once it answers, none lost.
func TestSlowMemberDoesNotHoldOthersAnswers(t *testing.T) {
	hub := peermsg.NewLocalHub()
	var mu sync.Mutex
	got := map[string][]string{}
	for _, name := range []string{"dead", "live"} {
		hub.Member(name).Handle(KindAnswer, func(_ string, msg []byte) {
			a, err := DecodeAnswer(msg)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[a.Stream] = append(got[a.Stream], a.ID)
			mu.Unlock()
		})
	}
	tr := slowTo{Transport: hub.Member("owner"), slow: "dead", release: make(chan struct{})}
	c := NewCommitter(CommitterConfig{Observer: NopObserver{}}, tr, newView("owner"))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); c.outbox.Run(stop) }()
	ids := []string{newID(), newID(), newID()}
	for _, id := range ids {
		c.answer("dead", Answer{V: Version, ID: id, Table: "events", Stream: "dead", Kind: KindAck})
		c.answer("live", Answer{V: Version, ID: id, Table: "events", Stream: "live", Kind: KindAck})
	}
	count := func(s string) int { mu.Lock(); defer mu.Unlock(); return len(got[s]) }
	deadline := time.Now().Add(5 * time.Second)
	for count("live") < len(ids) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if count("live") != len(ids) || count("dead") != 0 {
		t.Fatalf("while sends to dead hang: live got %d answers, dead %d; want %d and 0", count("live"), count("dead"), len(ids))
	}
	close(tr.release)
	close(stop)
	<-done
	hub.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, s := range []string{"dead", "live"} {
		if len(got[s]) != len(ids) {
			t.Fatalf("%s got %v, want %v", s, got[s], ids)
		}
	}
}
