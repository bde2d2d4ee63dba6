package binleases

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/work"
)

func job(name string, n int, size int64) work.Job {
	j := work.Job{Kind: "l0", Partition: "2026-12-04", Dir: "s3://wh/events/data/day=2026-12-04", TargetFileBytes: 64 << 20}
	for i := range n {
		j.Inputs = append(j.Inputs, work.Input{Path: fmt.Sprintf("%s/%s-%d.parquet", j.Dir, name, i), Size: size, Rows: 10, Generation: 0})
	}
	j.Generation = 1
	return j
}

// TestMetricsAtZero: the counters whose labels are closed sets are exported at 0 for every value
// from the start; a table's lease ends once the table is seen.
func TestMetricsAtZero(t *testing.T) {
	reg := prometheus.NewRegistry()
	o := NewObserver(NewMetrics(reg), zap.NewNop())
	m := o.Metrics
	for what, c := range map[string]struct {
		c    prometheus.Collector
		want int
	}{
		"refused":     {m.Refused, len(RefusedMessages) * len(RefusedReasons)},
		"dropped":     {m.Dropped, len(Sides)},
		"worker bins": {m.WorkerBins, len(WorkerOutcomes)},
		"ends":        {m.Ends, 0},
	} {
		if n := testutil.CollectAndCount(c.c); n != c.want {
			t.Errorf("%s: %d series at start, want %d", what, n, c.want)
		}
	}
	o.Snapshot(work.NewBook(work.Config{}, rand.NewPCG(1, 2)), false)
	book := work.NewBook(work.Config{}, rand.NewPCG(1, 2))
	book.Offer("events", []work.Job{job("a", 2, 10)}, time.Now())
	o.Snapshot(book, false)
	if n := testutil.CollectAndCount(m.Ends); n != len(EndOutcomes) {
		t.Errorf("ends of a seen table: %d series, want %d", n, len(EndOutcomes))
	}
}

