package maintain

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	zapobserver "go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/work"
)

// leaseCluster is an owner maintainer offering its bins on a LocalHub, and worker processes (each
// a maintainer of its own on its own lake over the same catalog and warehouse) merging them.
type leaseCluster struct {
	t     *testing.T
	e     *env
	owner *Maintainer
	book  *work.Book

	mu    sync.Mutex
	ends  map[string]int // worker outcomes (work.WorkerConfig.Done), all workers
	fails bool           // the workers' merges fail
	// silent counts merges that returned outputs without saying they held their memory: the
	// worker would show them waiting for memory all through the merge.
	silent int
	// merged, when set, is told of each worker merge that returned, before its result is sent.
	merged func(work.Merge)
}

func newLeaseCluster(t *testing.T, e *env, workers int, clock func() time.Time) *leaseCluster {
	return newLeaseClusterWith(t, e, workers, clock, nil, nil)
}

// newLeaseClusterWith is newLeaseCluster with the owner's usable (nil: leases always travel) and
// worker, which sets up each worker's maintainer (nil: as the owner's configuration).
func newLeaseClusterWith(t *testing.T, e *env, workers int, clock func() time.Time, usable func() bool, worker func(*Maintainer)) *leaseCluster {
	t.Helper()
	c := &leaseCluster{t: t, e: e, ends: map[string]int{}}
	hub := peermsg.NewLocalHub()
	c.owner = newMaintainer(t, e, e.lake, clock)
	c.book = work.NewBook(work.Config{MinDuration: 10 * time.Second, OwnerWait: time.Hour, MaxAge: time.Minute}, rand.NewChaCha8([32]byte{3}))
	check, commit, remove := c.owner.OwnerCallbacks()
	owner := work.NewOwner(work.OwnerConfig{Book: c.book, Catalog: "cat", Check: check, Commit: commit, Remove: remove,
		Ended: c.owner.LeaseEnded, Tick: 20 * time.Millisecond, Retry: 30 * time.Millisecond}, hub.Member("owner"))
	c.owner.Leases = &Leases{Owner: owner, Book: c.book, Workers: func() int { return workers + 1 }, Usable: usable}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() { defer wg.Done(); _ = owner.Run(ctx) }()
	for i := range workers {
		l, err := lake.Open(context.Background(), e.te.Cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		wm := newMaintainer(t, e, l, time.Now)
		if worker != nil {
			worker(wm)
		}
		merge := func(ctx context.Context, g work.Grant, merging func()) work.Merge {
			c.mu.Lock()
			fail := c.fails
			c.mu.Unlock()
			if fail {
				return work.Merge{Err: errors.New("the test's worker fails every merge")}
			}
			said := false
			res := wm.MergeLeased(ctx, g, func() { said = true; merging() })
			c.mu.Lock()
			if res.Err == nil && !said {
				c.silent++
			}
			merged := c.merged
			c.mu.Unlock()
			if merged != nil {
				merged(res)
			}
			return res
		}
		w := work.NewWorker(work.WorkerConfig{Catalog: "cat", Poll: 20 * time.Millisecond,
			Owners: func() []string { return []string{"owner"} },
			Budget: func() work.Want { return work.Want{FreeBytes: 1 << 30, MergeBytes: 1 << 28} },
			Merge:  merge,
			Done: func(_ work.Grant, outcome string) {
				c.mu.Lock()
				c.ends[outcome]++
				c.mu.Unlock()
			}}, hub.Member(string(rune('a'+i))+"-worker"))
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(ctx) }()
	}
	waitUntil(t, "the owner's handler", func() bool { return hub.Member("owner").Handles(work.KindWorker) })
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the workers took every bin on offer and their leases ended.
func (c *leaseCluster) settle() {
	c.t.Helper()
	waitUntil(c.t, "the leased bins to end", func() bool {
		o := c.book.Outstanding("events")
		return o.OfferedBins == 0 && o.LeasedBins == 0 && o.CommittingBins == 0
	})
}

func (c *leaseCluster) ended(outcome string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ends[outcome]
}

// TestLeasedMaintenanceConverges: with bin leases the owner plans and offers; two worker
// processes merge every bin; the owner commits their results. The table converges as it does
// with one process, no row is lost or doubled, the owner merged nothing itself, every merge said
// when it held its memory, and the commits are counted and learnt from as the owner's own are.
func TestLeasedMaintenanceConverges(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 120)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := newLeaseCluster(t, e, 2, func() time.Time { return now })
	m := c.owner
	var depth, l0, offered int
	for cycle := 0; cycle < 40; cycle++ {
		rep, err := m.Cycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Rewrites > 0 {
			t.Fatalf("cycle %d: the owner rewrote %d bins itself; every bin is leasable and taken by workers", cycle, rep.Rewrites)
		}
		offered += c.book.Outstanding("events").OfferedBins + c.book.Outstanding("events").LeasedBins
		c.settle()
		now = now.Add(5 * time.Minute)
		_, depth, l0 = tableState(t, e.lake, m.Plan)
		if depth <= 2 && l0 < 8 {
			break
		}
	}
	if depth > 2 || l0 >= 8 {
		t.Fatalf("not converged: depth %d, %d L0 files", depth, l0)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows after leased rewrites %+v, want %+v", got, want)
	}
	committed := c.ended(work.OutcomeCommitted)
	// Nothing else writes the table: a conflict means a pass planned files a result's commit was
	// replacing (a completed lease's inputs must stay in flight until its commit ends).
	if n := c.ended(work.OutcomeConflict); n > 0 {
		t.Fatalf("%d leased results conflicted (outcomes %v)", n, c.ends)
	}
	if committed == 0 || offered == 0 {
		t.Fatalf("workers committed %d bins of %d offered", committed, offered)
	}
	if c.silent > 0 {
		t.Fatalf("%d leased merges never said they held their memory", c.silent)
	}
	if v := counterValue(t, m.Metrics, "siglake_compactor_rewrites_total", "committed"); int(v) != committed {
		t.Fatalf("the owner counted %v committed rewrites; its workers were answered committed %d times", v, committed)
	}
	if _, err := m.Cycle(context.Background()); err != nil { // takes up the last results
		t.Fatal(err)
	}
	if !m.exec.speed.rate.Known() {
		t.Fatal("the workers' results did not feed the owner's rewrite rate")
	}
	t.Logf("converged: %d bins committed by workers, outcomes %v", committed, c.ends)
}

