package groupcommit

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/peerhttp"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// tally is a commit.Observer counting what the tests look at.
type tally struct {
	commit.NopObserver
	mu sync.Mutex
	n  map[string]int
}

func (o *tally) add(k string, n int) { o.mu.Lock(); defer o.mu.Unlock(); o.n[k] += n }
func (o *tally) get(k string) int    { o.mu.Lock(); defer o.mu.Unlock(); return o.n[k] }
func (o *tally) Committed(_ string, requests int, _ []time.Duration, _ time.Duration) {
	o.add("committed", requests)
}
func (o *tally) Fallback(_, reason string)                      { o.add("fallback", 1); o.add("fallback:"+reason, 1) }
func (o *tally) Commit(_, outcome string, _ int)                { o.add("commit:"+outcome, 1) }
func (o *tally) RequestDone(_, outcome string, _ time.Duration) { o.add("done:"+outcome, 1) }

// proc is one sidecar's worth of group commit without gossip: a drain (its pod), a committer on
// a Lake of its own, a committer claim manager on another, and the HTTP transport on 127.0.0.1.
type proc struct {
	name      string
	env       *testlake.Env
	claims    *claim.Manager
	committer *commit.Committer
	cobs, pob *tally
	cl        *lake.Lake // the committer's Lake (its commits can be stalled)

	mu       sync.Mutex
	stopTick func()
}

const (
	claimTTL     = 6 * time.Second // long against a loaded machine's claim commits: fences must not lapse between ticks
	testInterval = 200 * time.Millisecond
	testMaxWait  = time.Second // the three pods' batches, drained at once, wait for each other
	testCatalog  = "cat-claims"
)

var testKey = bytes.Repeat([]byte{5}, 32)

func openLake(t *testing.T, cfg lake.Config) *lake.Lake {
	t.Helper()
	l, err := lake.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// newProc starts process i on base's catalog: its HTTP listener, committer and client.
func newProc(t *testing.T, base *testlake.Env, i int) *proc {
	t.Helper()
	env := base
	if i > 0 {
		env = testlake.NewWith(t, func(c *lake.Config) { c.Catalog, c.Warehouse = base.Cfg.Catalog, base.Cfg.Warehouse })
	}
	p := &proc{name: fmt.Sprintf("pod-%d", i), env: env, cobs: &tally{n: map[string]int{}}, pob: &tally{n: map[string]int{}}, cl: openLake(t, base.Cfg)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	keys := NewKeys([][]byte{testKey})
	tr, err := peerhttp.New(peerhttp.Config{Self: ln.Addr().String(), Keys: keys.Get})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(peerhttp.Path, tr)
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	cl := openLake(t, base.Cfg)
	p.claims = &claim.Manager{Lake: cl, Holder: p.name, TTL: claimTTL, Now: time.Now, Addr: tr.Name(),
		Streams: func() ([]string, error) { return cl.ListTables(context.Background()) }}
	m := &ClaimMembership{Claims: p.claims, Keys: keys, CatalogID: func() string { return testCatalog }}
	loop := peermsg.Loopback(tr)
	p.committer = commit.NewCommitter(commit.CommitterConfig{Lake: p.cl, Interval: testInterval, MaxWait: testMaxWait, MaxFiles: 64, Observer: p.cobs}, loop, m)
	client := commit.NewClient(commit.ClientConfig{Lake: env.Lake, Retry: env.Drain.Retry, Interval: testInterval, MaxWait: testMaxWait,
		FallbackAfter: 30 * time.Second, Observer: p.pob}, loop, m)
	env.Drain.Group = client
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.committer.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return p
}

// tick renews p's claims every third of the TTL until pause.
func (p *proc) tick(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.claims.Run(ctx) }()
	p.mu.Lock()
	p.stopTick = sync.OnceFunc(func() { cancel(); <-done })
	p.mu.Unlock()
	t.Cleanup(p.pause)
}

// pause stops p's renewals, as a SIGSTOP stops them (its committer's work is stalled apart).
func (p *proc) pause() {
	p.mu.Lock()
	f := p.stopTick
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// seal writes segments sealed segments of rows rows each into p's WAL for events, as stream
// p.name, and adds them to want.
func (p *proc) seal(t *testing.T, want *rowsum.Sum, segments, rows int, start time.Time) {
	t.Helper()
	w, err := walwriter.New(p.env.WAL, walwriter.Options{Stream: p.name, RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: uint64(start.Unix()) + uint64(len(p.name)*7919)})
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		if err := want.Add(rec, walgen.Columns...); err != nil {
			t.Fatal(err)
		}
		if err := w.Append("events", rec); err != nil {
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
}

// drainAll drains the pods at once until their WALs are empty.
func drainAll(t *testing.T, ps ...*proc) {
	t.Helper()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				res, err := p.env.Drain.Cycle(context.Background(), true)
				if err == nil && res.Pending == 0 {
					return
				}
				t.Logf("%s cycle %d: %+v %v", p.name, i, res, err)
			}
			t.Errorf("%s: WAL not drained", p.name)
		}()
	}
	wg.Wait()
}

