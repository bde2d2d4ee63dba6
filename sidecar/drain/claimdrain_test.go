package drain

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/walgen"
)

// writeStream seals segments into dir with the given stream name (each ingest pod names its own).
func writeStreamDir(t *testing.T, dir, stream, table string, segments, rows int, seed uint64, start time.Time) RowSum {
	t.Helper()
	w, err := walwriter.New(dir, walwriter.Options{Stream: stream, RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: seed})
	var sum RowSum
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		if err := sum.Add(rec, eventColumns...); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(table, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return sum
}

// testClaimManager is a claim manager of holder over the stream subdirectories of root, with a
// 30 s TTL and the given clock (time.Now when nil).
func testClaimManager(t *testing.T, l *lake.Lake, root, holder string, clock func() time.Time) *claim.Manager {
	if clock == nil {
		clock = time.Now
	}
	return &claim.Manager{Lake: l, Holder: holder, TTL: 30 * time.Second, Now: clock,
		Streams:  func() ([]string, error) { s, _, err := batches.StreamDirs(root); return s, err },
		Observer: instrument.ClaimObserver{Log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)), Metrics: instrument.NewClaimMetrics(prometheus.NewRegistry())}}
}

// TestOneHolderTwoStreamsOneTable: one drain process holds the claims of two streams (each
// ingest pod names its stream after itself) that write the same table. Every row must land.
func TestOneHolderTwoStreamsOneTable(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CatalogClaim = true; c.CatalogClaimTTL = 30 * time.Second })
	root := e.cfg.WALDir
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var want RowSum
	for i, s := range []string{"ingest-0", "ingest-1"} {
		want.Merge(writeStreamDir(t, filepath.Join(root, s), s, "events", 2, 500, uint64(i+1), start))
	}
	m := testClaimManager(t, e.lake, root, "drain-0", nil)
	if err := m.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := m.Held(); len(got) != 2 {
		t.Fatalf("held %v", got)
	}
	e.drain.Claims = m
	for i := 0; i < 3; i++ {
		res, err := e.drain.Cycle(context.Background(), true)
		t.Logf("cycle %d: %+v err=%v", i, res, err)
	}
	for _, s := range []string{"ingest-0", "ingest-1"} {
		q, _ := os.ReadDir(filepath.Join(root, s, localwal.QuarantineDir))
		for _, f := range q {
			t.Logf("%s/quarantine: %s", s, f.Name())
		}
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v: rows of a held stream did not land", got, want)
	}
}

// TestFailedBatchIsNotOvertaken: in flush mode (--once) the backoff is ignored, yet when the
// first batch of a WAL dir and table fails (here: its segment cannot be read for a moment), the
// later batches of the same dir and table wait for it: committing one would move the stream mark
// past the failed batch, and the next run would remove the failed segment as "already committed"
// although its rows never were. The next cycle commits all three in order.
func TestFailedBatchIsNotOvertaken(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 3, 500, 7, start)
	segs, err := localwal.Scan(e.cfg.WALDir)
	if err != nil || len(segs) != 3 {
		t.Fatalf("scan %d %v", len(segs), err)
	}
	first := segs[0].Path
	hidden := filepath.Join(e.cfg.WALDir, ".hidden")
	calls, hides := 0, 0
	e.drain.Now = func() time.Time {
		calls++
		if calls == 2 { // commitBatch of the first batch starts: a transient read failure
			if err := os.Rename(first, hidden); err != nil {
				t.Fatal(err)
			}
			hides++
		}
		return time.Now()
	}
	res, err := e.drain.Cycle(context.Background(), true)
	t.Logf("flush cycle 1: %+v err=%v", res, err)
	if hides != 1 {
		t.Fatalf("the first segment was hidden %d times, want once: the fault was not injected", hides)
	}
	if err == nil || res.Committed != 0 {
		t.Fatalf("flush cycle 1: %+v err=%v, want the failed batch reported and nothing committed after it", res, err)
	}
	if err := os.Rename(hidden, first); err != nil { // the file is readable again
		t.Fatal(err)
	}
	e.drain.Now = time.Now
	res, err = e.drain.Cycle(context.Background(), true)
	t.Logf("flush cycle 2: %+v err=%v", res, err)
	if left, _ := localwal.Scan(e.cfg.WALDir); len(left) != 0 {
		t.Fatalf("%d segments left", len(left))
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v: a failed batch was overtaken and its segment dropped", got, want)
	}
}

