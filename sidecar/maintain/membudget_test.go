package maintain

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/internal/membudgettest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
)

// cycleShutDownWaiting runs a maintenance cycle of m while a drain holds the whole memory budget,
// and shuts it down (cancels its context) once a rewrite waits for memory.
func cycleShutDownWaiting(t *testing.T, m *Maintainer) CycleReport {
	t.Helper()
	var rep CycleReport
	membudgettest.ShutDownWhileWaiting(t, &m.Reserve, func(ctx context.Context) { rep, _ = m.Cycle(ctx) })
	return rep
}

// cycleStoppedWaiting runs a maintenance cycle of m as the process does, under a work context that
// outlives the stop signal, while a drain holds the whole memory budget: once a rewrite waits for
// memory, the process is asked to stop and the drain gives its share back right after.
func cycleStoppedWaiting(t *testing.T, m *Maintainer) CycleReport {
	t.Helper()
	b, stop := membudgettest.StopThenFree(t, 64<<20, membudget.LoopMerge)
	m.Reserve, m.Stop = b.Reserve, stop
	rep, _ := m.Cycle(context.Background())
	if stop.Err() == nil {
		t.Fatal("setup: no merge waited for memory")
	}
	return rep
}

// shutdowns are the two ways a shutdown meets a rewrite waiting for memory: the cycle's context
// cancelled (the shutdown timeout), or the stop signal with the work context still live.
var shutdowns = []struct {
	name  string
	cycle func(*testing.T, *Maintainer) CycleReport
}{{"context cancelled", cycleShutDownWaiting}, {"stop, then memory freed", cycleStoppedWaiting}}

// TestShutdownWhileWaitingForMemoryIsNoFailure: a maintenance cycle whose first rewrite waits for
// memory (a drain holds the whole budget) and is shut down there starts no merge, reports no
// failed bin, counts no failed rewrite, publishes no error and puts no bin in back-off. Shut down
// by the stop signal, the rewrite must not take the share the drain then gives back: its merge
// would run under the work context until the shutdown timeout cut it, as a failed rewrite.
func TestShutdownWhileWaitingForMemoryIsNoFailure(t *testing.T) {
	for _, sd := range shutdowns {
		t.Run(sd.name, func(t *testing.T) { testShutdownWhileWaitingForMemory(t, sd.cycle) })
	}
}

func testShutdownWhileWaitingForMemory(t *testing.T, cycle func(*testing.T, *Maintainer) CycleReport) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	smallFilesTable(t, e, 10)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	rep := cycle(t, m)
	if rep.Planned == 0 {
		t.Fatal("setup: no rewrite planned")
	}
	if rep.Rewrites != 0 {
		t.Errorf("%d rewrites committed after the shutdown; want none started", rep.Rewrites)
	}
	if v := counterValue(t, m.Metrics, "siglake_compactor_rewrites_total", "committed"); v != 0 {
		t.Errorf("a merge started after the shutdown: %v rewrites committed", v)
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
	if len(m.exec.poison.backoff) != 0 {
		t.Errorf("a shutdown put %d bins in back-off", len(m.exec.poison.backoff))
	}
}

// TestIdleShutdownWhileWaitingForMemoryIsNoError: an idle cycle's delete sweep, and a retention
// run, whose rewrite waits for memory (another holder has the whole budget) and is shut down
// there, publish no error (none in /debug/status, no table error, no sweep or run summary with
// one) and log no failure: a shutdown is not one.
func TestIdleShutdownWhileWaitingForMemoryIsNoError(t *testing.T) {
	for _, c := range []struct {
		name    string
		deletes bool // a pending deletion request, swept (else retention's rewrite is what waits)
	}{{"delete sweep", true}, {"retention", false}} {
		for _, sd := range shutdowns {
			t.Run(c.name+", "+sd.name, func(t *testing.T) {
				e := newDeleteEnv(t, func(cfg *testConfig) {
					cfg.DeleteTasks = c.deletes
					cfg.ReclusterInterval = 0
					cfg.RetentionInterval = time.Hour
					cfg.Retention = retention.Config{DefaultPeriod: 30 * 24 * time.Hour, DeleteDelay: 2 * time.Hour, MaxFiles: 8, MaxBytes: 1 << 30, Metadata: metadata}
				})
				sealDays(e, 3, 10, 0, 1)
				e.te.DrainAll()
				if c.deletes {
					testlake.Record(t, e.lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
				}
				// A rule that ends part of every day's file: retention must rewrite, which waits.
				if _, err := retention.Set(context.Background(), e.lake, "events", retention.Policy{Period: "30d",
					Rules: []retention.Rule{{Where: []rows.Condition{{Column: "severity", Values: []string{"debug"}}}, Period: "3d"}}}); err != nil {
					t.Fatal(err)
				}
				m := newMaintainer(t, e, e.lake, func() time.Time { return retentionNow })
				core, logs := zapobserver.New(zap.DebugLevel)
				m.Log = zap.New(core)
				rep := sd.cycle(t, m)
				if rep.Planned != 0 {
					t.Fatalf("setup: the cycle planned %d rewrites; the test needs an idle cycle", rep.Planned)
				}
				if c.deletes && len(rep.DeleteSweeps) != 1 || !c.deletes && len(rep.Retention) != 1 {
					t.Fatalf("setup: %d delete sweeps, %d retention runs; want the %s to be what waited", len(rep.DeleteSweeps), len(rep.Retention), c.name)
				}
				for _, te := range rep.TableErrors {
					t.Errorf("a shutdown is a table error: %s %s: %v", te.Stage, te.Table, te.Err)
				}
				pub := published(m)
				for _, err := range pub.errors {
					t.Errorf("a shutdown published an error: %v", err)
				}
				if st := pub.deletes["events"]; st != nil && st.LastSweep != nil && st.LastSweep.Error != "" {
					t.Errorf("a shutdown published a delete sweep error: %q", st.LastSweep.Error)
				}
				if st := pub.retent["events"]; st != nil && st.LastRun != nil && st.LastRun.Error != "" {
					t.Errorf("a shutdown published a retention error: %q", st.LastRun.Error)
				}
				for _, l := range logs.All() {
					if l.Level >= zap.WarnLevel {
						t.Errorf("a shutdown logged at %s: %s %v", l.Level, l.Message, l.ContextMap())
					}
				}
				if v := counterValue(t, m.Metrics, "siglake_compactor_rewrites_total", "committed"); v != 0 {
					t.Errorf("a merge started after the shutdown: %v rewrites committed", v)
				}
			})
		}
	}
}
