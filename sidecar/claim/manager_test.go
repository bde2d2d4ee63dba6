package claim

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
)

// clock is a settable clock shared by the managers of a test; skew shifts one manager's view.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// site is one SQLite catalog + local warehouse that every manager of a test opens on its own,
// like separate processes do.
type site struct {
	t     *testing.T
	cfg   lake.Config
	clock *clock
}

func newSite(t *testing.T) *site {
	dir := t.TempDir()
	return &site{t: t, clock: &clock{now: t0}, cfg: lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"),
		Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"}}
}

func (s *site) manager(holder string, skew time.Duration, streams ...string) *Manager {
	s.t.Helper()
	l, err := lake.Open(context.Background(), s.cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { l.Close() })
	return &Manager{Lake: l, Holder: holder, TTL: ttl, Now: func() time.Time { return s.clock.Now().Add(skew) },
		Streams:  func() ([]string, error) { return streams, nil },
		Observer: &counting{t: s.t}}
}

// counting is an Observer that counts what the metrics count and logs the warnings to the test.
type counting struct {
	t         *testing.T
	mu        sync.Mutex
	commits   map[CommitOutcome]int
	takeovers int
	held      int
}

func counts(m *Manager) *counting { return m.Observer.(*counting) }

func (c *counting) Committed(o CommitOutcome) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.commits == nil {
		c.commits = map[CommitOutcome]int{}
	}
	c.commits[o]++
}
func (c *counting) commitsOf(o CommitOutcome) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits[o]
}
func (c *counting) Held(n int)           { c.mu.Lock(); defer c.mu.Unlock(); c.held = n }
func (c *counting) heldNow() int         { c.mu.Lock(); defer c.mu.Unlock(); return c.held }
func (c *counting) Skipped(int)          {}
func (c *counting) Taken(string, uint64) {}
func (c *counting) TakenOver(string, string, time.Time, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.takeovers++
}
func (c *counting) takeoversNow() int         { c.mu.Lock(); defer c.mu.Unlock(); return c.takeovers }
func (c *counting) Released(string, int, int) {}
func (c *counting) ReleasedAll(int)           {}
func (c *counting) Lost(stream, holder string, epoch uint64) {
	c.t.Logf("claim of %s lost to %s (epoch %d)", stream, holder, epoch)
}
func (c *counting) Fenced()              {}
func (c *counting) TickFailed(err error) { c.t.Logf("claim tick failed: %v", err) }
func (c *counting) TrimFailed(error)     {}

func tick(t *testing.T, ms ...*Manager) {
	t.Helper()
	for _, m := range ms {
		if err := m.Tick(context.Background()); err != nil {
			t.Fatalf("%s: %v", m.Holder, err)
		}
	}
}

// TestRaceOneWinner: two processes read the free claim and both decide to take it; exactly one
// holds it, the other lost the CAS and, re-reading, saw the winner's claim.
func TestRaceOneWinner(t *testing.T) {
	for i := 0; i < 5; i++ {
		s := newSite(t)
		a, b := s.manager("pod-a", 0, "s1"), s.manager("pod-b", 0, "s1")
		tick(t, a) // creates the claims table, so both race on commits, not on the create
		if err := a.Release(context.Background()); err != nil {
			t.Fatal(err)
		}
		// Both read the same state, then a commits, then b commits what it decided from the
		// stale state (the lost-update interleaving): the CAS alone must stop b.
		var read sync.WaitGroup
		read.Add(2)
		var onceA, onceB sync.Once
		a.beforeCommit = func() { onceA.Do(func() { read.Done(); read.Wait() }) }
		b.beforeCommit = func() {
			onceB.Do(func() {
				read.Done()
				read.Wait()
				for len(a.Held()) == 0 {
					time.Sleep(time.Millisecond)
				}
			})
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, m := range []*Manager{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); errs[j] = m.Tick(context.Background()) }()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		ha, hb := a.Held(), b.Held()
		if len(ha) != 1 || len(hb) != 0 {
			t.Fatalf("round %d: pod-a holds %v, pod-b holds %v; want exactly one holder of s1", i, ha, hb)
		}
		loser, winner := b, "pod-a"
		if got := loser.Report().Others["s1"]; got != winner {
			t.Fatalf("round %d: loser sees s1 held by %q, want %s", i, got, winner)
		}
		if n := counts(loser).commitsOf(Conflict); n != 1 {
			t.Fatalf("round %d: loser counted %v conflicts, want 1", i, n)
		}
	}
}

// TestRenewExpireTakeover: a holder that renews keeps its stream; one that stops renewing is
// fenced at two thirds of the TTL, and another takes over only after the expiry, with a new epoch.
func TestRenewExpireTakeover(t *testing.T) {
	s := newSite(t)
	a, b := s.manager("pod-a", 0, "s1"), s.manager("pod-b", 0, "s1")
	tick(t, a, b)
	eq(t, "a holds", a.Held(), []string{"s1"})
	eq(t, "b holds", b.Held(), []string(nil))
	e1, ok := a.Begin("s1")
	if !ok {
		t.Fatal("holder may not begin a batch")
	}
	a.End("s1")

	// Renewal: a keeps ticking every third of the TTL for several TTLs; b never gets it.
	for i := 0; i < 9; i++ {
		s.clock.Add(RenewEvery(ttl))
		tick(t, a, b)
		if !a.Valid("s1") || len(b.Held()) != 0 {
			t.Fatalf("step %d: a valid %v, b holds %v", i, a.Valid("s1"), b.Held())
		}
	}
	if e, _ := a.Begin("s1"); e != e1 {
		t.Fatalf("renewal changed the epoch %d -> %d", e1, e)
	}
	a.End("s1")

	// a stops renewing (paused or dead). It is fenced before b may take over.
	s.clock.Add(Fence(ttl) - time.Millisecond)
	if !a.Valid("s1") {
		t.Fatal("a fenced before two thirds of the TTL")
	}
	s.clock.Add(time.Millisecond)
	if a.Valid("s1") {
		t.Fatal("a still valid at two thirds of the TTL")
	}
	if _, ok := a.Begin("s1"); ok {
		t.Fatal("a may begin a batch past its fence")
	}
	tick(t, b)
	if len(b.Held()) != 0 {
		t.Fatal("b took the claim before it expired")
	}
	s.clock.Add(ttl - Fence(ttl))
	tick(t, b)
	eq(t, "b holds after expiry", b.Held(), []string{"s1"})
	e2, _ := b.Begin("s1")
	b.End("s1")
	if e2 != e1+1 {
		t.Fatalf("takeover epoch %d, want %d", e2, e1+1)
	}
	if n := counts(b).takeoversNow(); n != 1 {
		t.Fatalf("takeovers = %v, want 1", n)
	}
	// a wakes up: its next tick sees the claim in b's name and drops it.
	tick(t, a)
	eq(t, "a holds after waking", a.Held(), []string(nil))
	if a.Valid("s1") {
		t.Fatal("a valid after the takeover")
	}
}

