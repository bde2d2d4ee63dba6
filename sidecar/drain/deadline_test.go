package drain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/deadline"
)

// stallCommits makes l's catalog hold every table commit while stalled is set, deaf to its
// context (a SQLite busy wait, a catalog that never answers), until release is closed; then each
// held commit goes on and may land late, like a commit the catalog applied after the client gave
// up. held counts commits still held or running.
func stallCommits(l *lake.Lake) (stalled *atomic.Bool, release chan struct{}, held *atomic.Int32) {
	stalled, release, held = &atomic.Bool{}, make(chan struct{}), &atomic.Int32{}
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if !stalled.Load() {
			return next(ctx, id, reqs, ups)
		}
		held.Add(1)
		defer held.Add(-1)
		<-release
		return next(context.Background(), id, reqs, ups)
	})
	return stalled, release, held
}

// waitZero waits until n is 0.
func waitZero(t *testing.T, n *atomic.Int32) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); n.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d held commits still running", n.Load())
		}
	}
}

// dataFiles lists the Parquet files under the warehouse.
func dataFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".parquet") {
			out[p] = true
		}
		return nil
	})
	return out
}

// TestCommitDeadlineAbandonsStalledCommit: a commit the catalog holds is abandoned at the commit
// deadline, not waited for; the batch fails as of unknown outcome, so its files and segments stay;
// when the held attempts land late, the next cycle finds the batch in through the stream mark, and
// the table holds every row exactly once.
func TestCommitDeadlineAbandonsStalledCommit(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.Lake.CommitTimeout = 200 * time.Millisecond })
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 1, 2000, 3, start)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil { // the table, outside the stall
		t.Fatal(err)
	}
	stalled, release, held := stallCommits(e.lake)
	var events sync.Map // phase -> count
	e.lake.WatchCommits(func(ev deadline.CommitEvent) {
		n, _ := events.LoadOrStore(ev.Phase, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
	})
	want.Merge(e.writeSegments("events", 2, 2000, 4, start.Add(time.Hour)))
	before := dataFiles(t, e.cfg.Lake.Warehouse)
	stalled.Store(true)
	// Without a deadline the cycle would wait for the hold: end it after 5 s so that shows as a
	// failure below, not a hang.
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	safety := time.AfterFunc(5*time.Second, free)
	defer safety.Stop()

	t0 := time.Now()
	_, err := e.drain.Cycle(context.Background(), true)
	took := time.Since(t0)
	if !errors.Is(err, deadline.ErrCommitDeadline) && !errors.Is(err, deadline.ErrAbandonedInFlight) {
		t.Fatalf("cycle under a held catalog: %v, want the commit deadline", err)
	}
	// 3 attempts of 200 ms each: far below the hold, which lasts until release.
	if took > 3*time.Second {
		t.Fatalf("the cycle took %s: the stalled commit was waited for, not abandoned", took)
	}
	if segs, _ := localwal.Scan(e.cfg.WALDir); len(segs) != 2 {
		t.Fatalf("%d segments in the WAL after the abandoned commit, want the batch's 2", len(segs))
	}
	written := 0
	for p := range dataFiles(t, e.cfg.Lake.Warehouse) {
		if !before[p] {
			written++
		}
	}
	if written == 0 {
		t.Fatal("the abandoned batch's files were deleted: a late landing of its commit would reference missing files")
	}
	// The first attempt is abandoned; the retries are refused while it is in flight, so abandoned
	// calls into the catalog do not pile up.
	if n, ok := events.Load(deadline.CommitTimedOut); !ok || n.(*atomic.Int32).Load() != 1 {
		t.Fatalf("timed-out commit events: %v, want 1 (the retries wait for it)", n)
	}
	if h, n := held.Load(), e.lake.AbandonedInFlight(); h != 1 || n != 1 {
		t.Fatalf("%d attempts held by the catalog, %d abandoned in flight; want 1 and 1", h, n)
	}
	if !errors.Is(err, deadline.ErrCommitDeadline) && !errors.Is(err, deadline.ErrAbandonedInFlight) {
		t.Fatalf("batch error %v", err)
	}

	stalled.Store(false)
	free()
	waitZero(t, held) // the late attempt lands
	for deadline := time.Now().Add(5 * time.Second); e.lake.AbandonedInFlight() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the abandoned attempt returned but is still counted in flight")
		}
	}
	if n, ok := events.Load(deadline.CommitAbandonedEnded); !ok || n.(*atomic.Int32).Load() != 1 {
		t.Fatalf("abandoned-ended events: %v, want 1", n)
	}
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
	if segs, _ := localwal.Scan(e.cfg.WALDir); len(segs) != 0 {
		t.Fatalf("%d segments left", len(segs))
	}
}

