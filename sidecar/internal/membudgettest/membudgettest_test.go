package membudgettest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/membudget"
)

// errorsTB records Errorf instead of failing the test.
type errorsTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *errorsTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestCancelWhenWaiting: the context is cancelled once the loop waits; when it never does, the
// test fails after WaitTimeout, saying so, and the context is cancelled so nothing hangs.
func TestCancelWhenWaiting(t *testing.T) {
	b := Spent(t, 1<<20)
	ctx := CancelWhenWaiting(t, b, membudget.LoopMerge)
	if _, err := b.Acquire(ctx, membudget.LoopMerge, 1<<20); err == nil {
		t.Fatal("an acquisition from a spent budget succeeded")
	}
	if ctx.Err() == nil {
		t.Fatal("waiting did not cancel the context")
	}

	defer func(d time.Duration) { WaitTimeout = d }(WaitTimeout)
	WaitTimeout = 20 * time.Millisecond
	rec := &errorsTB{TB: t}
	ctx = CancelWhenWaiting(rec, b, membudget.LoopMerge)
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no wait, and the context was not cancelled after WaitTimeout")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errs) != 1 {
		t.Fatalf("errors %q, want one saying no merge waited", rec.errs)
	}
}
