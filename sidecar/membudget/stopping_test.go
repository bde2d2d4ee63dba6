package membudget

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestIsStopping: ErrStopping, or a cancellation of the loop's own work context, ending the work is a stop; a
// deadline, or a cancellation error while the loop's context is live, is a failure.
func TestIsStopping(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	wrapped := fmt.Errorf("merge: waiting for memory: %w", context.Canceled)
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"cancelled", cancelled, wrapped, true},
		{"cancelled, joined", cancelled, errors.Join(errors.New("x"), wrapped), true},
		{"cancelled, no error", cancelled, nil, false},
		{"cancelled, another error", cancelled, errors.New("disk full"), false},
		{"deadline", expired, fmt.Errorf("merge: %w", context.DeadlineExceeded), false},
		{"deadline, cancellation error", expired, wrapped, false},
		{"live context", context.Background(), wrapped, false},
		{"stopping, live context", context.Background(), fmt.Errorf("merge: %w", ErrStopping), true},
	} {
		if got := IsStopping(c.ctx, c.err); got != c.want {
			t.Errorf("%s: IsStopping = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestUntilStop: a wait for memory under untilStop ends when stop is done, with ErrStopping, which
// IsStopping counts as a stop although the loop's own context is live; the parent's cancellation
// still ends it as before, and Stopping follows stop.
func TestUntilStop(t *testing.T) {
	b := New(1<<20, Options{})
	hold, err := b.Acquire(context.Background(), LoopDrain, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	work := context.Background() // outlives the stop, as the process's work context does
	stop, sigterm := context.WithCancel(context.Background())
	ctx, cancel := untilStop(work, stop)
	defer cancel()
	if Stopping(stop) != nil || Stopping(nil) != nil {
		t.Fatal("stopping before the stop")
	}
	errc := make(chan error, 1)
	go func() { _, err := b.Acquire(ctx, LoopMerge, 1); errc <- err }()
	for loopOf(b.Snapshot(), LoopMerge).Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	sigterm()
	err = <-errc
	if !errors.Is(err, ErrStopping) || !errors.Is(err, context.Canceled) || !IsStopping(work, err) {
		t.Fatalf("wait ended by the stop: %v (ErrStopping %v, stopping %v)", err, errors.Is(err, ErrStopping), IsStopping(work, err))
	}
	if !errors.Is(Stopping(stop), ErrStopping) {
		t.Fatal("Stopping is nil after the stop")
	}

	parent, cancelParent := context.WithCancel(context.Background())
	ctx2, cancel2 := untilStop(parent, nil)
	defer cancel2()
	cancelParent()
	if _, err := b.Acquire(ctx2, LoopMerge, 1); errors.Is(err, ErrStopping) || !IsStopping(parent, err) {
		t.Fatalf("wait ended by the parent: %v", err)
	}
}

// TestReserveForWork: the one reservation sequence of the drain, the rewrites and the index
// rebuild. A stop before the work takes nothing; a stop during the wait ends it with ErrStopping
// and leaves nothing held; a share granted as the stop came goes back; a failure stays a failure.
func TestReserveForWork(t *testing.T) {
	work := context.Background()
	b := New(1<<20, Options{})
	share := b.For(LoopDrain)

	release, err := ReserveForWork(work, nil, nil, 1<<30)
	if err != nil || release == nil {
		t.Fatalf("no budget: release %v, err %v", release != nil, err)
	}
	release()

	stopped, stop := context.WithCancel(context.Background())
	stop()
	called := false
	if _, err := ReserveForWork(work, stopped, func(context.Context, int64) (func(), error) { called = true; return func() {}, nil }, 1); !errors.Is(err, ErrStopping) || called {
		t.Fatalf("stopped before: err %v, reserve called %v", err, called)
	}
	if _, err := ReserveForWork(work, stopped, nil, 1); !errors.Is(err, ErrStopping) {
		t.Fatalf("stopped before, no budget: err %v", err)
	}

	hold, err := b.Acquire(work, LoopMerge, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	live, sigterm := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := ReserveForWork(work, live, share.Reserve, 1); errc <- err }()
	for loopOf(b.Snapshot(), LoopDrain).Waiting == 0 {
		time.Sleep(time.Millisecond)
	}
	sigterm()
	if err := <-errc; !errors.Is(err, ErrStopping) || !IsStopping(work, err) {
		t.Fatalf("stop during the wait: %v", err)
	}
	hold.Release()

	// Granted as the stop came: the reservation succeeds, the stop is seen after it.
	late, lateStop := context.WithCancel(context.Background())
	grant := func(ctx context.Context, n int64) (func(), error) {
		r, err := share.Reserve(ctx, n)
		lateStop()
		return r, err
	}
	if _, err := ReserveForWork(work, late, grant, 1); !errors.Is(err, ErrStopping) {
		t.Fatalf("granted as the stop came: %v", err)
	}
	if held := b.Snapshot().HeldBytes; held != 0 {
		t.Fatalf("%d bytes still held after the stops", held)
	}

	failure := errors.New("budget broken")
	if _, err := ReserveForWork(work, nil, func(context.Context, int64) (func(), error) { return nil, failure }, 1); !errors.Is(err, failure) || IsStopping(work, err) {
		t.Fatalf("failure: %v", err)
	}
}
