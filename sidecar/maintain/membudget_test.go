package maintain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/membudget"
)

// TestShutdownWhileWaitingForMemoryIsNoFailure: a maintenance cycle whose first rewrite waits for
// memory (a drain holds the whole budget) and is shut down there reports no failed bin, counts
// no failed rewrite, publishes no error and puts no bin in back-off.
func TestShutdownWhileWaitingForMemoryIsNoFailure(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	smallFilesTable(t, e, 10)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	b := membudget.New(64<<20, membudget.Options{})
	hold, err := b.Acquire(context.Background(), membudget.LoopDrain, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	m.Reserve = b.Reserve
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			for _, s := range b.Snapshot().Loops {
				if s.Loop == "merge" && s.Waiting > 0 {
					cancel()
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	rep, _ := m.Cycle(ctx)
	if ctx.Err() == nil {
		t.Fatal("setup: no rewrite waited for memory")
	}
	if rep.Failed != 0 {
		t.Errorf("a shutdown while waiting for memory reported %d failed bins", rep.Failed)
	}
	if v := counterValue(t, m.Metrics, "siglake_compactor_rewrites_total", "failed"); v != 0 {
		t.Errorf("a shutdown counted as %v failed rewrites", v)
	}
	for _, err := range published(m).errors {
		if strings.Contains(err.Error(), "canceled") {
			t.Errorf("a shutdown published an error: %v", err)
		}
	}
	if len(m.backoff) != 0 {
		t.Errorf("a shutdown put %d bins in back-off", len(m.backoff))
	}
}
