package membudget

import (
	"context"
	"testing"
	"time"
)

// TestTryAcquireNeverWaits: TryAcquire takes what is free now and refuses the rest at once,
// never more than the limit, never ahead of a waiting Acquire (FIFO), and its lease gives the
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