// groupSnapshots counts events' snapshots committed by a group commit, and the requests they
// answered.
func groupSnapshots(t *testing.T, tb *table.Table) (snaps, requests int) {
	for _, s := range tb.Metadata().Snapshots() {
		if s.Summary == nil {
			continue
		}
		if n, ok := s.Summary.Properties[tableprops.SumGroupRequests]; ok {
			k, _ := strconv.Atoi(n)
			snaps, requests = snaps+1, requests+k
		}
	}
	return snaps, requests
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// stallCommits makes l's table commits wait until release; stalled reports one waiting, done
// that every one held has returned since.
func stallCommits(t *testing.T, l *lake.Lake) (stalled, done func() bool, release func()) {
	var mu sync.Mutex
	held, passed := 0, 0
	ch := make(chan struct{})
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		mu.Lock()
		held++
		mu.Unlock()
		<-ch
		defer func() { mu.Lock(); passed++; mu.Unlock() }()
		return next(context.Background(), id, reqs, ups)
	})
	release = sync.OnceFunc(func() { close(ch) })
	t.Cleanup(release)
	return func() bool { mu.Lock(); defer mu.Unlock(); return held > 0 },
		func() bool { mu.Lock(); defer mu.Unlock(); return passed == held }, release
}

// TestClaimElectedCommitter: three processes without gossip on one SQLite catalog, talking over
// the signed HTTP transport on 127.0.0.1. The committer claim elects one committer for the table;
// every pod's batches reach it and land in shared group commits, each row once. Then the holder
// pauses with a group commit in flight: its claim expires and another process takes it over; the
// pods' batches of the stalled commit land once (through the new holder, or directly while no
// live claim names one); when the first resumes, its late commit lands nothing (the head and
// marks moved); the pods' next batches go to the new holder. Every row is in the table once.
func TestClaimElectedCommitter(t *testing.T) {
	base := testlake.New(t)
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var want rowsum.Sum
	ps := []*proc{newProc(t, base, 0), newProc(t, base, 1), newProc(t, base, 2)}

	// The table exists once a first batch is committed (directly: nobody claims a table that
	// does not exist yet).
	ps[0].seal(t, &want, 1, 100, day)
	drainAll(t, ps[0])
	if n := ps[0].pob.get("fallback:" + commit.FallbackNoCommitter); n != 1 {
		t.Fatalf("first batch: %d no_committer fallbacks, want 1", n)
	}
	for _, p := range ps { // pod-0 ticks first, so it takes the one table
		if err := p.claims.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range ps {
		p.tick(t)
	}
	if !ps[0].claims.Owns("events") || ps[1].claims.Owns("events") || ps[2].claims.Owns("events") {
		t.Fatal("pod-0 does not hold events' committer claim alone")
	}
	holder, _ := ps[0].claims.Committer("events")
	for _, p := range ps[1:] {
		if c, ok := p.claims.Committer("events"); !ok || c != holder {
			t.Fatalf("%s hands events to %q %v, want the holder at %s", p.name, c, ok, holder)
		}
	}

	// Phase 1: every pod's batches are committed by the holder, together.
	before, _ := groupSnapshots(t, base.Table("events"))
	for i, p := range ps {
		p.seal(t, &want, 2, 300, day.Add(time.Duration(i+1)*time.Hour))
	}
	drainAll(t, ps...)
	if got := base.Sum("events"); got != want {
		t.Fatalf("phase 1: table holds %+v, sealed %+v", got, want)
	}
	snaps, requests := groupSnapshots(t, base.Table("events"))
	if n := ps[0].cobs.get("committed"); n != 6 || requests != 6 {
		for _, p := range ps {
			t.Logf("%s: committer %v, pod %v, claims %+v", p.name, p.cobs.n, p.pob.n, p.claims.Report())
		}
		t.Fatalf("phase 1: the holder committed %d requests, snapshots say %d; want 6", n, requests)
	}
	if snaps-before >= 6 {
		t.Fatalf("phase 1: %d group commits for 6 batches: none shared", snaps-before)
	}
	for _, p := range ps {
		if n := p.pob.get("fallback"); p != ps[0] && n != 0 || p == ps[0] && n != 1 {
			t.Fatalf("%s: %d fallbacks in phase 1", p.name, n)
		}
	}
	t.Logf("phase 1: 6 batches of 3 pods in %d group commits", snaps-before)

	// Phase 2: the holder's next group commit hangs, and it stops renewing (paused). The pods'
	// requests time out there; once its claim expires another process takes it over and commits
	// them.
	stalled, unstalled, release := stallCommits(t, ps[0].cl)
	for i, p := range ps[1:] {
		p.seal(t, &want, 2, 300, day.Add(time.Duration(i+10)*time.Hour))
	}
	drained := make(chan struct{})
	go func() { defer close(drained); drainAll(t, ps[1:]...) }()
	waitFor(t, "the holder's group commit to hang", stalled)
	ps[0].pause()
	<-drained
	var next *proc
	waitFor(t, "another process to hold events' committer claim", func() bool {
		for _, p := range ps[1:] {
			if p.claims.Owns("events") {
				next = p
			}
		}
		return next != nil
	})
	// The pods' batches of the stalled commit reached the new holder, or (asked while the old
	// holder was fenced and its claim not yet expired) were committed directly: either way once.
	if got := base.Sum("events"); got != want {
		t.Fatalf("after the takeover: table holds %+v, sealed %+v", got, want)
	}
	t.Logf("phase 2: the new holder %s committed %d requests", next.name, next.cobs.get("committed"))
	// Phase 3: once the pods read the new claim, their batches go to the new holder.
	waitFor(t, "the pods to read the new holder", func() bool {
		for _, p := range ps[1:] {
			if c, ok := p.claims.Committer("events"); !ok || c != next.claims.Addr {
				return false
			}
		}
		return true
	})
	nextBefore, fallbacks := next.cobs.get("committed"), ps[1].pob.get("fallback")+ps[2].pob.get("fallback")
	for i, p := range ps[1:] {
		p.seal(t, &want, 2, 300, day.Add(time.Duration(i+20)*time.Hour))
	}
	drainAll(t, ps[1:]...)
	if n := next.cobs.get("committed") - nextBefore; n != 4 || ps[1].pob.get("fallback")+ps[2].pob.get("fallback") != fallbacks {
		t.Fatalf("phase 3: the new holder committed %d of the pods' 4 batches (fallbacks %v, %v)", n, ps[1].pob.n, ps[2].pob.n)
	}

	// The paused holder resumes: its stalled commit goes on, and lands nothing.
	committedBefore := ps[0].cobs.get("committed")
	release()
	waitFor(t, "the resumed holder's stalled commits to return", unstalled)
	waitFor(t, "the resumed holder's queue to empty", func() bool {
		for _, tb := range ps[0].committer.Status().Tables {
			if tb.Table == "events" && tb.QueueRequests > 0 {
				return false
			}
		}
		return true
	})
	if n := ps[0].cobs.get("committed"); n != committedBefore {
		t.Fatalf("the resumed holder committed %d requests again", n-committedBefore)
	}
	if err := ps[0].claims.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ps[0].claims.Owns("events") {
		t.Fatal("the resumed holder owns events again")
	}
	time.Sleep(3 * testInterval) // any further round of the resumed committer
	if got := base.Sum("events"); got != want {
		t.Fatalf("after the resume: table holds %+v, sealed %+v: rows lost or doubled", got, want)
	}
	for _, p := range ps {
		t.Logf("%s: committer %v, pod %v", p.name, p.cobs.n, p.pob.n)
	}
}