// TestAbandonedCommitReleasedAfterRetryCommitted: the other ordering of an abandoned commit: the
// batch is committed first (by a restarted process: this one refuses new attempts on a table
// with one in flight), then the held attempt is let go and must fail on the catalog's validation
// (the table moved on). The rows are in exactly once
// and each segment was drained (removed) once.
func TestAbandonedCommitReleasedAfterRetryCommitted(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.Lake.CommitTimeout = 200 * time.Millisecond })
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 1, 2000, 3, start)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil { // the table, outside the stall
		t.Fatal(err)
	}
	var stalled atomic.Bool
	release := make(chan struct{})
	var held atomic.Int32
	var mu sync.Mutex
	var late []error // what the held attempts got once let go
	catalogtest.Hook(e.lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if !stalled.Load() {
			return next(ctx, id, reqs, ups)
		}
		held.Add(1)
		defer held.Add(-1)
		<-release
		md, loc, err := next(context.Background(), id, reqs, ups)
		mu.Lock()
		late = append(late, err)
		mu.Unlock()
		return md, loc, err
	})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer free()
	want.Merge(e.writeSegments("events", 2, 2000, 4, start.Add(time.Hour)))
	drained := func() float64 { return testutil.ToFloat64(e.drain.Metrics.SegmentsDrained.WithLabelValues("events")) }
	drained0 := drained()

	stalled.Store(true)
	if _, err := e.drain.Cycle(context.Background(), true); !errors.Is(err, deadline.ErrCommitDeadline) && !errors.Is(err, deadline.ErrAbandonedInFlight) {
		t.Fatalf("cycle under a held catalog: %v, want the commit deadline", err)
	}
	if held.Load() == 0 {
		t.Fatal("no attempt is held")
	}
	// The catalog answers again while the abandoned attempt is still held, and a restarted
	// process (this one refuses new attempts on the table meanwhile) commits the batch.
	stalled.Store(false)
	l2, err := lake.Open(context.Background(), e.cfg.Lake)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	restarted := *e.drain
	restarted.Lake = l2
	if _, err := restarted.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if segs, _ := localwal.Scan(e.cfg.WALDir); len(segs) != 0 {
		t.Fatalf("%d segments left after the retry committed", len(segs))
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after the retry: table %+v, want %+v", got, want)
	}
	free()
	waitZero(t, &held)
	mu.Lock()
	defer mu.Unlock()
	if len(late) == 0 {
		t.Fatal("no held attempt came back")
	}
	for i, err := range late {
		if err == nil {
			t.Fatalf("held attempt %d committed after the retry: the batch would be in twice", i)
		}
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after the held attempts: table %+v, want %+v (exactly once)", got, want)
	}
	if n := drained() - drained0; n != 2 {
		t.Fatalf("%v segments drained, want the batch's 2, each once", n)
	}
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if n := drained() - drained0; n != 2 {
		t.Fatalf("%v segments drained after another cycle, want 2", n)
	}
}

// TestBacklogGaugesWhileDraining: the backlog gauges follow the WAL after every batch of a cycle
// (one commit per segment here: each commit sees the segments still waiting, not the count at the
// start of the cycle) and while a commit waits (segments sealed meanwhile show up within the
// watcher's interval, not only once the cycle ends).
func TestBacklogGaugesWhileDraining(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	e.drain.BacklogEvery = 50 * time.Millisecond
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	e.writeSegments("events", 1, 100, 1, start)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil { // the table
		t.Fatal(err)
	}
	gauge := func() float64 { return testutil.ToFloat64(e.drain.Metrics.SealedSegments) }
	var seen []float64
	var mu sync.Mutex
	entered := make(chan struct{}, 16)
	stalled, release, held := stallCommits(e.lake)
	catalogtest.Hook(e.lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		mu.Lock()
		seen = append(seen, gauge())
		mu.Unlock()
		entered <- struct{}{}
		return next(ctx, id, reqs, ups)
	})
	e.writeSegments("events", 3, 100, 2, start.Add(time.Hour))
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if fmt.Sprint(seen) != "[3 2 1]" {
		t.Fatalf("backlog gauge at each commit: %v, want [3 2 1] (set after every batch)", seen)
	}
	mu.Unlock()
	for len(entered) > 0 {
		<-entered
	}

	// A commit held by the catalog while ingest seals two more segments.
	e.writeSegments("events", 1, 100, 3, start.Add(2*time.Hour))
	stalled.Store(true)
	done := make(chan error, 1)
	go func() { _, err := e.drain.Cycle(context.Background(), true); done <- err }()
	<-entered
	if g := gauge(); g != 1 {
		t.Fatalf("gauge %v at the held commit, want 1", g)
	}
	e.writeSegments("events", 2, 100, 4, start.Add(3*time.Hour))
	deadline := time.Now().Add(5 * time.Second)
	for gauge() != 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	g := gauge()
	stalled.Store(false)
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitZero(t, held)
	if g != 3 {
		t.Fatalf("backlog gauge %v while the commit waited and two more segments were sealed, want 3", g)
	}
}