// TestOwnerSide: the gauges follow the book's outstanding work (0 once it is gone, absent after
// Forget); every lease end and refusal moves its counter; lapsed, failed and maybe_committed ends
// are logged at most once a minute per table, saying how many each line stands for; the status
// lists the table's offers and leases with their ends.
func TestOwnerSide(t *testing.T) {
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	o := NewObserver(NewMetrics(reg), zap.New(core))
	o.Now = func() time.Time { return now }
	m := o.Metrics
	book := work.NewBook(work.Config{MinDuration: time.Minute, OwnerWait: time.Hour}, rand.NewPCG(1, 2))
	if refused := book.Offer("events", []work.Job{job("a", 3, 100), job("b", 2, 100), job("c", 1, 50)}, now.Add(-time.Minute)); len(refused) > 0 {
		t.Fatal(refused[0].Err)
	}
	leases, err := book.Take("pod-b", work.Want{FreeBytes: 2, MergeBytes: 1}, false, now.Add(-30*time.Second))
	if err != nil || len(leases) != 2 {
		t.Fatalf("took %d leases (%v), want 2", len(leases), err)
	}
	cfg := work.OwnerConfig{}
	var told []string
	cfg.Ended = func(_ work.Lease, outcome string) { told = append(told, outcome) } // the caller's own hook stays
	o.InstrumentOwner(&cfg)

	st := o.Snapshot(book, false)
	if len(st.Tables) != 1 || st.Worker != nil {
		t.Fatalf("status: %+v", st)
	}
	tb := st.Tables[0]
	if tb.Table != "events" || tb.OfferedBins != 1 || tb.OfferedBytes != 50 || tb.LeasedBins != 2 || tb.LeasedBytes != 500 ||
		len(tb.Offers) != 1 || tb.Offers[0].Files != 1 || !tb.Offers[0].Offered.Equal(now.Add(-time.Minute)) ||
		len(tb.Leases) != 2 || tb.Leases[0].Worker != "pod-b" || len(tb.Leases[0].ID) != 8 || tb.Leases[0].Files != 3 ||
		!tb.Leases[0].Deadline.Equal(now.Add(30*time.Second)) || tb.Ends != nil {
		t.Fatalf("table status: %+v", tb)
	}
	for what, c := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"offered bins":  {m.OfferedBins.WithLabelValues("events"), 1},
		"offered bytes": {m.OfferedBytes.WithLabelValues("events"), 50},
		"leased bins":   {m.LeasedBins.WithLabelValues("events"), 2},
		"leased bytes":  {m.LeasedBytes.WithLabelValues("events"), 500},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", what, got, c.want)
		}
	}

	// Both leases lapse, then more of the same: one line per minute per table says how many.
	for _, l := range book.Expire(now.Add(time.Hour)) {
		cfg.Ended(l, work.EndLapsed)
	}
	for range 3 {
		cfg.Ended(work.Lease{Table: "events", ID: "0123456789abcdef"}, work.EndLapsed)
	}
	cfg.Ended(work.Lease{Table: "audit"}, work.OutcomeCommitted)
	cfg.Ended(work.Lease{Table: "audit"}, work.OutcomeMaybeCommitted)
	cfg.Refused(work.WorkerMessage{Type: work.TypeResult, From: "pod-b"}, work.RefusedNotLive)
	cfg.Refused(work.WorkerMessage{Type: work.TypeRenew, From: "pod-c"}, work.RefusedNotHolder)
	cfg.Dropped()
	if len(told) != 7 {
		t.Fatalf("the caller's Ended hook was told %d ends, want 7", len(told))
	}
	for what, c := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"lapsed":             {m.Ends.WithLabelValues("events", "lapsed"), 5},
		"committed at 0":     {m.Ends.WithLabelValues("events", "committed"), 0},
		"audit committed":    {m.Ends.WithLabelValues("audit", "committed"), 1},
		"refused not_live":   {m.Refused.WithLabelValues("result", "not_live"), 1},
		"refused not_holder": {m.Refused.WithLabelValues("renew", "not_holder"), 1},
		"dropped owner":      {m.Dropped.WithLabelValues("owner"), 1},
		"leased bins":        {m.LeasedBins.WithLabelValues("events"), 2}, // until the next snapshot
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", what, got, c.want)
		}
	}
	lapsed := logs.FilterMessageSnippet("lapsed").All()
	if len(lapsed) != 1 || lapsed[0].ContextMap()["table"] != "events" || lapsed[0].ContextMap()["partition"] != "2026-12-04" {
		t.Fatalf("lapsed lines: %+v", lapsed)
	}
	if n := logs.FilterMessageSnippet("outcome unknown").Len(); n != 1 {
		t.Errorf("%d maybe_committed lines, want 1", n)
	}
	if n := logs.FilterField(zap.String("table", "audit")).Len(); n != 1 {
		t.Errorf("committed ends are not logged: %d audit lines, want 1 (maybe_committed)", n)
	}
	now = now.Add(logEvery)
	cfg.Ended(work.Lease{Table: "events"}, work.EndLapsed)
	if l := logs.FilterMessageSnippet("lapsed").All(); len(l) != 2 || l[1].ContextMap()["like_it_since_last_line"] != int64(5) {
		t.Fatalf("the minute's second line: %+v", l)
	}

	st = o.Snapshot(book, false)
	if len(st.Tables) != 2 || st.Tables[0].Table != "audit" || st.Tables[1].Table != "events" || st.Tables[1].OfferedBins != 1 ||
		st.Tables[1].LeasedBins != 0 || st.Tables[1].Ends["lapsed"] != 6 || st.Tables[0].Ends["maybe_committed"] != 1 {
		t.Fatalf("after the lapses: %+v", st.Tables)
	}
	if got := testutil.ToFloat64(m.LeasedBins.WithLabelValues("events")); got != 0 {
		t.Errorf("leased bins after the lapses = %v, want 0", got)
	}
	o.Forget("events")
	o.Forget("audit")
	if n := testutil.CollectAndCount(m.OfferedBins) + testutil.CollectAndCount(m.LeasedBytes); n != 0 {
		t.Errorf("%d gauge series after Forget, want 0", n)
	}
	book.Drop("events")
	cfg.Ended(work.Lease{Table: "events"}, work.EndDropped)
	if st := o.Snapshot(book, false); len(st.Tables) != 0 || testutil.CollectAndCount(m.OfferedBins) != 0 {
		t.Fatalf("a dropped table came back: %+v", st.Tables)
	}
}

