package maintain

import (
	"context"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/drain/batches"
)

// TestBackpressureCounters: with SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER=5 and
// SIGLAKE_COMPACTOR_BACKPRESSURE_COMPACT_EVERY=3 from the environment, and a backlog of real sealed
// segments in the WAL dir, every backlogged cycle counts exactly once: the 3rd and 6th of 7 in
// siglake_compactor_maintenance_throttled_backpressure_total, the other 5 in
// ..._skipped_backpressure_total. A backlog at the limit (not above it) counts in neither, and
// restarts the count; with COMPACT_EVERY=0 every backlogged cycle is skipped.
func TestBackpressureCounters(t *testing.T) {
	for _, c := range []struct {
		every                    string
		skipped, throttled       float64 // after 7 backlogged cycles
		skippedEnd, throttledEnd float64 // after 3 more, past a cycle at the limit
	}{{"3", 5, 2, 7, 3}, {"0", 7, 0, 10, 0}} {
		t.Run("compact every "+c.every, func(t *testing.T) {
			env := map[string]string{"SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER": "5", "SIGLAKE_COMPACTOR_BACKPRESSURE_COMPACT_EVERY": c.every}
			cfg, err := config.Load(nil, func(k string) string { return env[k] })
			if err != nil {
				t.Fatal(err)
			}
			pc, err := config.PlanConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
			smallFilesTable(t, e, 3)
			e.writeSegments("other", 1, 50, 900, time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC))
			e.te.DrainAll() // two tables: a cycle counts once, not once per table
			now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			m := newMaintainer(t, e, e.lake, func() time.Time { return now })
			pc.ReclusterInterval = m.Plan.ReclusterInterval
			m.Plan = pc
			m.Backlog = func() int { // what the process counts: the sealed segments in the WAL dir
				segs, _, _ := batches.ScanDirs([]string{e.te.WAL})
				return len(segs)
			}
			counts := func() (float64, float64) {
				return counterValue(t, m.Metrics, "siglake_compactor_maintenance_skipped_backpressure_total", ""),
					counterValue(t, m.Metrics, "siglake_compactor_maintenance_throttled_backpressure_total", "")
			}
			cycles := func(n int) {
				t.Helper()
				for i := 0; i < n; i++ {
					now = now.Add(time.Minute)
					if _, err := m.Cycle(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			start := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
			e.writeSegments("events", 6, 50, 901, start) // 6 sealed: above the limit of 5
			if n := m.Backlog(); n != 6 {
				t.Fatalf("setup: backlog %d, want 6", n)
			}
			cycles(7)
			if s, th := counts(); s != c.skipped || th != c.throttled {
				t.Fatalf("after 7 backlogged cycles: skipped %v, throttled %v; want %v, %v", s, th, c.skipped, c.throttled)
			}
			e.te.DrainAll()
			e.writeSegments("events", 5, 50, 902, start.Add(time.Hour)) // at the limit: not above it
			cycles(1)
			if s, th := counts(); s != c.skipped || th != c.throttled {
				t.Fatalf("a cycle at the limit counted: skipped %v, throttled %v; want %v, %v", s, th, c.skipped, c.throttled)
			}
			e.writeSegments("events", 1, 50, 903, start.Add(2*time.Hour)) // 6 again: the count restarts
			cycles(3)
			if s, th := counts(); s != c.skippedEnd || th != c.throttledEnd {
				t.Fatalf("after 3 more backlogged cycles: skipped %v, throttled %v; want %v, %v", s, th, c.skippedEnd, c.throttledEnd)
			}
		})
	}
}
