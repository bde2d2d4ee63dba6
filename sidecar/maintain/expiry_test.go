package maintain

import (
	"context"
	"testing"
	"time"
)

// TestExpiryCadenceUnderJitter: the maintenance loop ticks every 10 s, and its ticks jitter.
// Snapshot expiry must run every snapshotExpire.intervalSecs (60 s) within plan.CadenceSlack, not
// every 60 or 70 s as a strict "at least 60 s since the last" made it.
func TestExpiryCadenceUnderJitter(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.ReclusterInterval = 0 })
	e.writeSegments("events", 2, 100, 9, time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC))
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := start
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	var runs []time.Time
	for i := 0; i < 40; i++ {
		// Ticks a few ms early or late, as a time.Ticker's are under load.
		now = start.Add(time.Duration(i)*10*time.Second + time.Duration((i*7919)%9-4)*time.Millisecond)
		before := m.clock.lastExpire
		if _, err := m.Cycle(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !m.clock.lastExpire.Equal(before) {
			runs = append(runs, m.clock.lastExpire)
		}
	}
	if len(runs) < 6 {
		t.Fatalf("expiry ran %d times in 400 s, want 7", len(runs))
	}
	every := e.cfg.SnapshotExpireInterval
	for i := 1; i < len(runs); i++ {
		if iv := runs[i].Sub(runs[i-1]); iv < every-time.Second || iv > every+time.Second {
			t.Fatalf("expiry ran %s after the previous run; want %s within 1 s (runs %v)", iv, every, runs)
		}
	}
}