// TestSkewWithinBoundNeverOverlaps steps time finely while a stops renewing and b, whose clock
// runs ahead by just under a third of the TTL, ticks at every step: at no instant may a pass the
// fence while b holds the stream.
func TestSkewWithinBoundNeverOverlaps(t *testing.T) {
	s := newSite(t)
	a := s.manager("pod-a", 0, "s1")
	b := s.manager("pod-b", ttl/3-time.Second, "s1")
	tick(t, a)
	took := false
	for step := 0; step < 40; step++ {
		s.clock.Add(ttl / 30)
		tick(t, b)
		if a.Valid("s1") && len(b.Held()) > 0 {
			t.Fatalf("at +%v a is still inside its fence while b holds the stream", time.Duration(step+1)*ttl/30)
		}
		took = took || len(b.Held()) > 0
	}
	if !took {
		t.Fatal("b never took the expired claim")
	}
}

// TestReleaseOnStop: a process that stops releases its claims, and another takes them at once.
func TestReleaseOnStop(t *testing.T) {
	s := newSite(t)
	a, b := s.manager("pod-a", 0, "s1", "s2"), s.manager("pod-b", 0, "s1", "s2")
	tick(t, a)
	eq(t, "a holds", a.Held(), []string{"s1", "s2"})
	// A batch in flight holds its stream: when b goes live a's share drops to one, and a keeps
	// the busy stream although it is the one a would give up if idle.
	idle := Decide(stateOf(map[string]Claim{"s1": {Holder: "pod-a", Expires: t0.Add(ttl)}, "s2": {Holder: "pod-a", Expires: t0.Add(ttl)}}, "pod-b"),
		"pod-a", []string{"s1", "s2"}, nil, t0, ttl)
	busy, other := idle.Release[0], idle.Hold[0]
	if _, ok := a.Begin(busy); !ok {
		t.Fatal("begin")
	}
	tick(t, b, a)
	eq(t, "a keeps the busy stream", a.Held(), []string{busy})
	tick(t, b)
	eq(t, "b takes what a released", b.Held(), []string{other})
	a.End(busy)
	if err := a.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	eq(t, "a after release", a.Held(), []string(nil))
	tick(t, b) // no clock advance: released claims are free at once
	eq(t, "b after a's release", b.Held(), []string{"s1", "s2"})
}

// TestFairShare: three processes over six streams hold two each once all of them ticked twice.
func TestFairShare(t *testing.T) {
	s := newSite(t)
	streams := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	ms := []*Manager{s.manager("pod-a", 0, streams...), s.manager("pod-b", 0, streams...), s.manager("pod-c", 0, streams...)}
	for i := 0; i < 3; i++ {
		tick(t, ms...)
		s.clock.Add(time.Second)
	}
	seen := map[string]string{}
	for _, m := range ms {
		if len(m.Held()) != 2 {
			t.Fatalf("%s holds %v, want 2 streams", m.Holder, m.Held())
		}
		for _, st := range m.Held() {
			if h, ok := seen[st]; ok {
				t.Fatalf("%s held by %s and %s", st, h, m.Holder)
			}
			seen[st] = m.Holder
		}
	}
	if n := counts(ms[0]).heldNow(); n != 2 {
		t.Fatalf("siglake_claim_streams_held = %v, want 2", n)
	}
}

// TestClaimsTableStaysSmall: every claim commit adds a snapshot and a metadata file; trimming
// keeps both bounded however long the claimers run.
func TestClaimsTableStaysSmall(t *testing.T) {
	s := newSite(t)
	a := s.manager("pod-a", 0, "s1", "s2")
	for i := 0; i < 65; i++ {
		tick(t, a)
		s.clock.Add(time.Second)
	}
	tbl, ok, err := a.Lake.LoadClaimsTable(context.Background())
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if n := len(tbl.Metadata().Snapshots()); n > 30 {
		t.Fatalf("claims table keeps %d snapshots after 65 commits", n)
	}
	var files []string
	for _, pat := range []string{"*.metadata.json", "snap-*.avro"} {
		m, _ := filepath.Glob(filepath.Join(s.cfg.Warehouse, "*", "*", "metadata", pat))
		files = append(files, m...)
	}
	t.Logf("%d snapshots, %d metadata files and manifest lists", len(tbl.Metadata().Snapshots()), len(files))
	if len(files) == 0 || len(files) > 60 {
		t.Fatalf("%d metadata files and manifest lists after 65 commits, want a bounded few", len(files))
	}
}
