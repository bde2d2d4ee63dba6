package drain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/drain/handoff"
	"github.com/siglake/siglake/sidecar/drain/marker"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// groupCommitter is a real handoff.GroupCommitter for the tests: it commits through the real lake
// (lake.CommitAppend on the embedded catalog), as a committer does, and can be told to lose the
// answer after committing, fail with the files handed off (or before handing them off), hold a
// request and land it later (a stale committer), or ask for a slow-down. On every request it
// checks the pod invariant: one request in flight, and no later range of a stream before the
// earlier ones are committed.
type groupCommitter struct {
	t    *testing.T
	lake *lake.Lake

	mu            sync.Mutex
	loseAnswers   int // commits whose answer is lost: committed, then an error with handedOff
	failHandedOff int // requests that fail with handedOff, never committed
	failDirect    int // requests that fail before any hand-off (handedOff false, outcome known)
	hold          int // requests held: an error with handedOff now, committed by a later Commit
	held          []lake.AppendRequest
	slow          map[string]time.Duration
	sent          []lake.AppendRequest
	epochs        []uint64 // the claim epoch of each request, as sent
	beats         []heartbeat
	// during, when set, runs at the start of every Commit (the batch is in flight).
	during func(req lake.AppendRequest)

	inFlight atomic.Int32
}

type heartbeat struct {
	table, stream      string
	scan, pendingSince time.Time
}

var errAnswerLost = errors.New("the committer's answer was lost")

func newGroupCommitter(t *testing.T, l *lake.Lake) *groupCommitter {
	return &groupCommitter{t: t, lake: l, slow: map[string]time.Duration{}}
}

// take uses up one of n, under g.mu.
func take(n *int) bool {
	if *n > 0 {
		*n--
		return true
	}
	return false
}

func (g *groupCommitter) Commit(ctx context.Context, t *table.Table, req lake.AppendRequest, epoch uint64, _ handoff.Progress) (lake.CommitResult, bool, error) {
	if n := g.inFlight.Add(1); n != 1 {
		g.t.Errorf("%d group commits in flight at once: the drain pipelines batches", n)
	}
	defer g.inFlight.Add(-1)
	if t == nil || t.Identifier()[len(t.Identifier())-1] != req.Table {
		g.t.Errorf("Commit got table %v for a request of %s", t, req.Table)
	}
	g.checkInvariant(ctx, req)
	if g.during != nil {
		g.during(req)
	}
	g.mu.Lock()
	g.sent, g.epochs = append(g.sent, req), append(g.epochs, epoch)
	held := g.held
	g.held = nil
	switch {
	case take(&g.failDirect):
		g.mu.Unlock()
		return lake.CommitResult{}, false, errors.New("no committer: refused before sending")
	case take(&g.failHandedOff):
		g.mu.Unlock()
		return lake.CommitResult{}, true, errors.New("the committer did not answer in time")
	case take(&g.hold):
		g.held = append(held, req)
		g.mu.Unlock()
		return lake.CommitResult{}, true, errors.New("the committer holds the request")
	}
	lose := take(&g.loseAnswers)
	g.mu.Unlock()
	for _, h := range held { // a stale committer lands what it held, just before this request
		if res, err := g.lake.CommitAppend(ctx, h, lake.DefaultRetry); err != nil {
			g.t.Logf("held request %s..%s: %v", h.First, h.Last, err)
		} else {
			g.t.Logf("held request %s..%s landed late: %s", h.First, h.Last, res.Outcome)
		}
	}
	res, err := g.lake.CommitAppend(ctx, req, lake.DefaultRetry)
	if err == nil && lose {
		return lake.CommitResult{}, true, errAnswerLost
	}
	return res, true, err
}

