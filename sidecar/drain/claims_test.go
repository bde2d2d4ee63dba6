package drain

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/lake"
)

// TestDrainOnlyClaimedStreams: with claims, the WAL dir is a root of stream subdirectories and a
// drain commits only the streams whose claim it holds; past its fence it commits none.
func TestDrainOnlyClaimedStreams(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CatalogClaim = true; c.CatalogClaimTTL = 30 * time.Second })
	root := e.cfg.WALDir
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	var want RowSum
	for i, s := range []string{"pod-a", "pod-b"} {
		want.Merge(writeStreamDir(t, filepath.Join(root, s), s, "events", 2, 1000, uint64(3+i), start))
	}
	streams, loose, err := batches.StreamDirs(root)
	if err != nil || loose != 0 || len(streams) != 2 {
		t.Fatalf("batches.StreamDirs = %v, %d, %v", streams, loose, err)
	}

	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a, b := testClaimManager(t, e.lake, root, "pod-x", clock), testClaimManager(t, e.lake, root, "pod-y", clock)
	for _, m := range []*claim.Manager{a, b, a, b} { // a takes both, b goes live, a releases one, b takes it
		if err := m.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mine := a.Held()
	if len(mine) != 1 || len(b.Held()) != 1 {
		t.Fatalf("a holds %v, b holds %v; want one each", mine, b.Held())
	}
	e.drain.Claims = a
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 2 {
		t.Fatalf("drained %d segments, want the 2 of %s only", res.Segments, mine[0])
	}
	for _, s := range streams {
		segs, _ := localwal.Scan(filepath.Join(root, s))
		if held := s == mine[0]; held != (len(segs) == 0) {
			t.Fatalf("stream %s (held by this drain: %v) has %d sealed segments left", s, held, len(segs))
		}
	}

	// Past the fence (a stopped renewing) the drain commits nothing, not even its own stream.
	want.Merge(writeStreamDir(t, filepath.Join(root, mine[0]), mine[0], "events", 1, 1000, 9, start.Add(time.Hour)))
	mu.Lock()
	now = now.Add(claim.Fence(30 * time.Second))
	mu.Unlock()
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Segments != 0 {
		t.Fatalf("fenced cycle drained %d segments (%v), want none", res.Segments, err)
	}

	// b takes over after the expiry and drains everything; the table holds every row once.
	mu.Lock()
	now = now.Add(30 * time.Second)
	mu.Unlock()
	if err := b.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	d := *e.drain
	d.Claims = b
	if _, err := d.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
}

// TestConcurrentDrainersOfOneStreamExactlyOnce is the backstop the claims rest on: two drain
// processes that both believe they own one stream (a paused holder past its fence, a split
// view) race on the same WAL dir, and the stream mark still keeps every row exactly once.
func TestConcurrentDrainersOfOneStreamExactlyOnce(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 })
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 24, 300, 5, start)
	l2, err := lake.Open(context.Background(), e.cfg.Lake)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	d2 := *e.drain
	d2.Lake, d2.Metrics, d2.Publish = l2, newMetrics(), nil
	var wg sync.WaitGroup
	for _, d := range []*Drain{e.drain, &d2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				res, _ := d.Cycle(context.Background(), true)
				if res.Pending == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if segs, _ := localwal.Scan(e.cfg.WALDir); len(segs) != 0 {
		t.Fatalf("%d segments left", len(segs))
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v: two drainers of one stream lost or duplicated rows", got, want)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.WALDir, localwal.QuarantineDir)); err == nil {
		t.Fatal("a segment was quarantined while two drainers raced")
	}
}
