// Package backoff is siglake's one exponential backoff: the policy that says how long to wait
// after a failure, and the wait itself.
package backoff

import (
	"context"
	"time"
)

// Policy is siglake's one exponential backoff. The lake's commit retries (lake.Retry.Backoff),
// the drain's per-table delay after a failed batch and the wait for an unreachable catalog use it.
//
// Policy: the ceiling of wait n (n >= 1: after the n-th failure in a row) is Min·Factor^(n-1),
// capped at Max. The jitter then picks the wait from the ceiling d:
//
//	NoJitter     d itself (deterministic, for callers that schedule against their own clock)
//	EqualJitter  uniform in [d/2, d]: never less than half the ceiling, and concurrent
//	             callers do not retry in lockstep
//
// Wait is pure: it reads no clock, and the jitter comes from the random source the caller passes.
type Policy struct {
	Min    time.Duration // ceiling of the first wait
	Max    time.Duration // cap on the ceiling; the wait never exceeds it
	Factor float64       // growth of the ceiling per failure; 0 means 2, 1 or less means none
	Jitter Jitter
}

// Jitter says how a wait is drawn from its ceiling (see Policy).
type Jitter int

const (
	NoJitter    Jitter = iota // the ceiling itself
	EqualJitter               // uniform in [ceiling/2, ceiling]
)

// Wait returns the wait after the n-th failure in a row (n < 1 counts as 1). int64n draws the
// jitter with rand.Int64N's contract (uniform in [0, n)), e.g. math/rand/v2's Int64N or a
// seeded *rand.Rand's; it is not called for NoJitter and may then be nil.
func (b Policy) Wait(n int, int64n func(int64) int64) time.Duration {
	f := b.Factor
	if f == 0 {
		f = 2
	}
	d := b.Min
	// The loop stops at the cap, so it runs at most log_f(Max/Min) times and cannot overflow.
	for i := 1; i < n && f > 1 && d > 0 && d < b.Max; i++ {
		d = time.Duration(float64(d) * f)
	}
	d = min(d, b.Max)
	if b.Jitter == EqualJitter && d > 0 {
		d = d/2 + time.Duration(int64n(int64(d/2)+1))
	}
	return d
}

// Sleep waits d, or until ctx is done (then its error).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