// checkInvariant fails the test when req starts above segments of an earlier request of its
// stream that the table does not hold: a later range sent before the earlier one is known
// committed. An earlier request req starts inside is settled once the mark reached its first
// segment (it can never land again: the mark covers or is inside it).
func (g *groupCommitter) checkInvariant(ctx context.Context, req lake.AppendRequest) {
	tb, err := g.lake.LoadTable(ctx, req.Table)
	if err != nil {
		g.t.Error(err)
		return
	}
	mark, ok, err := marks.ReadMark(tb, req.Stream)
	if err != nil {
		g.t.Error(err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, u := range g.sent {
		if u.Table != req.Table || u.Stream != req.Stream || !u.First.Less(req.First) {
			continue
		}
		need := u.Last // req starts above all of u: all of u must be in
		if !u.Last.Less(req.First) {
			need = u.First // req starts inside u: u must be settled
		}
		if !ok || mark.Less(need) {
			g.t.Errorf("request %s..%s sent while the earlier request %s..%s is not committed (mark %v %v)",
				req.First, req.Last, u.First, u.Last, mark, ok)
		}
	}
}

func (g *groupCommitter) Heartbeat(table, stream string, scan, pendingSince time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.beats = append(g.beats, heartbeat{table, stream, scan, pendingSince})
}

func (g *groupCommitter) SlowDown(table string) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.slow[table]
}

// set changes g's behaviour under its lock.
func (g *groupCommitter) set(f func(g *groupCommitter)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f(g)
}

// newGroupEnv is newEnv with a group committer on the same lake.
func newGroupEnv(t *testing.T, mutate func(*testConfig)) (*env, *groupCommitter) {
	e := newEnv(t, mutate)
	g := newGroupCommitter(t, e.lake)
	e.drain.Group = g
	return e, g
}

// cycleUntilDrained runs flush cycles until the WAL is empty (failed batches are retried by the
// next cycle, as the drain loop does), at most n.
func (e *env) cycleUntilDrained(n int) {
	e.t.Helper()
	for i := 0; i < n; i++ {
		res, err := e.drain.Cycle(context.Background(), true)
		e.t.Logf("cycle %d: %+v %v", i, res, err)
		if err == nil && res.Pending == 0 {
			return
		}
	}
	e.t.Fatalf("WAL not drained after %d cycles", n)
}

// TestGroupCommitEveryRowOnce: with a group committer every batch goes through it, the drain's
// metrics keep their per-batch meaning, and the table holds every row once.
func TestGroupCommitEveryRowOnce(t *testing.T) {
	e, g := newGroupEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	want := e.writeSegments("events", 4, 2000, 1, time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC))
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil || res.Segments != 4 || res.Pending != 0 {
		t.Fatalf("cycle %+v %v", res, err)
	}
	if len(g.sent) != 4 {
		t.Fatalf("%d requests reached the committer, want the 4 batches", len(g.sent))
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
	if n := counterValue(t, e.drain.Metrics, "siglake_drain_commits_total", "committed"); n != 4 {
		t.Fatalf("committed commits %v, want 4", n)
	}
}

// TestKilledDuringHandOffReported: the in-flight marker says a batch was handed off before the
// hand-off starts, so a kill during it is reported at the next start with its files as possibly
// still committed by a committer.
func TestKilledDuringHandOffReported(t *testing.T) {
	e, g := newGroupEnv(t, nil)
	e.writeSegments("events", 1, 1000, 10, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	var left []byte
	g.during = func(req lake.AppendRequest) {
		raw, err := os.ReadFile(marker.Path(e.cfg.WALDir, req.Table))
		if err != nil {
			t.Fatal(err)
		}
		left = raw // what a kill here would leave
	}
	e.cycleUntilDrained(1)
	if err := os.WriteFile(marker.Path(e.cfg.WALDir, "events"), left, 0o644); err != nil {
		t.Fatal(err)
	}
	u := e.drain.CheckUncleanStop(context.Background())
	if u == nil || len(u.Batches) != 1 || !u.Batches[0].HandedOff || u.Batches[0].FilesWritten == 0 {
		t.Fatalf("unclean stop %+v, want one handed-off batch with its files", u)
	}
}

// TestGroupAnswerLostNoDuplicate: the committer commits but its answer is lost (handedOff, an
// error). The drain keeps the segments and the files (they are referenced: deleting them would
// break the table), the next cycle finds the batch in through the mark, and nothing is doubled.
func TestGroupAnswerLostNoDuplicate(t *testing.T) {
	e, g := newGroupEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	want := e.writeSegments("events", 3, 2000, 2, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	g.set(func(g *groupCommitter) { g.loseAnswers = 3 })
	e.cycleUntilDrained(8)
	if g.loseAnswers != 0 {
		t.Fatalf("%d lost answers left: the test did not lose them", g.loseAnswers)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v: a lost answer doubled, lost or deleted rows", got, want)
	}
	if n := counterValue(t, e.drain.Metrics, "siglake_drain_commits_total", "failed"); n != 3 {
		t.Fatalf("failed commits %v, want the 3 lost answers", n)
	}
}

// TestHandedOffFilesNeverRemoved: a batch whose commit failed after the hand-off keeps its files
// on disk (a committer may still commit them); one that failed before any hand-off, with its
// outcome known, removes them as a direct commit does. Either way the batch is retried and every
// row lands once.
func TestHandedOffFilesNeverRemoved(t *testing.T) {
	e, g := newGroupEnv(t, nil)
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 1, 1000, 3, start)
	e.cycleUntilDrained(1) // the table exists; its first files are committed
	want.Merge(e.writeSegments("events", 2, 1000, 4, start.Add(time.Hour)))

	newFiles := func(before map[string]bool) []string {
		var out []string
		for p := range dataFiles(t, e.cfg.Lake.Warehouse) {
			if !before[p] {
				out = append(out, p)
			}
		}
		return out
	}
	before := dataFiles(t, e.cfg.Lake.Warehouse)
	g.set(func(g *groupCommitter) { g.failHandedOff = 1 })
	if _, err := e.drain.Cycle(context.Background(), true); err == nil {
		t.Fatal("the failed hand-off did not fail the batch")
	}
	kept := newFiles(before)
	if len(kept) == 0 {
		t.Fatal("the handed-off batch's files were deleted: a committer that still commits them would reference missing files")
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("handed-off file %s: %v", p, err)
		}
	}
	if segs, _ := localwal.Scan(e.cfg.WALDir); len(segs) != 2 {
		t.Fatalf("%d segments after the failed hand-off, want the batch's 2", len(segs))
	}

	before = dataFiles(t, e.cfg.Lake.Warehouse)
	g.set(func(g *groupCommitter) { g.failDirect = 1 })
	if _, err := e.drain.Cycle(context.Background(), true); err == nil {
		t.Fatal("the refused hand-off did not fail the batch")
	}
	if left := newFiles(before); len(left) != 0 {
		t.Fatalf("files of a batch never handed off, outcome known, not removed: %v", left)
	}
	e.cycleUntilDrained(3)
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
}

// TestStaleRequestLandsLate: a committer holds a batch's request and lands it while the drain
// has already sent the batch again (one segment per batch: the resend is found committed) or a
// bigger batch from the same first segment (the landed mark is inside it: mark ahead, retried
// above the mark). The pod invariant holds on every request (groupCommitter.checkInvariant),
// and every row lands once.
func TestStaleRequestLandsLate(t *testing.T) {
	for _, c := range []struct {
		name   string
		target int64
	}{{"segment-per-batch", 0}, {"growing-batch", 32 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			e, g := newGroupEnv(t, func(cfg *testConfig) { cfg.CommitBatchTargetBytes = c.target })
			start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
			want := e.writeSegments("events", 1, 1000, 5, start)
			e.cycleUntilDrained(1)
			want.Merge(e.writeSegments("events", 3, 1000, 6, start.Add(time.Hour)))
			g.set(func(g *groupCommitter) { g.hold = 1 })
			if _, err := e.drain.Cycle(context.Background(), true); err == nil {
				t.Fatal("the held request did not fail the batch")
			}
			if len(g.held) != 1 {
				t.Fatalf("%d requests held, want 1", len(g.held))
			}
			want.Merge(e.writeSegments("events", 2, 1000, 7, start.Add(2*time.Hour)))
			e.cycleUntilDrained(8)
			if len(g.held) != 0 {
				t.Fatal("the held request never landed")
			}
			if got := e.tableSum("events"); got != want {
				t.Fatalf("table %+v, want %+v: a stale request doubled or lost rows", got, want)
			}
		})
	}
}

