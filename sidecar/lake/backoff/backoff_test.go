package backoff

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestBackoffPolicy: growth by the factor, the cap, and jitter inside [ceiling/2, ceiling].
func TestBackoffPolicy(t *testing.T) {
	const s = time.Second
	drain := Policy{Min: s, Max: 32 * s, Factor: 2}
	commit := Policy{Min: 200 * time.Millisecond, Max: 5 * s, Factor: 2, Jitter: EqualJitter} // lake.DefaultRetry's
	for _, c := range []struct {
		name   string
		b      Policy
		n      int
		lo, hi time.Duration
	}{
		{"first wait is Min", drain, 1, s, s},
		{"n below 1 counts as 1", drain, 0, s, s},
		{"doubles", drain, 2, 2 * s, 2 * s},
		{"doubles again", drain, 6, 32 * s, 32 * s},
		{"capped", drain, 7, 32 * s, 32 * s},
		{"capped far out", drain, 1 << 20, 32 * s, 32 * s},
		{"cap below a power", Policy{Min: s, Max: 30 * s}, 6, 30 * s, 30 * s},
		{"factor 3", Policy{Min: s, Max: time.Hour, Factor: 3}, 3, 9 * s, 9 * s},
		{"factor 1 does not grow", Policy{Min: s, Max: time.Hour, Factor: 1}, 9, s, s},
		{"zero policy waits nothing", Policy{}, 3, 0, 0},
		{"equal jitter, first commit retry", commit, 1, 100 * time.Millisecond, 200 * time.Millisecond},
		{"equal jitter, second commit retry", commit, 2, 200 * time.Millisecond, 400 * time.Millisecond},
		{"equal jitter, capped at MaxWait", commit, 12, 2500 * time.Millisecond, 5 * s},
	} {
		lowest := c.b.Wait(c.n, func(int64) int64 { return 0 })
		highest := c.b.Wait(c.n, func(n int64) int64 { return n - 1 })
		if lowest != c.lo || highest != c.hi {
			t.Errorf("%s: wait %d in [%v, %v], want [%v, %v]", c.name, c.n, lowest, highest, c.lo, c.hi)
		}
		rnd := rand.New(rand.NewPCG(1, uint64(c.n)))
		for range 200 {
			if w := c.b.Wait(c.n, rnd.Int64N); w < c.lo || w > c.hi {
				t.Fatalf("%s: wait %d = %v, outside [%v, %v]", c.name, c.n, w, c.lo, c.hi)
			}
		}
	}
}