// TestLeasedBinsFallBackToTheOwner: a bin whose leases end without a commit maxLeaseTries times
// (here every worker fails its merge) is rewritten by the owner itself, so a bin no worker can
// merge still compacts, and its failures meet the owner's poison handling.
func TestLeasedBinsFallBackToTheOwner(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := newLeaseCluster(t, e, 1, func() time.Time { return now })
	c.fails = true
	m := c.owner
	local := 0
	for cycle := 0; cycle < 6 && local == 0; cycle++ {
		rep, err := m.Cycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		local += rep.Rewrites
		if rep.Rewrites > 0 && cycle < maxLeaseTries {
			t.Fatalf("cycle %d: the owner rewrote a bin before its leases failed %d times", cycle, maxLeaseTries)
		}
		c.settle()
		now = now.Add(5 * time.Minute)
	}
	if local == 0 {
		t.Fatalf("the owner never took back bins its worker failed (worker outcomes %v)", c.ends)
	}
	if c.ended(work.OutcomeFailed) < maxLeaseTries {
		t.Fatalf("worker outcomes %v: want at least %d failed leases", c.ends, maxLeaseTries)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
}

// TestCommittingLeaseKeepsItsBin: a pass that runs while a worker's result is being committed
// (its lease completed, the commit not yet settled) keeps the owner's job of the bin, so the
// commit still finds it; the pass does not offer the bin's files again either.
func TestCommittingLeaseKeepsItsBin(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := newLeaseCluster(t, e, 0, func() time.Time { return now })
	if _, err := c.owner.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	ls, err := c.book.Take("w", work.Want{FreeBytes: 1, MergeBytes: 1}, false, time.Now())
	if err != nil || len(ls) != 1 {
		t.Fatalf("take: %v %v", ls, err)
	}
	l, err := c.book.Complete(ls[0].ID, "w", time.Now()) // the result arrived; its commit is on its way
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Minute)
	if _, err := c.owner.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.owner.exec.leased.lookup(l); !ok {
		t.Fatal("a pass while the result was committing forgot the owner's job of its bin")
	}
	for _, o := range c.book.Offers("events") {
		if jobKey(o.Job) == jobKey(l.Job) {
			t.Fatal("the committing bin is on offer again")
		}
	}
	c.book.Settle(l)
}

