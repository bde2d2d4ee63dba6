package membudget

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSharesNeverExceedTheLimit runs many loops that take random shares (some larger than the
// whole budget) and hold them a moment; the sum held, counted by the loops themselves, never
// exceeds the limit, and every loop gets its turn. Run it under -race.
func TestSharesNeverExceedTheLimit(t *testing.T) {
	const limit = 1000
	var published atomic.Int64
	b := New(limit, Options{OnChange: func(s Snapshot) {
		if s.HeldBytes > limit {
			t.Errorf("snapshot holds %d of %d", s.HeldBytes, limit)
		}
		published.Add(1)
	}})
	var held, peak atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 1))
			loop := []string{"drain", "merge", "search"}[w%3]
			for i := 0; i < 200; i++ {
				n := 1 + r.Int64N(limit*5/4) // now and then more than the whole budget
				l, err := b.Acquire(context.Background(), loop, n)
				if err != nil {
					t.Error(err)
					return
				}
				if l.Bytes() != min(n, limit) {
					t.Errorf("lease of %d bytes for a request of %d", l.Bytes(), n)
				}
				now := held.Add(l.Bytes())
				for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
				}
				if now > limit {
					t.Errorf("loops hold %d bytes of a %d budget", now, limit)
				}
				time.Sleep(time.Duration(r.IntN(50)) * time.Microsecond)
				held.Add(-l.Bytes())
				l.Release()
				l.Release() // a second release gives nothing back twice
			}
		}(w)
	}
	wg.Wait()
	s := b.Snapshot()
	if s.HeldBytes != 0 || published.Load() == 0 {
		t.Fatalf("after every release: %+v (%d snapshots published)", s, published.Load())
	}
	var waits int64
	for _, l := range s.Loops {
		waits += l.Waits
		if l.Leases != 0 || l.Waiting != 0 {
			t.Fatalf("loop %s still holds or waits: %+v", l.Loop, l)
		}
	}
	if waits == 0 {
		t.Fatalf("no acquisition ever waited: the test did not contend")
	}
	t.Logf("peak held %d of %d; %d waits", peak.Load(), limit, waits)
}

// TestAcquireWaitsRatherThanExceeds checks that a share that does not fit waits until enough comes
// back, and that a cancelled wait returns the context's error and holds nothing.
func TestAcquireWaitsRatherThanExceeds(t *testing.T) {
	b := New(100, Options{Metrics: NewMetrics(prometheus.NewRegistry())})
	first, err := b.For("drain").Acquire(context.Background(), 70)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan Lease)
	go func() {
		l, err := b.For("merge").Acquire(context.Background(), 50)
		if err != nil {
			t.Error(err)
		}
		got <- l
	}()
	select {
	case <-got:
		t.Fatal("a 50-byte share was granted beside 70 bytes of a 100-byte budget")
	case <-time.After(50 * time.Millisecond):
	}
	if s := loopOf(b.Snapshot(), "merge"); s.Waiting != 1 {
		t.Fatalf("merge waiting: %+v", s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Acquire(ctx, "search", 40); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled acquire: %v", err)
	}
	first.Release()
	second := <-got
	if second.Bytes() != 50 || b.Snapshot().HeldBytes != 50 {
		t.Fatalf("after the release: lease %d, %+v", second.Bytes(), b.Snapshot())
	}
	second.Release()
	if m := b.opts.Metrics; testutil.ToFloat64(m.Waits.WithLabelValues("merge")) != 1 || testutil.ToFloat64(m.Held.WithLabelValues("merge")) != 0 ||
		testutil.ToFloat64(m.Limit) != 100 {
		t.Fatalf("metrics: merge waits %v, held %v, limit %v", testutil.ToFloat64(m.Waits.WithLabelValues("merge")),
			testutil.ToFloat64(m.Held.WithLabelValues("merge")), testutil.ToFloat64(m.Limit))
	}
	if s := b.Snapshot(); s.HeldBytes != 0 || loopOf(s, "search").HeldBytes != 0 {
		t.Fatalf("%+v", s)
	}
}

func TestNilBudgetGrantsEverything(t *testing.T) {
	var b *Budget
	l, err := b.For("drain").Acquire(context.Background(), 1<<40)
	if err != nil || b.Limit() != 0 {
		t.Fatal(err)
	}
	l.Release()
}

func TestLimitFor(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{0, DefaultUnlimited},
		{1000 << 20, 600 << 20},
		{100 << 20, minLimit},
		{64 << 20, 48 << 20}, // the floor never exceeds a small pod's limit
		{32 << 20, 24 << 20},
	} {
		if got := LimitFor(c.limit); got != c.want {
			t.Errorf("LimitFor(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

func loopOf(s Snapshot, loop string) LoopSnapshot {
	for _, l := range s.Loops {
		if l.Loop == loop {
			return l
		}
	}
	return LoopSnapshot{}
}