// TestGroupHeartbeatsAndSlowDown: a grouped (WAL dir, table) with no batch in a cycle heartbeats
// at most once per batch age, with the scan time and its oldest sealed segment; a committer's
// slow-down holds back a batch that commitBatch maxAge alone would commit, until it is that old.
func TestGroupHeartbeatsAndSlowDown(t *testing.T) {
	e, g := newGroupEnv(t, nil) // batch age 10 s
	t0 := time.Now()
	var clock atomic.Int64
	at := func(d time.Duration) { clock.Store(t0.Add(d).UnixNano()) }
	at(0)
	e.drain.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	cycle := func(wantBatches int) {
		t.Helper()
		res, err := e.drain.Cycle(context.Background(), false)
		if err != nil || res.Batches != wantBatches {
			t.Fatalf("cycle at %s: %+v %v, want %d batches", e.drain.Now().Sub(t0), res, err, wantBatches)
		}
	}
	beats := func(want ...heartbeat) {
		t.Helper()
		g.mu.Lock()
		got := g.beats
		g.beats = nil
		g.mu.Unlock()
		if len(got) != len(want) {
			t.Fatalf("heartbeats %+v, want %+v", got, want)
		}
		for i := range got {
			if got[i].table != want[i].table || got[i].stream != want[i].stream || !got[i].scan.Equal(want[i].scan) || !got[i].pendingSince.Equal(want[i].pendingSince) {
				t.Fatalf("heartbeat %+v, want %+v", got[i], want[i])
			}
		}
	}
	want := e.writeSegments("events", 1, 1000, 8, t0)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	beats() // the batch told the committer
	cycle(0)
	beats(heartbeat{"events", "pod-0", t0, time.Time{}})
	at(5 * time.Second)
	cycle(0)
	beats() // within the batch age

	want.Merge(e.writeSegments("events", 1, 1000, 9, t0))
	segs, err := localwal.Scan(e.cfg.WALDir)
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v %v", segs, err)
	}
	sealed := t0.Add(6 * time.Second)
	if err := os.Chtimes(segs[0].Path, sealed, sealed); err != nil {
		t.Fatal(err)
	}
	at(12 * time.Second) // the segment is 6 s old: not due
	cycle(0)
	beats(heartbeat{"events", "pod-0", t0.Add(12 * time.Second), sealed})

	g.set(func(g *groupCommitter) { g.slow["events"] = time.Minute })
	at(23 * time.Second) // 17 s old: due at 10 s, held back by the slow-down
	cycle(0)
	beats() // and the slow-down stretches the heartbeat period too
	at(67 * time.Second)
	cycle(1) // a minute old
	beats()  // the batch told the committer
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
}

