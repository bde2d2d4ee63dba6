package peermsg

import (
	"bytes"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestLocalHubDelivers: a copy of each message reaches the handler of its kind; the filter drops,
// holds (until Release) and delays messages; sends are counted; an unknown member is an error.
func TestLocalHubDelivers(t *testing.T) {
	hub := NewLocalHub()
	a, b := hub.Member("a"), hub.Member("b")
	var mu sync.Mutex
	var got []string
	if b.Handles('x') {
		t.Fatal("a handler before Handle")
	}
	b.Handle('x', func(from string, msg []byte) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, from+":"+string(msg[1:]))
	})
	hub.SetFilter(func(m LocalMessage) Fate {
		switch string(m.Msg[1:]) {
		case "drop":
			return Fate{Drop: true}
		case "hold":
			return Fate{Hold: true}
		case "late":
			return Fate{Delay: 50 * time.Millisecond}
		}
		return Fate{}
	})
	if !b.Handles('x') || b.Handles('y') {
		t.Fatal("Handles does not say which kinds have a handler")
	}
	msg := []byte("xnow")
	for _, m := range [][]byte{msg, []byte("xdrop"), []byte("xhold"), []byte("xlate"), []byte("ynobody")} {
		if err := a.Send("b", m); err != nil {
			t.Fatal(err)
		}
	}
	msg[1] = 'N' // the sender's buffer is its own again
	hub.Wait()
	slices.Sort(got)
	if !slices.Equal(got, []string{"a:late", "a:now"}) {
		t.Fatalf("delivered %q, want a:now and a:late", got)
	}
	if n := hub.Release(); n != 1 {
		t.Fatalf("released %d, want the held one", n)
	}
	hub.Wait()
	if len(got) != 3 || got[2] != "a:hold" {
		t.Fatalf("delivered %q after release", got)
	}
	if hub.Sent('x') != 4 || hub.Sent('y') != 1 {
		t.Fatalf("sent x %d y %d, want 4 and 1", hub.Sent('x'), hub.Sent('y'))
	}
	if err := a.Send("c", []byte("x")); !errors.Is(err, ErrNoMember) {
		t.Fatalf("send to an unknown member: %v", err)
	}
}

// TestLoopbackKeepsSelfSends: through Loopback a message to oneself arrives even when the wrapped
// transport loses everything; messages to others still take the wrapped transport.
func TestLoopbackKeepsSelfSends(t *testing.T) {
	hub := NewLocalHub()
	hub.SetFilter(func(LocalMessage) Fate { return Fate{Drop: true} })
	tr := Loopback(hub.Member("owner"))
	got := make(chan []byte, 2)
	tr.Handle('x', func(from string, msg []byte) {
		if from == "owner" {
			got <- msg
		}
	})
	if err := tr.Send("owner", []byte("xme")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if !bytes.Equal(m, []byte("xme")) {
			t.Fatalf("got %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the self-send never arrived")
	}
	hub.Member("pod")
	if err := tr.Send("pod", []byte("xyou")); err != nil || hub.Sent('x') != 1 {
		t.Fatalf("send to another member: %v, %d sent on the hub", err, hub.Sent('x'))
	}
}
