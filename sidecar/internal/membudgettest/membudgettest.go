// Package membudgettest holds the tests' helpers for the process memory budget.
package membudgettest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/membudget"
)

// WaitTimeout is how long CancelWhenWaiting waits for an acquisition to wait (a variable for this
// package's own test).
var WaitTimeout = 30 * time.Second

// CancelWhenWaiting returns a context that is cancelled (a shutdown) as soon as an acquisition by
// loop waits on b. If none waits within WaitTimeout, the test fails, saying so, and the context is
// cancelled all the same, so that the code under test returns instead of hanging. The context is
// cancelled, and the poller stopped, when the test ends.
func CancelWhenWaiting(t testing.TB, b *membudget.Budget, loop string) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	whenWaiting(t, b, loop, ctx, cancel)
	return ctx
}

// StopThenFree returns a budget of limit bytes that a drain holds whole, and a stop context (the
// process's SIGTERM) that is cancelled as soon as an acquisition by loop waits on the budget; right
// after, the drain gives its share back, so a wait that outlives the stop is granted. As with
// CancelWhenWaiting, the test fails if none waits within WaitTimeout (and the stop comes anyway).
func StopThenFree(t testing.TB, limit int64, loop string) (*membudget.Budget, context.Context) {
	t.Helper()
	b := membudget.New(limit, membudget.Options{})
	hold, err := b.Acquire(context.Background(), membudget.LoopDrain, limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hold.Release)
	stop, cancel := context.WithCancel(context.Background())
	whenWaiting(t, b, loop, stop, func() { cancel(); hold.Release() })
	return b, stop
}

// whenWaiting calls then once an acquisition by loop waits on b, or after WaitTimeout (failing the
// test), unless ctx is done first, and at the latest when the test ends; then runs once.
func whenWaiting(t testing.TB, b *membudget.Budget, loop string, ctx context.Context, then func()) {
	t.Helper()
	then = sync.OnceFunc(then)
	stopPoll, cancelPoll := context.WithCancel(ctx)
	done := make(chan struct{})
	t.Cleanup(func() { cancelPoll(); <-done; then() })
	go func() {
		defer close(done)
		timeout := WaitTimeout
		deadline := time.Now().Add(timeout)
		for stopPoll.Err() == nil {
			for _, l := range b.Snapshot().Loops {
				if l.Loop == loop && l.Waiting > 0 {
					then()
					return
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("no %s acquisition waited for memory within %v", loop, timeout)
				then()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
}

// Spent is a budget of limit bytes whose whole limit a drain holds until the test ends: every other
// acquisition waits.
func Spent(t testing.TB, limit int64) *membudget.Budget {
	t.Helper()
	b := membudget.New(limit, membudget.Options{})
	hold, err := b.Acquire(context.Background(), membudget.LoopDrain, limit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hold.Release)
	return b
}

// ShutDownWhileWaiting sets *reserve (an executor's Reserve) to take from a budget a drain holds
// whole, and calls run with a context cancelled once a merge waits for its share: a shutdown
// while waiting for memory. The test fails if no merge waited.
func ShutDownWhileWaiting(t testing.TB, reserve *func(context.Context, string, int64) (func(), error), run func(context.Context)) {
	t.Helper()
	b := Spent(t, 64<<20)
	*reserve = b.Reserve
	ctx := CancelWhenWaiting(t, b, membudget.LoopMerge)
	run(ctx)
	if ctx.Err() == nil {
		t.Fatal("setup: no merge waited for memory")
	}
}
