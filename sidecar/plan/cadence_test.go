package plan

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// TestLevelCadencesUnderJitter drives the planner as the maintenance loop does, on a 10 s ticker
// whose ticks jitter like a real one (a few ms either way, now and then a cycle that starts
// hundreds of ms late), for simulated hours, and measures the interval between checks of each
// level. The spec's cadences must hold within CadenceSlack: L0 (and the depth trigger) every 10 s,
// L1 every 60 s, L2 every 3,600 s. Without the slack a tick a millisecond early pushed a check to
// the next tick: L0 ran every 10 or 20 s, L1 every 60 or 70 s.
func TestLevelCadencesUnderJitter(t *testing.T) {
	cfg := DefaultConfig()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var st State
	var last [level.NumLevels]time.Time
	intervals := make([][]time.Duration, level.NumLevels)
	const tick = 10 * time.Second
	for i := 0; i < 6*3600/10; i++ {
		jitter := time.Duration(rng.IntN(10_000_000)) - 5*time.Millisecond // ±5 ms
		if rng.IntN(20) == 0 {
			jitter += time.Duration(rng.IntN(400)) * time.Millisecond // a cycle that started late
		}
		now := start.Add(time.Duration(i)*tick + jitter)
		p := Plan(cfg, Input{Now: now, State: st})
		st = p.Next
		for _, l := range p.Checked {
			if !last[l].IsZero() {
				intervals[l] = append(intervals[l], now.Sub(last[l]))
			}
			last[l] = now
		}
	}
	for l := level.L0; l < level.NumLevels; l++ {
		want := cfg.CheckInterval[l]
		slack := CadenceSlack(want)
		if len(intervals[l]) == 0 {
			t.Fatalf("%s never checked twice", l)
		}
		var sum time.Duration
		for _, iv := range intervals[l] {
			sum += iv
			if iv < want-slack || iv > want+slack {
				t.Fatalf("%s checked %s after the previous check; want %s within %s (intervals: %v)", l, iv, want, slack, intervals[l][:min(12, len(intervals[l]))])
			}
		}
		t.Logf("%s: %d checks, mean interval %s", l, len(intervals[l])+1, sum/time.Duration(len(intervals[l])))
	}
}

func TestDue(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		every, elapsed time.Duration
		want           bool
	}{
		{10 * time.Second, 9*time.Second - time.Millisecond, false},
		{10 * time.Second, 9 * time.Second, true},
		{10 * time.Second, 9999 * time.Millisecond, true},
		{60 * time.Second, 59 * time.Second, true},
		{60 * time.Second, 58 * time.Second, false},
		{time.Second, 900 * time.Millisecond, true},
		{time.Second, 899 * time.Millisecond, false},
	} {
		if got := Due(t0, t0.Add(c.elapsed), c.every); got != c.want {
			t.Errorf("Due(every %s, %s elapsed) = %v, want %v", c.every, c.elapsed, got, c.want)
		}
	}
	if !Due(time.Time{}, t0, time.Hour) {
		t.Error("a cadence that never ran is not due")
	}
}
