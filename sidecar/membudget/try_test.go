package membudget

import (
	"context"
	"testing"
	"time"
)

// TestTryAcquireNeverWaits: TryAcquire takes what is free now and refuses the rest at once,
// never more than the limit, never ahead of a waiting Acquire (FIFO) beyond its small share for
// tries (TestTryPassesWaiterWhenFree), and its lease gives the
// bytes back.
func TestTryAcquireNeverWaits(t *testing.T) {
	b := New(100, Options{})
	l, ok := b.TryAcquire(LoopGroupCommit, 60)
	if !ok || l.Bytes() != 60 {
		t.Fatalf("first try: %v %d", ok, l.Bytes())
	}
	if _, ok := b.TryAcquire(LoopGroupCommit, 41); ok {
		t.Fatal("took 41 bytes with 40 free")
	}
	if _, ok := b.TryAcquire(LoopGroupCommit, 101); ok {
		t.Fatal("took more than the limit")
	}
	waiting := make(chan struct{})
	go func() {
		w, err := b.Acquire(context.Background(), LoopMerge, 80)
		if err != nil {
			t.Error(err)
		}
		w.Release()
		close(waiting)
	}()
	for loopOf(b.Snapshot(), LoopMerge).Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, ok := b.TryAcquire(LoopGroupCommit, 10); ok {
		t.Fatal("overtook a waiting acquisition")
	}
	if got := loopOf(b.Snapshot(), LoopGroupCommit).HeldBytes; got != 60 {
		t.Fatalf("group commit holds %d, want 60", got)
	}
	l.Release()
	<-waiting
	if release, ok := b.For(LoopGroupCommit).TryReserve(100); !ok {
		t.Fatal("the whole budget free, and not taken")
	} else {
		release()
	}
	if _, ok := (*Budget)(nil).TryAcquire(LoopGroupCommit, 1<<40); !ok {
		t.Fatal("a nil budget refused")
	}
}

// TestTryPassesWaiterWhenFree: with 60 of 100 MiB held and a merge waiting for 50, a small try
// (group commit's queue) takes 1 MiB that is free instead of failing because something waits;
// tries passing the waiter stop at 1/16 of the budget, none passes a waiter that would then not
// fit, and the waiter gets its share once the 60 come back, beside what the tries hold.
func TestTryPassesWaiterWhenFree(t *testing.T) {
	const mib = 1 << 20
	b := New(100*mib, Options{})
	held, _ := b.TryAcquire(LoopMerge, 60*mib)
	granted := make(chan Lease)
	go func() {
		w, err := b.Acquire(context.Background(), LoopMerge, 50*mib)
		if err != nil {
			t.Error(err)
		}
		granted <- w
	}()
	for loopOf(b.Snapshot(), LoopMerge).Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	small, ok := b.TryAcquire(LoopGroupCommit, mib)
	if !ok {
		t.Fatal("1 MiB free of 40 refused because a 50 MiB acquisition waits")
	}
	var tries []Lease
	for {
		l, ok := b.TryAcquire(LoopGroupCommit, mib)
		if !ok {
			break
		}
		tries = append(tries, l)
	}
	if got := loopOf(b.Snapshot(), LoopGroupCommit).HeldBytes; got > 100*mib/overtakeShare || got < 100*mib/overtakeShare-mib {
		t.Fatalf("tries passing the waiter hold %d bytes, want up to 1/%d of the budget", got, overtakeShare)
	}
	held.Release()
	w := <-granted
	if w.Bytes() != 50*mib {
		t.Fatalf("waiter got %d", w.Bytes())
	}
	w.Release()
	small.Release()
	for _, l := range tries {
		l.Release()
	}
	// A waiter for the whole budget is never passed: it would not fit beside the try.
	all, _ := b.TryAcquire(LoopMerge, 10*mib)
	go func() {
		w, err := b.Acquire(context.Background(), LoopMerge, 100*mib)
		if err != nil {
			t.Error(err)
		}
		granted <- w
	}()
	for loopOf(b.Snapshot(), LoopMerge).Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	if _, ok := b.TryAcquire(LoopGroupCommit, 1); ok {
		t.Fatal("a try passed a waiter that then could not fit")
	}
	all.Release()
	(<-granted).Release()
	if s := b.Snapshot(); s.HeldBytes != 0 {
		t.Fatalf("%d bytes still held", s.HeldBytes)
	}
}