// TestLeasedCommitsBesideBackToBackCycles: workers' results commit (and get their indexes
// rebuilt) while the owner's cycles run back to back, with no pause between them: the owner's
// commit goroutine and the cycle share the executor, and under -race nothing they touch may be
// unguarded (the index rebuild publishes into the observer, so it runs in the cycle).
func TestLeasedCommitsBesideBackToBackCycles(t *testing.T) {
	e := newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0
		c.SnapshotExpireInterval = 0
		c.IndexRebuild = true
		c.MergeMemoryBytes = 1 << 20
	})
	want := smallFilesTable(t, e, 120)
	setProps(t, e, iceberg.Properties{lake.IndexColumnsProperty: strings.Join(rebuildCols, ",")})
	c := newLeaseCluster(t, e, 2, time.Now)
	m := c.owner
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && c.ended(work.OutcomeCommitted) < 4 {
		if _, err := m.Cycle(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c.settle()
	if _, err := m.Cycle(context.Background()); err != nil { // the last results' index rebuilds
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	if c.ended(work.OutcomeCommitted) == 0 {
		t.Fatalf("no leased bin committed: %v", c.ends)
	}
	if v := counterValue(t, m.Metrics, "siglake_index_rebuild_files_total", ""); v == 0 {
		t.Fatal("no index rebuild ran for the leased commits")
	}
}

// TestLeaseCommitPastTheAgeBound: a result whose commit would start after its lease's age bound
// (it waited behind slow commits) is not committed: outputs the owner cannot vouch for would
// be past orphan gc's floor.
func TestLeaseCommitPastTheAgeBound(t *testing.T) {
	e := newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0
		c.SnapshotExpireInterval = 0
		c.RewriteMaxAge = time.Minute
	})
	smallFilesTable(t, e, 20)
	c := newLeaseCluster(t, e, 0, time.Now)
	l := work.Lease{ID: "0123456789abcdef0123456789abcdef", Table: "events", Taken: time.Now().Add(-2 * time.Minute)}
	res := c.owner.exec.commitLeased(context.Background(), l, work.WorkerMessage{})
	if res.Outcome != work.OutcomeFailed || res.Removed || res.Err == nil || !strings.Contains(res.Err.Error(), "past the") {
		t.Fatalf("a commit past the age bound: %+v, want failed (outputs left to the owner's Remove)", res)
	}
}