// TestGroupCommitUnderClaimFence: with catalog claims the hand-off carries the claim's epoch and
// fence; a committer that commits through the fence stops when the claim passes mid-commit, as a
// direct commit does (TestFenceCheckedBeforeEveryCommitAttempt), and appends nothing past it.
func TestGroupCommitUnderClaimFence(t *testing.T) {
	e, g := newGroupEnv(t, func(c *testConfig) {
		c.CatalogClaim = true
		c.CatalogClaimTTL = 30 * time.Second
		c.CommitBatchTargetBytes = 0
	})
	root := e.cfg.WALDir
	now := time.Now()
	m := testClaimManager(t, e.lake, root, "drain-0", func() time.Time { return now })
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	first := writeStreamDir(t, filepath.Join(root, "ingest-0"), "ingest-0", "events", 1, 500, 1, start)
	if err := m.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.drain.Claims = m
	handOffs := 0
	g.during = func(req lake.AppendRequest) {
		if req.Fence == nil {
			t.Error("a hand-off under a claim without its fence")
		}
		handOffs++
	}
	e.cycleUntilDrained(1)
	writeStreamDir(t, filepath.Join(root, "ingest-0"), "ingest-0", "events", 1, 500, 2, start.Add(time.Hour))
	var armed atomic.Bool
	catalogtest.Hook(e.lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if armed.CompareAndSwap(true, false) {
			now = now.Add(claim.Fence(30 * time.Second))
			return nil, "", errors.New("requirement failed: branch main has changed")
		}
		return next(ctx, id, reqs, ups)
	})
	armed.Store(true)
	if _, err := e.drain.Cycle(context.Background(), true); !errors.Is(err, errNotClaimed) {
		t.Fatalf("cycle error %v, want the fence (%v)", err, errNotClaimed)
	}
	if got := e.tableSum("events"); got != first {
		t.Fatalf("table %+v, want only the first batch %+v: the committer committed past the fence", got, first)
	}
	for i, req := range g.sent {
		if ep := req.Summary[tableprops.SumClaimEpoch]; ep == "" || ep == "0" || ep != strconv.FormatUint(g.epochs[i], 10) {
			t.Fatalf("hand-off epochs %v, request's claim epoch %q: the epoch is not the claim's", g.epochs, ep)
		}
	}
	if handOffs != 2 {
		t.Fatalf("%d hand-offs, want 2", handOffs)
	}
}