// TestWorkerSide: a started bin waits for memory until its Merging, then runs until its Done; completed merges add their bytes and
// time, failed ones only a log line; every end counts by outcome, and lapsed, lost and refused are
// logged; the status lists the bins running, oldest first, and the ends.
func TestWorkerSide(t *testing.T) {
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	o := NewObserver(NewMetrics(reg), zap.New(core))
	o.Now = func() time.Time { return now }
	m := o.Metrics
	cfg := work.WorkerConfig{}
	o.InstrumentWorker(&cfg)
	g1 := work.Grant{ID: "aaaaaaaa11111111", Table: "events", Job: job("a", 3, 100), DurationMs: 120_000}
	g2 := work.Grant{ID: "bbbbbbbb22222222", Table: "audit", Job: job("b", 1, 10), DurationMs: 60_000}
	cfg.Started("pod-a", g2)
	now = now.Add(time.Second)
	cfg.Started("pod-a", g1)
	if r, w := testutil.ToFloat64(m.WorkerRunning), testutil.ToFloat64(m.WorkerWaiting); r != 0 || w != 2 {
		t.Fatalf("started, none merging: running = %v, waiting = %v, want 0 and 2", r, w)
	}
	now = now.Add(time.Second)
	cfg.Merging(g2)
	cfg.Merged(g2, work.Merge{Err: errors.New("disk full")})
	cfg.Merging(g1)
	cfg.Merging(g1) // told twice: no change
	if st := o.Snapshot(nil, true); !st.Worker.Running[1].Merged.IsZero() {
		t.Fatalf("merging, not merged yet: %+v", st.Worker.Running[1])
	}
	now = now.Add(time.Second)
	cfg.Merged(g1, work.Merge{BytesRead: 300, BytesWritten: 250, Took: 3 * time.Second})
	if r, w := testutil.ToFloat64(m.WorkerRunning), testutil.ToFloat64(m.WorkerWaiting); r != 2 || w != 0 {
		t.Fatalf("both merging: running = %v, waiting = %v, want 2 and 0", r, w)
	}
	st := o.Snapshot(nil, true)
	if st.Tables != nil || st.Worker == nil || len(st.Worker.Running) != 2 || st.Worker.Running[0].ID != "bbbbbbbb" ||
		st.Worker.Running[1].Owner != "pod-a" || st.Worker.Running[1].Bytes != 300 || st.Worker.Running[1].Files != 3 ||
		st.Worker.Running[1].LeaseSeconds != 120 || !st.Worker.Running[1].Merging.Equal(now.Add(-time.Second)) ||
		!st.Worker.Running[1].Merged.Equal(now) || st.Worker.Done != nil ||
		st.Worker.RunningBins != 2 || st.Worker.WaitingBins != 0 || st.Worker.Waiting != nil {
		t.Fatalf("worker status: %+v", st.Worker)
	}
	cfg.Done(g1, work.OutcomeCommitted)
	cfg.Done(g2, work.WorkerLost)
	cfg.Done(work.Grant{ID: "cccccccc"}, work.WorkerRefused) // never started
	cfg.Merging(g1)                                          // after its end: not brought back
	cfg.Dropped()
	for what, c := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"running":       {m.WorkerRunning, 0},
		"waiting":       {m.WorkerWaiting, 0},
		"committed":     {m.WorkerBins.WithLabelValues("committed"), 1},
		"lost":          {m.WorkerBins.WithLabelValues("lost"), 1},
		"refused":       {m.WorkerBins.WithLabelValues("refused"), 1},
		"lapsed at 0":   {m.WorkerBins.WithLabelValues("lapsed"), 0},
		"input bytes":   {m.WorkerInputBytes, 300},
		"output bytes":  {m.WorkerOutputBytes, 250},
		"dropped":       {m.Dropped.WithLabelValues("worker"), 1},
		"dropped owner": {m.Dropped.WithLabelValues("owner"), 0},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", what, got, c.want)
		}
	}
	if h := mergeSeconds(t, reg); h != "sum 3 count 1" {
		t.Errorf("merge seconds: %s, want the completed merge only", h)
	}
	for _, snippet := range []string{"merge of a leased bin failed", "no answer", "another catalog", "dropped a message"} {
		if n := logs.FilterMessageSnippet(snippet).Len(); n != 1 {
			t.Errorf("%d lines with %q, want 1", n, snippet)
		}
	}
	if w := o.Snapshot(nil, true).Worker; len(w.Running) != 0 || w.Done["committed"] != 1 || w.Done["refused"] != 1 {
		t.Fatalf("worker status after: %+v", w)
	}
}

func mergeSeconds(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "siglake_bin_lease_worker_merge_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			return fmt.Sprintf("sum %g count %d", h.GetSampleSum(), h.GetSampleCount())
		}
	}
	return ""
}

// TestCommittingBins: a result being committed shows in the gauge and the status; a table this
// process forgot (it lost the table) is not brought back by its results still committing.
func TestCommittingBins(t *testing.T) {
	reg := prometheus.NewRegistry()
	now := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	o := NewObserver(NewMetrics(reg), zap.NewNop())
	o.Now = func() time.Time { return now }
	book := work.NewBook(work.Config{MinDuration: time.Minute, OwnerWait: time.Hour}, rand.NewPCG(1, 2))
	book.Offer("events", []work.Job{job("a", 3, 100), job("b", 2, 100)}, now)
	leases, err := book.Take("pod-b", work.Want{FreeBytes: 2, MergeBytes: 1}, false, now)
	if err != nil || len(leases) != 2 {
		t.Fatalf("took %d leases (%v)", len(leases), err)
	}
	if _, err := book.Complete(leases[0].ID, "pod-b", now); err != nil {
		t.Fatal(err)
	}
	st := o.Snapshot(book, false)
	if len(st.Tables) != 1 || st.Tables[0].CommittingBins != 1 || st.Tables[0].LeasedBins != 1 {
		t.Fatalf("status while a result commits: %+v", st.Tables)
	}
	if got := testutil.ToFloat64(o.Metrics.Committing.WithLabelValues("events")); got != 1 {
		t.Fatalf("committing gauge %v, want 1", got)
	}
	book.Drop("events") // the table is lost; the completed lease's commit goes on
	o.Forget("events")
	if st := o.Snapshot(book, false); len(st.Tables) != 0 {
		t.Fatalf("a forgotten table came back with its committing result: %+v", st.Tables)
	}
	if n := testutil.CollectAndCount(o.Metrics.Committing); n != 0 {
		t.Fatalf("%d committing series after Forget, want none", n)
	}
}
