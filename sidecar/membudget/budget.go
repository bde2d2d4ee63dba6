// Package membudget is the process's one memory budget. Every loop that holds data in memory (drain
// batches, merges, the index rebuild, the WAL buffer, search) takes its share before it holds the
// data and gives it back after, so the shares never add up to more than the limit; a loop that
// cannot get its share waits for one to come back instead of pushing the process past its limit.
//
// The budget counts what the loops say they hold, not the heap: the Go runtime's own headroom (the
// garbage collector lets the heap grow past what is live), the binary and the idle process are
// what the limit leaves out (DefaultFraction).
//
// A wait for memory is where work meets the process stopping, so the package also holds the one
// vocabulary for it (stopping.go), used by every loop:
//   - the stop context (a loop's Stop field or stop argument) is done once the process is asked to
//     stop (SIGTERM); the work context (ctx) outlives it by the shutdown timeout, so that work in
//     flight can finish;
//   - Stopping(stop) is ErrStopping once the stop is done: work that has not started does not start;
//   - IsStopping(ctx, err) says err ended work because the process is stopping (ErrStopping, or the
//     work context cancelled): no failure, neither counted, published as an error nor warned about;
//   - ReserveForWork takes a share for work about to start, waiting no longer than the stop.
package membudget

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"
)

const (
	// DefaultFraction of the process memory limit (GOMEMLIMIT or the container's) is the budget.
	// The rest is what no loop accounts for: the garbage collector's headroom above the live heap
	// (GOMEMLIMIT makes it collect harder near the limit, not hold less), the binary, goroutine
	// stacks and the idle process (docs/operations.md, "Memory sizing", has the numbers). The
	// merge budget, 0.4 of the limit, fits inside it beside a default drain batch.
	DefaultFraction = 0.6
	// DefaultUnlimited is the budget when no limit is known (a laptop, a test): room for a merge
	// at its unlimited default (512 MiB) beside the drain, so a default run never waits.
	DefaultUnlimited = 1 << 30
	// minLimit keeps a tiny memory limit from leaving no budget at all, though never more than
	// maxFraction of that limit: a floor above a small pod's limit would let the loops exceed it.
	minLimit    = 64 << 20
	maxFraction = 0.75
)

// LimitFor is the budget for a process memory limit of memoryLimit bytes (0: none known) when
// SIGLAKE_MEMORY_BUDGET_BYTES does not set it.
func LimitFor(memoryLimit int64) int64 {
	if memoryLimit <= 0 {
		return DefaultUnlimited
	}
	return min(max(int64(float64(memoryLimit)*DefaultFraction), minLimit), int64(float64(memoryLimit)*maxFraction))
}

// Budget hands out shares of Limit bytes. The zero value is not usable; call New. A nil *Budget
// grants every request at once (tests and tools that run a loop without a process around it).
type Budget struct {
	limit int64
	// sem is FIFO: a large request waiting is not overtaken by a stream of small ones, so a merge
	// that needs a big share gets it once the shares ahead of it come back (TryAcquire's bounded
	// exception aside).
	sem *fifo

	mu    sync.Mutex
	loops map[string]*loopShare
	opts  Options
}

// Options are what a budget reports to.
type Options struct {
	// OnChange, when set, is called with a snapshot after every acquisition and release, under
	// the budget's lock (so snapshots arrive in order): it must not call back into the budget.
	OnChange func(Snapshot)
	// Metrics, when set, export the budget (NewMetrics).
	Metrics *Metrics
}

type loopShare struct {
	held, leases, waiting int64
	waitingBytes          int64         // what the waiting acquisitions ask for
	waits                 int64         // acquisitions that had to wait
	waited                time.Duration // time spent waiting, all acquisitions
}

// New returns a budget of limit bytes (at least 1).
func New(limit int64, opts Options) *Budget {
	limit = max(limit, 1)
	if opts.Metrics != nil {
		opts.Metrics.Limit.Set(float64(limit))
	}
	return &Budget{limit: limit, sem: newFIFO(limit), loops: map[string]*loopShare{}, opts: opts}
}

