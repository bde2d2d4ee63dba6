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
		Merge: func(ctx context.Context, g work.Grant) work.Merge {
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
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{owner.Run, worker.Run} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = run(ctx) }()
	}
	wg.Add(1)
	go func() { // the process's publish loop
		defer wg.Done()
		for ctx.Err() == nil {
			o.Snapshot(book, true)
			time.Sleep(time.Millisecond)
		}
	}()
	for !hub.Member("owner").Handles(work.KindWorker) {
		time.Sleep(time.Millisecond)
	}
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
	cancel()
	wg.Wait()
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
