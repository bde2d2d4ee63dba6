package work

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/peermsg"
)

// TestOwnerReceiveRules: without authentication nothing is answered; a want of another catalog
// gets no bins, and a renewal of another catalog is answered expired; a want of the owner's
// catalog gets the bin on offer.
func TestOwnerReceiveRules(t *testing.T) {
	hub := peermsg.NewLocalHub()
	var authed atomic.Bool
	book := NewBook(Config{OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{2}))
	o := NewOwner(OwnerConfig{Book: book, Catalog: "cat", Authenticated: authed.Load}, hub.Member("owner"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !hub.Member("owner").Handles(KindWorker) {
		time.Sleep(time.Millisecond)
	}
	if refused := o.Offer("events", []Job{job("a", 2, 100)}); len(refused) > 0 {
		t.Fatal(refused[0].Err)
	}
	got := ownerMessages(hub, "w")
	w := hub.Member("w")
	send := func(m WorkerMessage) {
		t.Helper()
		m.V, m.From = Version, "w"
		msg, err := m.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Send("owner", msg); err != nil {
			t.Fatal(err)
		}
	}
	next := func() OwnerMessage {
		t.Helper()
		select {
		case m := <-got:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return OwnerMessage{}
	}
	want := WorkerMessage{Type: TypeWant, Catalog: "cat", FreeBytes: 2, MergeBytes: 1}
	send(want)
	time.Sleep(100 * time.Millisecond)
	if len(got) != 0 || book.Outstanding("events").LeasedBins != 0 {
		t.Fatalf("an unauthenticated want was answered (%d) or leased", len(got))
	}
	authed.Store(true)
	other := want
	other.Catalog = "other"
	send(other)
	if m := next(); m.Type != TypeLeases || len(m.Leases) != 0 || m.RetryMs == 0 {
		t.Fatalf("a want of another catalog got %+v, want no bins and a retry", m)
	}
	send(WorkerMessage{Type: TypeRenew, Catalog: "other", Lease: "0123456789abcdef0123456789abcdef"})
	if m := next(); m.Type != TypeAnswer || m.Outcome != OutcomeExpired {
		t.Fatalf("a renewal of another catalog got %+v, want expired", m)
	}
	send(want)
	if m := next(); m.Type != TypeLeases || len(m.Leases) != 1 || m.Leases[0].Table != "events" {
		t.Fatalf("a want got %+v, want the bin on offer", m)
	}
}

// TestQueuedResultDoesNotLapse: a result that waits behind a slow commit longer than its lease
// is still committed: it is completed on arrival (its worker stopped renewing when it sent it).
func TestQueuedResultDoesNotLapse(t *testing.T) {
	hub := peermsg.NewLocalHub()
	book := NewBook(Config{MinDuration: 200 * time.Millisecond, OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{4}))
	var committed atomic.Int32
	o := NewOwner(OwnerConfig{Book: book, Catalog: "cat", Tick: 10 * time.Millisecond,
		Check: func(context.Context, Lease, [][]byte) error { return nil },
		Commit: func(context.Context, Lease, WorkerMessage) CommitResult {
			time.Sleep(600 * time.Millisecond) // a slow catalog: longer than the lease
			committed.Add(1)
			return CommitResult{Outcome: OutcomeCommitted}
		},
		Remove: func(context.Context, Lease, [][]byte) {}}, hub.Member("owner"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = o.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for !hub.Member("owner").Handles(KindWorker) {
		time.Sleep(time.Millisecond)
	}
	o.Offer("events", []Job{job("a", 1, 100), job("b", 1, 100)})
	ls, err := book.Take("w", Want{FreeBytes: 2, MergeBytes: 1}, false, time.Now())
	if err != nil || len(ls) != 2 {
		t.Fatalf("take: %v %v", ls, err)
	}
	answers := make(chan OwnerMessage, 4)
	w := hub.Member("w")
	w.Handle(KindOwner, func(_ string, msg []byte) {
		if m, err := DecodeOwner(msg); err == nil {
			answers <- m
		}
	})
	for _, l := range ls {
		msg, err := WorkerMessage{V: Version, Type: TypeResult, From: "w", Catalog: "cat", Lease: l.ID, Status: StatusMerged,
			Files: [][]byte{[]byte("f")}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Send("owner", msg); err != nil {
			t.Fatal(err)
		}
	}
	for range ls {
		select {
		case m := <-answers:
			if m.Outcome != OutcomeCommitted {
				t.Fatalf("a result queued behind a slow commit was answered %s (%s)", m.Outcome, m.Error)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
	}
}

// TestOwnerLeasesShares: with three workers, a want whose budget holds every bin gets its share of
// the bins on offer (7 over 3, rounded up: 3), the next want a share of what is left, and so on;
// without Workers one want takes them all.
func TestOwnerLeasesShares(t *testing.T) {
	for _, c := range []struct {
		workers func() int
		got     []int
	}{
		{func() int { return 3 }, []int{3, 2, 1, 1, 0}},
		{nil, []int{7, 0}},
	} {
		hub := peermsg.NewLocalHub()
		book := NewBook(Config{OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{5}))
		o := NewOwner(OwnerConfig{Book: book, Catalog: "cat", Workers: c.workers}, hub.Member("owner"))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = o.Run(ctx) }()
		for !hub.Member("owner").Handles(KindWorker) {
			time.Sleep(time.Millisecond)
		}
		var jobs []Job
		for i := range 7 {
			jobs = append(jobs, job(fmt.Sprint("f", i), 1, 100))
		}
		if refused := o.Offer("events", jobs); len(refused) > 0 {
			t.Fatal(refused[0].Err)
		}
		got := ownerMessages(hub, "w")
		w := hub.Member("w")
		var counts []int
		for range c.got {
			msg, err := WorkerMessage{V: Version, From: "w", Type: TypeWant, Catalog: "cat", FreeBytes: 100, MergeBytes: 1}.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Send("owner", msg); err != nil {
				t.Fatal(err)
			}
			select {
			case m := <-got:
				counts = append(counts, len(m.Leases))
			case <-time.After(10 * time.Second):
				t.Fatal("no answer")
			}
		}
		cancel()
		<-done
		if fmt.Sprint(counts) != fmt.Sprint(c.got) {
			t.Errorf("workers %v: wants got %v bins, want %v", c.workers != nil, counts, c.got)
		}
	}
}

// ownerMessages receives what owners send member name of hub.
func ownerMessages(hub *peermsg.LocalHub, name string) chan OwnerMessage {
	got := make(chan OwnerMessage, 8)
	hub.Member(name).Handle(KindOwner, func(_ string, msg []byte) {
		if m, err := DecodeOwner(msg); err == nil {
			got <- m
		}
	})
	return got
}