// TestLostReleaseResponseTwoHolders: a tick that releases a stream (a second claimer went live)
// commits, but its response is lost. The process keeps the stream as held and valid (only the
// "releasing" mark is undone), while the table shows it free: the other process takes it at once.
func TestLostReleaseResponseTwoHolders(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CatalogClaim = true; c.CatalogClaimTTL = 30 * time.Second })
	root := e.cfg.WALDir
	for _, s := range []string{"ingest-0", "ingest-1"} {
		if err := os.MkdirAll(filepath.Join(root, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	l2, err := openLakeOf(t, e)
	if err != nil {
		t.Fatal(err)
	}
	a, b := testClaimManager(t, e.lake, root, "drain-a", nil), testClaimManager(t, l2, root, "drain-b", nil)
	ctx := context.Background()
	if err := a.Tick(ctx); err != nil { // a takes both
		t.Fatal(err)
	}
	if err := b.Tick(ctx); err != nil { // b goes live, holds nothing yet
		t.Fatal(err)
	}
	lossy := loseResponses(e.lake)
	lossy.lose.Store(1)
	err = a.Tick(ctx) // a releases one stream; the commit lands, the response is lost
	t.Logf("a's tick: %v", err)
	if err := b.Tick(ctx); err != nil { // b takes the released stream
		t.Fatal(err)
	}
	both := map[string]int{}
	for _, s := range a.Held() {
		both[s]++
	}
	for _, s := range b.Held() {
		both[s]++
	}
	for s, n := range both {
		if n > 1 {
			t.Fatalf("stream %s may be drained by both processes now (a holds %v, b holds %v)", s, a.Held(), b.Held())
		}
	}
	if n := lossy.losses.Load(); n != 1 {
		t.Fatalf("%d commit responses lost, want 1: the fault was not injected", n)
	}
}

func openLakeOf(t *testing.T, e *env) (*lake.Lake, error) {
	l, err := lake.Open(context.Background(), e.cfg.Lake)
	if err == nil {
		t.Cleanup(func() { l.Close() })
	}
	return l, err
}

// TestBadStreamDirDoesNotStallOthers: a held stream directory that cannot be scanned (removed
// after the tick; or lost+found on an ext4 volume root, unreadable for uid 65532) is logged and
// skipped; the other held streams are still drained in the same cycle.
func TestBadStreamDirDoesNotStallOthers(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CatalogClaim = true; c.CatalogClaimTTL = 30 * time.Second })
	root := e.cfg.WALDir
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := writeStreamDir(t, filepath.Join(root, "ingest-0"), "ingest-0", "events", 2, 500, 1, start)
	if err := os.MkdirAll(filepath.Join(root, "ingest-gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := testClaimManager(t, e.lake, root, "drain-0", nil)
	if err := m.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "ingest-gone")); err != nil { // the directory disappears
		t.Fatal(err)
	}
	e.drain.Claims = m
	res, err := e.drain.Cycle(context.Background(), true)
	t.Logf("cycle: %+v %v", res, err)
	if got := e.tableSum("events"); got != want {
		t.Fatalf("ingest-0 not drained because another held stream's directory is gone: %v", err)
	}
}

// TestFenceCheckedBeforeEveryCommitAttempt: a batch whose first commit attempt loses a conflict
// while its claim's fence passes must not retry: another process may hold the stream by then.
func TestFenceCheckedBeforeEveryCommitAttempt(t *testing.T) {
	e := newEnv(t, func(c *testConfig) {
		c.CatalogClaim = true
		c.CatalogClaimTTL = 30 * time.Second
		c.CommitBatchTargetBytes = 0
	})
	root := e.cfg.WALDir
	now := time.Now()
	clock := func() time.Time { return now }
	m := testClaimManager(t, e.lake, root, "drain-0", clock)
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	first := writeStreamDir(t, filepath.Join(root, "ingest-0"), "ingest-0", "events", 1, 500, 1, start)
	if err := m.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.drain.Claims = m
	if _, err := e.drain.Cycle(context.Background(), true); err != nil { // creates the table
		t.Fatal(err)
	}
	writeStreamDir(t, filepath.Join(root, "ingest-0"), "ingest-0", "events", 1, 500, 2, start.Add(time.Hour))
	// The first commit meets a conflict, and the claim's fence passes while it is in flight.
	var armed atomic.Bool
	catalogtest.Hook(e.lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if armed.CompareAndSwap(true, false) {
			now = now.Add(claim.Fence(30 * time.Second))
			return nil, "", errors.New("requirement failed: branch main has changed")
		}
		return next(ctx, id, reqs, ups)
	})
	armed.Store(true)
	_, err := e.drain.Cycle(context.Background(), true)
	if !errors.Is(err, errNotClaimed) {
		t.Fatalf("cycle error %v, want the fence (%v)", err, errNotClaimed)
	}
	if got := e.tableSum("events"); got != first {
		t.Fatalf("table %+v, want only the first batch %+v: a retry committed past the fence", got, first)
	}
}