// TestNoOffersWhileLeasesCannotTravel: while gossip is not authenticated (a key migration) the
// owner offers nothing and rewrites every bin itself, as without leases.
func TestNoOffersWhileLeasesCannotTravel(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := newLeaseClusterWith(t, e, 1, func() time.Time { return now }, func() bool { return false }, nil)
	rep, err := c.owner.Cycle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewrites == 0 || c.book.Outstanding("events") != (work.Outstanding{}) {
		t.Fatalf("owner rewrote %d bins, book %+v: want every bin rewritten here, none offered", rep.Rewrites, c.book.Outstanding("events"))
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
}

// TestReserveThenHeld: a leased merge says it holds its memory only once the budget granted it,
// never on a refused wait, and at once with no budget.
func TestReserveThenHeld(t *testing.T) {
	var held int
	grant, granted := make(chan struct{}), make(chan struct{})
	reserve := reserveThen(func(ctx context.Context, _ string, _ int64) (func(), error) {
		select {
		case <-grant:
			return func() {}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}, func() { held++ })
	go func() {
		defer close(granted)
		if _, err := reserve(context.Background(), "merge", 1); err != nil {
			t.Error(err)
		}
	}()
	time.Sleep(20 * time.Millisecond)
	if held != 0 {
		t.Fatal("said held while waiting for memory")
	}
	close(grant)
	<-granted
	if held != 1 {
		t.Fatalf("held %d times once granted, want 1", held)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := reserveThen(func(ctx context.Context, _ string, _ int64) (func(), error) { return nil, ctx.Err() },
		func() { held++ })(ctx, "merge", 1); err == nil || held != 1 {
		t.Fatalf("a refused wait: err %v, held %d times (want an error, still 1)", err, held)
	}
	if _, err := reserveThen(nil, func() { held++ })(context.Background(), "merge", 1); err != nil || held != 2 {
		t.Fatalf("no budget: err %v, held %d times (want none, 2)", err, held)
	}
}

// TestLeasedMergesKeepTheWorkersBounds: a worker merges a leased bin within its own merge memory
// budget and fan-in (--merge-memory-bytes, --max-fan-in), not the owner's, which planned the bin:
// with a budget too small for the in-memory path every leased bin goes page-bounded, each merge
// reserves the worker's budget, and the worker's log says why: its streams do not fit, or, with
// a fan-in of 2, the bin's inputs exceed the worker's k-way limit.
func TestLeasedMergesKeepTheWorkersBounds(t *testing.T) {
	for _, tc := range []struct {
		fanIn  int
		reason string
	}{{0, "do too"}, {2, "exceeds the k-way limit 2"}} {
		t.Run(fmt.Sprintf("fan-in %d", tc.fanIn), func(t *testing.T) { leasedMergeBounds(t, tc.fanIn, tc.reason) })
	}
}

func leasedMergeBounds(t *testing.T, fanIn int, reason string) {
	const budget = 2 << 20
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	rows := smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	var reserved []int64
	var workerMetrics *Metrics
	core, logs := zapobserver.New(zap.InfoLevel)
	c := newLeaseClusterWith(t, e, 1, func() time.Time { return now }, nil, func(wm *Maintainer) {
		wm.Cfg.MergeMemoryBytes, wm.Log = budget, zap.New(core)
		if fanIn > 0 {
			wm.Cfg.MaxFanIn = fanIn
		}
		wm.Reserve = func(_ context.Context, what string, n int64) (func(), error) {
			mu.Lock()
			defer mu.Unlock()
			if what == membudget.LoopLeasedMerge { // a leased bin's merge, under its own loop
				reserved = append(reserved, n)
			}
			return func() {}, nil
		}
		workerMetrics = wm.Metrics
	})
	if c.owner.Cfg.MaxFanIn == fanIn || c.owner.Cfg.MergeMemoryBytes == budget {
		t.Fatal("the owner has the worker's bounds: the test would not tell them apart")
	}
	for cycle := 0; cycle < 3; cycle++ {
		if _, err := c.owner.Cycle(context.Background()); err != nil {
			t.Fatal(err)
		}
		c.settle()
		now = now.Add(5 * time.Minute)
	}
	committed := c.ended(work.OutcomeCommitted)
	if committed == 0 {
		t.Fatalf("no leased bin committed (outcomes %v)", c.ends)
	}
	for _, p := range []merge.PathKind{merge.PathInMemory, merge.PathKWay, merge.PathSplice} {
		if n := pathCount(t, workerMetrics, p); n > 0 {
			t.Fatalf("the worker merged %v bins on the %s path; with its budget of %d bytes only page-bounded fits", n, p, budget)
		}
	}
	merged := logs.FilterMessage("merged a leased bin").All()
	if len(merged) < committed || int(pathCount(t, workerMetrics, merge.PathPageBounded)) < committed {
		t.Fatalf("%d leased merges logged, %v page-bounded, %d committed", len(merged), pathCount(t, workerMetrics, merge.PathPageBounded), committed)
	}
	for _, l := range merged {
		if why := l.ContextMap()["merge_reason"]; !strings.Contains(fmt.Sprint(why), reason) {
			t.Fatalf("a leased merge's reason %q; want it to say %q (fan-in %d)", why, reason, fanIn)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reserved) < committed {
		t.Fatalf("%d merge reservations for %d committed bins", len(reserved), committed)
	}
	for _, n := range reserved {
		if n != budget {
			t.Fatalf("a leased merge reserved %d bytes; the worker's budget is %d", n, budget)
		}
	}
	if got := e.tableSum("events"); got != rows {
		t.Fatalf("rows %+v, want %+v", got, rows)
	}
}

// pathCount is siglake_merge_rewrites_total{path} of m's registry (labels in snake_case).
func pathCount(t *testing.T, m *Metrics, path merge.PathKind) float64 {
	t.Helper()
	return testutil.ToFloat64(m.Merge.Rewrites.WithLabelValues(strings.ReplaceAll(string(path), "-", "_")))
}

// TestOwnerChangeRefusesItsLeasesResults: a worker finishes a leased bin after the owner lost the
// table. The old owner refuses the result (expired) and the worker removes its outputs; the new
// owner, which never heard of the lease, maintains the table; no row is lost or doubled and no
// output of the refused merge is live or left on disk.
func TestOwnerChangeRefusesItsLeasesResults(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 60)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	c := newLeaseCluster(t, e, 1, clock)
	var lost atomic.Bool
	c.owner.Owns = func(string) bool { return !lost.Load() }
	held, release := make(chan work.Merge, 1), make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the cluster's: a failed check must not leave the worker held
	c.mu.Lock()
	c.merged = func(m work.Merge) {
		select {
		case held <- m: // the first merge waits for the owner change
			<-release
		default:
		}
	}
	c.mu.Unlock()
	if _, err := c.owner.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	var first work.Merge
	select {
	case first = <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("no leased merge ran")
	}
	if first.Err != nil || len(first.Files) == 0 {
		t.Fatalf("the held merge: %v, %d outputs", first.Err, len(first.Files))
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	outs, err := rewrite.DecodeOutputs(tbl, first.Files)
	if err != nil {
		t.Fatal(err)
	}
	// The owner loses the table: its next cycle drops the leases.
	lost.Store(true)
	if _, err := c.owner.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if o := c.book.Outstanding("events"); o.LeasedBins != 0 || o.OfferedBins != 0 {
		t.Fatalf("the old owner's book after the change: %+v", o)
	}
	free()
	deadline := time.Now().Add(60 * time.Second)
	for c.ended(work.OutcomeExpired) == 0 {
		if time.Now().After(deadline) {
			c.mu.Lock()
			t.Fatalf("the late result was not refused: worker outcomes %v", c.ends)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.ended(work.OutcomeCommitted); n != 0 {
		t.Fatalf("%d leased results committed after the owner lost the table", n)
	}
	// The new owner maintains the table without leases.
	b := newMaintainer(t, e, e.lake, clock)
	for cycle := 0; cycle < 3; cycle++ {
		if _, err := b.Cycle(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(5 * time.Minute)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	live := map[string]bool{}
	files, _, _ := tableState(t, e.lake, b.Plan)
	for _, f := range files {
		live[f.Path] = true
	}
	for _, df := range outs {
		p := df.FilePath()
		if live[p] {
			t.Fatalf("the refused merge's output %s is live", p)
		}
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the refused merge's output %s is still on disk (%v)", p, err)
		}
	}
}
