// Package gctune sets the garbage collector's target after every collection from what is live:
// the heap may grow by Headroom bytes of garbage before the next collection, but by no less than
// MinPercent and no more than MaxPercent of what is live. A fixed GOGC makes the collector run
// twice as often when half as much is live; a process whose live heap swings (the drain: one
// batch's segments, then none) pays that at every trough. The heap goal is live + Headroom, kept
// between live x (1 + MinPercent/100) and live x (1 + MaxPercent/100): where more than
// Headroom x 100/MinPercent is live it is MinPercent's, below that at most Headroom x
// (1 - MinPercent/100) above it (half a headroom for 50, at a live heap of one headroom).
//
// The tuner assumes it is the only caller of debug.SetGCPercent in the process: another caller's
// setting lasts until the next collection.
package gctune

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// Config bounds the target. Headroom <= 0 leaves the collector alone.
type Config struct {
	Headroom   int64 // bytes of garbage a collection may wait for
	MinPercent int   // GOGC at a large live heap
	MaxPercent int   // GOGC at a small one
}

// Percent is the target for live bytes.
func (c Config) Percent(live int64) int {
	if live <= 0 {
		return c.MaxPercent
	}
	p := int(100 * c.Headroom / live)
	return min(max(p, c.MinPercent), c.MaxPercent)
}

var running atomic.Bool

// Running reports whether Start has started the tuning in this process.
func Running() bool { return running.Load() }

// Start sets the target now and after every collection, for the rest of the process. A second
// call does nothing.
func Start(c Config) {
	if c.Headroom <= 0 || !running.CompareAndSwap(false, true) {
		return
	}
	t := &tuner{cfg: c, sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}, last: -1}
	t.tune()
	t.arm()
}

type tuner struct {
	cfg    Config
	sample []metrics.Sample
	last   int
}

// sentinel is allocated so that a collection finds it unreachable and runs its finalizer: one
// call per collection, on the finalizer goroutine (so tune never runs beside itself). Its pointer
// field keeps it out of the tiny allocator, whose objects share blocks and may never be finalized.
type sentinel struct{ _ *int }

func (t *tuner) arm() {
	runtime.SetFinalizer(&sentinel{}, func(*sentinel) { t.tune(); t.arm() })
}

func (t *tuner) tune() {
	metrics.Read(t.sample)
	live := int64(0)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = int64(t.sample[0].Value.Uint64())
	}
	if p := t.cfg.Percent(live); p != t.last {
		debug.SetGCPercent(p)
		t.last = p
	}
}