// Limit is the budget's size in bytes (0 for a nil budget: unlimited).
func (b *Budget) Limit() int64 {
	if b == nil {
		return 0
	}
	return b.limit
}

// Lease is a share held; Release gives it back. The zero Lease (from a nil budget) holds nothing.
type Lease struct {
	b        *Budget
	loop     string
	n        int64
	overtook bool // taken by TryAcquire past a waiting acquisition
	once     *sync.Once
}

// Bytes is what the lease holds.
func (l Lease) Bytes() int64 { return l.n }

// Release gives the share back; a second call does nothing.
func (l Lease) Release() {
	if l.b == nil {
		return
	}
	l.once.Do(func() {
		// Accounted before the bytes go back: a loop granted them next must not show up in a
		// snapshot beside this share still counted.
		l.b.account(l.loop, func(s *loopShare) { s.held -= l.n; s.leases-- })
		l.b.sem.release(l.n, l.overtook)
	})
}

// Acquire waits until n bytes of the budget are free and holds them for loop, or returns ctx's
// error. A request larger than the whole budget is cut to the budget: it waits until it has the
// budget to itself rather than never running (its loop's own bound, a merge's path choice say,
// decides how it then fits). n <= 0 holds nothing and never waits.
func (b *Budget) Acquire(ctx context.Context, loop string, n int64) (Lease, error) {
	if b == nil || n <= 0 {
		return Lease{}, nil
	}
	n = min(n, b.limit)
	if ok, _ := b.sem.try(n, false); ok {
		b.account(loop, func(s *loopShare) { s.held += n; s.leases++ })
		return Lease{b: b, loop: loop, n: n, once: new(sync.Once)}, nil
	}
	b.account(loop, func(s *loopShare) { s.waiting++; s.waitingBytes += n; s.waits++ })
	start := time.Now()
	err := b.sem.acquire(ctx, n)
	waited := time.Since(start)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil {
			err = cause // ErrStopping from the stop, so that IsStopping knows it
		}
		b.account(loop, func(s *loopShare) { s.waiting--; s.waitingBytes -= n; s.waited += waited })
		return Lease{}, fmt.Errorf("waiting for %d bytes of the process memory budget for %s: %w", n, loop, err)
	}
	b.account(loop, func(s *loopShare) { s.waiting--; s.waitingBytes -= n; s.waited += waited; s.held += n; s.leases++ })
	if m := b.opts.Metrics; m != nil {
		m.Waits.WithLabelValues(loop).Inc()
		m.WaitSeconds.WithLabelValues(loop).Add(waited.Seconds())
	}
	return Lease{b: b, loop: loop, n: n, once: new(sync.Once)}, nil
}

// TryAcquire holds n bytes of the budget for loop if they are free now, without waiting; ok is
// false when they are not. For a loop that refuses work rather than wait: group commit's queue
// answers busy. With an acquisition waiting (a merge for its share) a try still succeeds when
// the bytes are free and it is small: the tries passing waiters hold at most 1/16 of the budget
// together, and never so much that the first waiter would not fit beside them (fifo.try). A
// strict FIFO would make every try fail whenever anything waits, whatever is free: one merge
// waiting for a large share would make group commit busy for every pod. The budget's promise
// holds: the shares never add up past the limit, and a waiting merge is delayed by at most that
// 1/16, never starved. n <= 0 holds nothing and succeeds; n above the limit never does.
func (b *Budget) TryAcquire(loop string, n int64) (l Lease, ok bool) {
	if b == nil || n <= 0 {
		return Lease{}, true
	}
	if n > b.limit {
		return Lease{}, false
	}
	ok, overtook := b.sem.try(n, true)
	if !ok {
		return Lease{}, false
	}
	b.account(loop, func(s *loopShare) { s.held += n; s.leases++ })
	return Lease{b: b, loop: loop, n: n, overtook: overtook, once: new(sync.Once)}, true
}

