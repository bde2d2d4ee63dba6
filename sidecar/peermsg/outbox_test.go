package peermsg

import (
	"sync/atomic"
	"testing"
	"time"
)

// blockTo is a transport whose sends to one member block until released.
type blockTo struct {
	Transport
	slow    string
	release chan struct{}
}

func (b blockTo) Send(member string, msg []byte) error {
	if member == b.slow {
		<-b.release
	}
	return b.Transport.Send(member, msg)
}

// TestOutboxSlowMemberHoldsNoOther: a member whose sends block does not hold another member's
// messages; beyond a member's bound messages are dropped and counted; Run sends what is queued
// before it returns.
func TestOutboxSlowMemberHoldsNoOther(t *testing.T) {
	hub := NewLocalHub()
	got := make(chan string, 16)
	for _, m := range []string{"dead", "live"} {
		hub.Member(m).Handle('x', func(string, []byte) { got <- m })
	}
	tr := blockTo{Transport: hub.Member("owner"), slow: "dead", release: make(chan struct{})}
	var dropped atomic.Int64
	o := NewOutbox(tr, 16, 2, func() { dropped.Add(1) })
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); o.Run(stop) }()
	for range 4 { // at most one in the blocked send and two in the box: one or two dropped
		o.Post("dead", []byte("x"))
	}
	o.Post("live", []byte("x"))
	select {
	case m := <-got:
		if m != "live" {
			t.Fatalf("got a message for %s first", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the live member's message waited for the dead member's")
	}
	waitDropped := time.Now().Add(10 * time.Second)
	for dropped.Load() == 0 && time.Now().Before(waitDropped) {
		time.Sleep(time.Millisecond)
	}
	if n := dropped.Load(); n < 1 || n > 2 {
		t.Fatalf("%d dropped, want those beyond the dead member's bound", n)
	}
	close(tr.release)
	close(stop)
	<-done
	hub.Wait()
	if n := len(got); n != 4-int(dropped.Load()) {
		t.Fatalf("%d messages to the dead member after its release, %d dropped: want 4 in all", n, dropped.Load())
	}
}
