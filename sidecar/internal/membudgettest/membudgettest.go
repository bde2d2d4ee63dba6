// Package membudgettest holds the tests' helpers for the process memory budget.
package membudgettest

import (
	"context"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/membudget"
)

// WaitTimeout is how long CancelWhenWaiting waits for an acquisition to wait.
const WaitTimeout = 30 * time.Second

// CancelWhenWaiting returns a context that is cancelled (a shutdown) as soon as an acquisition by
// loop waits on b. If none waits within WaitTimeout, the test fails, saying so, and the context is
// cancelled all the same, so that the code under test returns instead of hanging. The context is
// cancelled, and the poller stopped, when the test ends.
func CancelWhenWaiting(t testing.TB, b *membudget.Budget, loop string) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		deadline := time.Now().Add(WaitTimeout)
		for ctx.Err() == nil {
			for _, l := range b.Snapshot().Loops {
				if l.Loop == loop && l.Waiting > 0 {
					cancel()
					return
				}
			}
			if time.Now().After(deadline) {
				t.Errorf("no %s acquisition waited for memory within %v", loop, WaitTimeout)
				cancel()
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	return ctx
}