func (b *Budget) account(loop string, f func(*loopShare)) {
	b.mu.Lock()
	s, ok := b.loops[loop]
	if !ok {
		s = &loopShare{}
		b.loops[loop] = s
	}
	f(s)
	if m := b.opts.Metrics; m != nil {
		m.Held.WithLabelValues(loop).Set(float64(s.held))
	}
	// Published under the lock, so snapshots reach OnChange in the order they were taken.
	if b.opts.OnChange != nil {
		b.opts.OnChange(b.snapshotLocked())
	}
	b.mu.Unlock()
}

// Snapshot is the budget at one moment, as /debug/status shows it.
type Snapshot struct {
	LimitBytes int64 `json:"limit_bytes"`
	HeldBytes  int64 `json:"held_bytes"`
	// Loops are the loops that ever took a share, by name.
	Loops []LoopSnapshot `json:"loops"`
}

// LoopSnapshot is one loop's share.
type LoopSnapshot struct {
	Loop      string `json:"loop"`
	HeldBytes int64  `json:"held_bytes"`
	Leases    int64  `json:"leases"`  // shares held now
	Waiting   int64  `json:"waiting"` // acquisitions waiting now
	// WaitingBytes is what they ask for together: a worker of leased bins leaves it free.
	WaitingBytes int64 `json:"waiting_bytes"`
	// Waits counts acquisitions that had to wait, WaitedSeconds their total wait.
	Waits         int64   `json:"waits"`
	WaitedSeconds float64 `json:"waited_seconds"`
}

// Snapshot returns the current shares (the zero Snapshot for a nil budget).
func (b *Budget) Snapshot() Snapshot {
	if b == nil {
		return Snapshot{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.snapshotLocked()
}

func (b *Budget) snapshotLocked() Snapshot {
	s := Snapshot{LimitBytes: b.limit, Loops: make([]LoopSnapshot, 0, len(b.loops))}
	for name, l := range b.loops {
		s.HeldBytes += l.held
		s.Loops = append(s.Loops, LoopSnapshot{Loop: name, HeldBytes: l.held, Leases: l.leases, Waiting: l.waiting, WaitingBytes: l.waitingBytes,
			Waits: l.waits, WaitedSeconds: l.waited.Seconds()})
	}
	sort.Slice(s.Loops, func(i, j int) bool { return s.Loops[i].Loop < s.Loops[j].Loop })
	return s
}

// Share is one loop's handle on the budget: what a loop is given so it cannot take shares under
// another loop's name. A Share of a nil budget grants everything at once.
type Share struct {
	b    *Budget
	loop string
}

// For returns loop's handle on b.
func (b *Budget) For(loop string) Share { return Share{b: b, loop: loop} }

// Acquire is Budget.Acquire for this share's loop.
func (s Share) Acquire(ctx context.Context, n int64) (Lease, error) {
	return s.b.Acquire(ctx, s.loop, n)
}

// Reserve is Acquire as the loops take it: a release function instead of a Lease, so a loop's
// package needs no import of this one (sidecar/drain and sidecar/rewrite take this shape).
func (b *Budget) Reserve(ctx context.Context, loop string, n int64) (release func(), err error) {
	l, err := b.Acquire(ctx, loop, n)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// Reserve is Budget.Reserve for this share's loop.
func (s Share) Reserve(ctx context.Context, n int64) (release func(), err error) {
	return s.b.Reserve(ctx, s.loop, n)
}

// TryReserve is TryAcquire for this share's loop, with a release function instead of a Lease (a
// loop's package then needs no import of this one).
func (s Share) TryReserve(n int64) (release func(), ok bool) {
	l, ok := s.b.TryAcquire(s.loop, n)
	if !ok {
		return nil, false
	}
	return l.Release, true
}
