package binleases

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/sidecar/work"
)

// TestObserverOnOwnerAndWorker: instrumented, a running owner and worker report every lease to
// the observer, on both sides alike: a bin committed, one whose commit conflicts, and one whose
// renewals are lost (it lapses on the owner; its late result is refused, the worker told expired).
// Snapshots taken meanwhile race with neither (run under -race); the last shows no bin
// outstanding and the ends of each side.
func TestObserverOnOwnerAndWorker(t *testing.T) {
	hub := peermsg.NewLocalHub()
	hub.SetFilter(func(m peermsg.LocalMessage) peermsg.Fate {
		return peermsg.Fate{Drop: m.Kind() == work.KindWorker && strings.Contains(string(m.Msg), `"type":"renew"`)}
	})
	o := NewObserver(NewMetrics(prometheus.NewRegistry()), zap.NewNop())
	book := work.NewBook(work.Config{MinDuration: 300 * time.Millisecond, OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{5}))
	ocfg := work.OwnerConfig{Book: book, Catalog: "cat", Tick: 20 * time.Millisecond,
		Check: func(context.Context, work.Lease, [][]byte) error { return nil },
		Commit: func(_ context.Context, l work.Lease, _ work.WorkerMessage) work.CommitResult {
			if strings.Contains(l.Job.Inputs[0].Path, "/race-") {
				return work.CommitResult{Outcome: work.OutcomeConflict, Removed: true}
			}
			return work.CommitResult{Outcome: work.OutcomeCommitted}
		},
		Remove: func(context.Context, work.Lease, [][]byte) {}}
	o.InstrumentOwner(&ocfg)
	owner := work.NewOwner(ocfg, hub.Member("owner"))
	wcfg := work.WorkerConfig{Catalog: "cat", Poll: 10 * time.Millisecond,
		Owners: func() []string { return []string{"owner"} },
		Budget: func() work.Want { return work.Want{FreeBytes: 4, MergeBytes: 1} },
		Merge: func(ctx context.Context, g work.Grant, _ func()) work.Merge {
			if strings.Contains(g.Job.Inputs[0].Path, "/slow-") {
				select { // longer than its lease, whose renewals are all lost
				case <-time.After(time.Second):
				case <-ctx.Done():
					return work.Merge{Err: ctx.Err()}
				}
			}
			return work.Merge{Files: [][]byte{[]byte("f")}, BytesRead: g.Job.Bytes(), BytesWritten: 10, Took: time.Millisecond}
		}}
	o.InstrumentWorker(&wcfg)
	worker := work.NewWorker(wcfg, hub.Member("w"))
	stop := runAll(hub, owner.Run, worker.Run, func(ctx context.Context) error { // the process's publish loop
		for ctx.Err() == nil {
			o.Snapshot(book, true)
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if refused := owner.Offer("events", []work.Job{job("ok", 2, 100), job("race", 2, 100), job("slow", 2, 100)}); len(refused) > 0 {
		t.Fatal(refused[0].Err)
	}
	m := o.Metrics
	workerWant := map[string]float64{"committed": 1, "conflict": 1, "expired": 1}
	for deadline := time.Now().Add(20 * time.Second); ; {
		done := true
		for oc, n := range workerWant {
			done = done && testutil.ToFloat64(m.WorkerBins.WithLabelValues(oc)) == n
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker ends: %v", o.Snapshot(nil, true).Worker.Done)
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	st := o.Snapshot(book, true)
	for what, c := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"owner committed":    {m.Ends.WithLabelValues("events", "committed"), 1},
		"owner conflict":     {m.Ends.WithLabelValues("events", "conflict"), 1},
		"owner lapsed":       {m.Ends.WithLabelValues("events", "lapsed"), 1},
		"refused result":     {m.Refused.WithLabelValues("result", "not_live"), 1},
		"leased bins":        {m.LeasedBins.WithLabelValues("events"), 0},
		"offered bins":       {m.OfferedBins.WithLabelValues("events"), 0},
		"running":            {m.WorkerRunning, 0},
		"worker input bytes": {m.WorkerInputBytes, 600},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", what, got, c.want)
		}
	}
	if len(st.Tables) != 1 || st.Tables[0].LeasedBins != 0 || len(st.Tables[0].Ends) != 3 || st.Worker.RunningBins != 0 ||
		st.Worker.Done["expired"] != 1 {
		t.Fatalf("last snapshot: %+v %+v", st.Tables, st.Worker)
	}
}

// TestWorkerWaitingForMemory: a worker granted two bins while another merge holds the process's
// merge memory shows them waiting, none running (gauges and status); once that merge gives its
// memory back, the bin that got it runs and the other still waits; both end at 0.
func TestWorkerWaitingForMemory(t *testing.T) {
	o := NewObserver(NewMetrics(prometheus.NewRegistry()), zap.NewNop())
	hub := peermsg.NewLocalHub()
	book := work.NewBook(work.Config{MinDuration: time.Minute, OwnerWait: time.Hour}, rand.NewChaCha8([32]byte{7}))
	owner := work.NewOwner(work.OwnerConfig{Book: book, Catalog: "cat", Tick: 20 * time.Millisecond,
		Check: func(context.Context, work.Lease, [][]byte) error { return nil },
		Commit: func(context.Context, work.Lease, work.WorkerMessage) work.CommitResult {
			return work.CommitResult{Outcome: work.OutcomeCommitted}
		},
		Remove: func(context.Context, work.Lease, [][]byte) {}}, hub.Member("owner"))
	memory := membudget.New(1, membudget.Options{}) // one merge's share
	other, err := memory.Reserve(context.Background(), membudget.LoopMerge, 1)
	if err != nil {
		t.Fatal(err)
	}
	finish := make(chan struct{})
	wcfg := work.WorkerConfig{Catalog: "cat", Poll: 10 * time.Millisecond,
		Owners: func() []string { return []string{"owner"} },
		Budget: func() work.Want { return work.Want{FreeBytes: 2, MergeBytes: 1} }, // asked before the other merge began
		Merge: func(ctx context.Context, g work.Grant, merging func()) work.Merge {
			release, err := memory.Reserve(ctx, membudget.LoopMerge, 1)
			if err != nil {
				return work.Merge{Err: err}
			}
			defer release()
			merging()
			select {
			case <-finish:
			case <-ctx.Done():
				return work.Merge{Err: ctx.Err()}
			}
			return work.Merge{Files: [][]byte{[]byte("f")}, BytesRead: g.Job.Bytes(), BytesWritten: 10, Took: time.Millisecond}
		}}
	o.InstrumentWorker(&wcfg)
	worker := work.NewWorker(wcfg, hub.Member("w"))
	defer runAll(hub, owner.Run, worker.Run)()
	if refused := owner.Offer("events", []work.Job{job("a", 2, 100), job("b", 2, 100)}); len(refused) > 0 {
		t.Fatal(refused[0].Err)
	}
	m := o.Metrics
	gauges := func() (running, waiting float64) {
		return testutil.ToFloat64(m.WorkerRunning), testutil.ToFloat64(m.WorkerWaiting)
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				r, w := gauges()
				t.Fatalf("%s: running %v, waiting %v; status %+v", what, r, w, o.Snapshot(nil, true).Worker)
			}
		}
	}
	until("both bins granted", func() bool { _, w := gauges(); return w == 2 })
	time.Sleep(50 * time.Millisecond) // the memory stays held: nothing may start merging
	if r, w := gauges(); r != 0 || w != 2 {
		t.Fatalf("memory held by another merge: running %v, waiting %v; want 0 and 2", r, w)
	}
	if st := o.Snapshot(nil, true).Worker; st.RunningBins != 0 || st.WaitingBins != 2 || len(st.Running) != 0 || len(st.Waiting) != 2 {
		t.Fatalf("status while the memory is held: %+v", st)
	}
	other() // the other merge ends: one bin gets the memory, the other still waits for it
	until("one bin merging", func() bool { r, w := gauges(); return r == 1 && w == 1 })
	if st := o.Snapshot(nil, true).Worker; st.RunningBins != 1 || st.WaitingBins != 1 || len(st.Running) != 1 ||
		st.Running[0].Merging.IsZero() || len(st.Waiting) != 1 || !st.Waiting[0].Merging.IsZero() {
		t.Fatalf("status with one bin merging: %+v", st)
	}
	close(finish)
	until("both bins committed", func() bool { return testutil.ToFloat64(m.WorkerBins.WithLabelValues(work.OutcomeCommitted)) == 2 })
	if r, w := gauges(); r != 0 || w != 0 {
		t.Fatalf("after both ended: running %v, waiting %v", r, w)
	}
}

// runAll runs each of runs on a goroutine of its own, once the hub's member "owner" handles
// workers' messages, until the stop it returns, which waits for them all.
func runAll(hub *peermsg.LocalHub, runs ...func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range runs {
		wg.Add(1)
		go func() { defer wg.Done(); _ = run(ctx) }()
	}
	for !hub.Member("owner").Handles(work.KindWorker) {
		time.Sleep(time.Millisecond)
	}
	return func() { cancel(); wg.Wait() }
}