// TestStalledCommitterHoldsTheStream guards the pod invariant (Cycle): the first batch of a
// (WAL dir, table) is stuck in a stalled committer, and the stream's second batch is not sent
// while the first is unresolved: neither while the hand-off waits, nor after it gives up with the
// request still held by the committer. The next cycle sends the first batch's range again, the
// held request lands late, and every row is in once.
func TestStalledCommitterHoldsTheStream(t *testing.T) {
	e, g := newGroupEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 }) // one segment per batch
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 1, 1000, 15, start)
	e.cycleUntilDrained(1)
	want.Merge(e.writeSegments("events", 3, 1000, 16, start.Add(time.Hour)))
	before := len(g.sent)

	stuck, release := make(chan lake.AppendRequest, 1), make(chan struct{})
	var calls atomic.Int32
	g.during = func(req lake.AppendRequest) {
		if calls.Add(1) == 1 {
			stuck <- req
			<-release // the committer does not answer
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := e.drain.Cycle(context.Background(), true)
		done <- err
	}()
	first := <-stuck
	time.Sleep(300 * time.Millisecond) // room for a pipelined second batch to go out
	if n := calls.Load(); n != 1 {
		t.Fatalf("%d hand-offs while the first batch is stuck in the committer, want 1", n)
	}
	// The hand-off gives up; the stalled committer keeps the request and lands it later.
	g.set(func(g *groupCommitter) { g.hold = 1 })
	close(release)
	if err := <-done; err == nil {
		t.Fatal("the unanswered hand-off did not fail the batch")
	}
	g.mu.Lock()
	sent := len(g.sent) - before
	g.mu.Unlock()
	if sent != 1 {
		t.Fatalf("%d requests after the first batch was left unresolved, want 1: a later batch overtook it", sent)
	}
	if segs, _ := localwal.Scan(e.cfg.WALDir); len(segs) != 3 {
		t.Fatalf("%d segments after the unresolved hand-off, want 3", len(segs))
	}

	e.cycleUntilDrained(4)
	g.mu.Lock()
	resend := g.sent[before+1]
	g.mu.Unlock()
	if resend.First != first.First {
		t.Fatalf("the request after the unresolved one starts at %s, want its range again from %s", resend.First, first.First)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
}

// TestHandedOffBatchCountsOnce: siglake_drain_commits_total and
// siglake_drain_commit_duration_seconds keep their per-batch meaning with a group committer: a
// handed-off batch counts once, as a direct one does. A lost answer counts once, as that batch's
// failure; its retry finds the segments in through the mark (the failure dropped the cached
// table) and commits, and counts, nothing again.
func TestHandedOffBatchCountsOnce(t *testing.T) {
	for _, c := range []struct {
		name                       string
		group                      bool
		lose                       int
		committed, already, failed float64
		durations                  uint64
	}{
		{"direct", false, 0, 2, 0, 0, 2},
		{"handed-off", true, 0, 2, 0, 0, 2},
		{"handed-off-answer-lost", true, 1, 1, 0, 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 }) // one segment per batch
			if c.group {
				g := newGroupCommitter(t, e.lake)
				g.loseAnswers = c.lose
				e.drain.Group = g
			}
			want := e.writeSegments("events", 2, 1000, 17, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			e.cycleUntilDrained(3)
			if got := e.tableSum("events"); got != want {
				t.Fatalf("table %+v, want %+v", got, want)
			}
			m := e.drain.Metrics
			for outcome, n := range map[string]float64{"committed": c.committed, "already_committed": c.already, "failed": c.failed} {
				if v := counterValue(t, m, "siglake_drain_commits_total", outcome); v != n {
					t.Errorf("siglake_drain_commits_total{outcome=%s} = %v, want %v", outcome, v, n)
				}
			}
			if n := promtest.HistogramCount(t, registryOf(m), "siglake_drain_commit_duration_seconds"); n != c.durations {
				t.Errorf("siglake_drain_commit_duration_seconds count %d, want %d (one per batch that got in)", n, c.durations)
			}
		})
	}
}
