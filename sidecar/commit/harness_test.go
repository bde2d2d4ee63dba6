package commit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/drain/handoff"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// The client is the drain's group committer.
var _ handoff.GroupCommitter = (*Client)(nil)

// view is a process's Membership, as the tests set it.
type view struct {
	mu        sync.Mutex
	auth      bool
	owns      bool
	committer func(table string) (string, bool)
}

func newView(committer string) *view {
	return &view{auth: true, committer: func(string) (string, bool) { return committer, committer != "" }}
}

func (v *view) Authenticated() bool { v.mu.Lock(); defer v.mu.Unlock(); return v.auth }
func (v *view) Catalog() string     { return testCatalog }
func (v *view) Owns(string) bool    { v.mu.Lock(); defer v.mu.Unlock(); return v.owns }
func (v *view) Committer(t string) (string, bool) {
	v.mu.Lock()
	f := v.committer
	v.mu.Unlock()
	return f(t)
}

func (v *view) set(f func(v *view)) { v.mu.Lock(); defer v.mu.Unlock(); f(v) }

// moves makes the view name first as the committer on the first ask, then next: its view moved on.
func (v *view) moves(first, next string) {
	var asked atomic.Int32
	v.set(func(v *view) {
		v.committer = func(string) (string, bool) {
			if asked.Add(1) == 1 {
				return first, true
			}
			return next, true
		}
	})
}

// recorder is an Observer that counts what it is told, by "method:label".
type recorder struct {
	mu        sync.Mutex
	n         map[string]int
	maxQueued int
	onQueued  func(table string, requests int)
}

func newRecorder() *recorder { return &recorder{n: map[string]int{}} }

func (r *recorder) add(k string) { r.mu.Lock(); defer r.mu.Unlock(); r.n[k]++ }

func (r *recorder) count(k string) int { r.mu.Lock(); defer r.mu.Unlock(); return r.n[k] }

func (r *recorder) RequestDone(_, outcome string, _ time.Duration) { r.add("done:" + outcome) }
func (r *recorder) Fallback(_, reason string)                      { r.add("fallback:" + reason) }
func (r *recorder) Busy(string)                                    { r.add("busy") }
func (r *recorder) SlowDown(_ string, d time.Duration) {
	if d > 0 {
		r.add("slowdown")
	} else {
		r.add("slowdown:0")
	}
}
func (r *recorder) Refused(reason string)                  { r.add("refused:" + reason) }
func (r *recorder) Commit(_, outcome string, _ int)        { r.add("commit:" + outcome) }
func (r *recorder) AnswerDropped()                         { r.add("dropped") }
func (r *recorder) Answered(outcome string)                { r.add("answered:" + outcome) }
func (r *recorder) MarksPruned(string, int)                {}
func (r *recorder) CompleteThrough(string, time.Time, int) {}
func (r *recorder) Forget(string)                          { r.add("forget") }
func (r *recorder) Committed(_ string, n int, _ []time.Duration, _ time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n["committed"] += n
}
func (r *recorder) Queued(table string, requests, _ int) {
	r.mu.Lock()
	r.maxQueued = max(r.maxQueued, requests)
	f := r.onQueued
	r.mu.Unlock()
	if f != nil {
		f(table, requests)
	}
}

// fallbacks is the number of direct commits after a fallback, of any reason.
func (r *recorder) fallbacks() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for k, v := range r.n {
		if len(k) > 9 && k[:9] == "fallback:" {
			n += v
		}
	}
	return n
}

// cluster is processes on one embedded catalog and local warehouse, talking over one LocalHub:
// pods (a real drain each, on a WAL dir and a Lake of its own) and committers (a Lake each).
type cluster struct {
	t    testing.TB
	base *testlake.Env // the catalog and warehouse; the first pod's env
	hub  *peermsg.LocalHub
	pods []*pod
	want rowsum.Sum
	stop map[string]func() // each committer's: cancel its Run and wait for it
}

// pod is one ingest pod's drain with its group commit client.
type pod struct {
	name   string
	env    *testlake.Env
	view   *view
	obs    *recorder
	client *Client
}

const (
	testInterval = 50 * time.Millisecond
	testFallback = 30 * time.Second
)

func newCluster(t testing.TB) *cluster {
	return &cluster{t: t, base: testlake.New(t), hub: peermsg.NewLocalHub()}
}

// pod adds a pod that hands off to committer; mutate changes its client's options.
func (cl *cluster) pod(committer string, mutate func(*ClientConfig)) *pod {
	cl.t.Helper()
	env := cl.base
	if len(cl.pods) > 0 {
		env = testlake.NewWith(cl.t, func(c *lake.Config) { c.Catalog, c.Warehouse = cl.base.Cfg.Catalog, cl.base.Cfg.Warehouse })
	}
	p := &pod{name: fmt.Sprintf("pod-%d", len(cl.pods)), env: env, view: newView(committer), obs: newRecorder()}
	cfg := ClientConfig{Lake: env.Lake, Retry: env.Drain.Retry, Interval: testInterval, FallbackAfter: testFallback, Observer: p.obs}
	if mutate != nil {
		mutate(&cfg)
	}
	p.client = NewClient(cfg, cl.hub.Member(p.name), p.view)
	env.Drain.Group = p.client
	cl.pods = append(cl.pods, p)
	return p
}

// committer starts a committer called name on a Lake of its own, owning every table; mutate
// changes its options. It stops at the test's end.
func (cl *cluster) committer(name string, mutate func(*CommitterConfig)) (*Committer, *view, *recorder, *lake.Lake) {
	cl.t.Helper()
	l := cl.lake()
	v, obs := newView(name), newRecorder()
	v.owns = true
	cfg := CommitterConfig{Lake: l, Interval: testInterval, MaxFiles: 64, Observer: obs}
	if mutate != nil {
		mutate(&cfg)
	}
	c := NewCommitter(cfg, cl.hub.Member(name), v)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			cl.t.Error(err)
		}
	})
	if cl.stop == nil {
		cl.stop = map[string]func(){}
	}
	cl.stop[name] = stop
	cl.t.Cleanup(stop)
	return c, v, obs, l
}

// lake opens another process's Lake on the cluster's catalog.
func (cl *cluster) lake() *lake.Lake {
	cl.t.Helper()
	l, err := lake.Open(context.Background(), cl.base.Cfg)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.t.Cleanup(func() { l.Close() })
	return l
}

// seal writes segments sealed segments of rows walgen rows each into p's WAL for events, as
// stream p.name, and adds them to what the table must hold.
func (cl *cluster) seal(p *pod, segments, rows int, start time.Time) {
	cl.t.Helper()
	w, err := walwriter.New(p.env.WAL, walwriter.Options{Stream: p.name, RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		cl.t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: uint64(len(p.name)*7919 + int(start.Unix()%1000) + segments)})
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		if err := cl.want.Add(rec, walgen.Columns...); err != nil {
			cl.t.Fatal(err)
		}
		if err := w.Append("events", rec); err != nil {
			cl.t.Fatal(err)
		}
		rec.Release()
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			cl.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		cl.t.Fatal(err)
	}
}

// drain runs p's drain cycles until its WAL is empty (a failed batch is retried by the next
// cycle, as the drain loop does), at most n.
func (cl *cluster) drain(p *pod, n int) error {
	for i := 0; i < n; i++ {
		res, err := p.env.Drain.Cycle(context.Background(), true)
		if err == nil && res.Pending == 0 {
			return nil
		}
		cl.t.Logf("%s cycle %d: %+v %v", p.name, i, res, err)
	}
	return fmt.Errorf("%s: WAL not drained after %d cycles", p.name, n)
}

// drainAll drains every pod at once.
func (cl *cluster) drainAll() {
	cl.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(cl.pods))
	for _, p := range cl.pods {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := cl.drain(p, 5); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		cl.t.Error(err)
	}
}

// drainAsync drains every pod in the background; the channel closes when they are done.
func (cl *cluster) drainAsync() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		cl.drainAll()
	}()
	return done
}

// table loads events.
func (cl *cluster) table() *table.Table { return cl.base.Table("events") }

// checkOnce fails the test unless events holds every sealed row exactly once (read by
// iceberg-go's scanner) and every pod's stream has a mark.
func (cl *cluster) checkOnce() {
	cl.t.Helper()
	if got := cl.base.Sum("events"); got != cl.want {
		cl.t.Fatalf("table holds %+v, sealed %+v: rows lost or doubled", got, cl.want)
	}
	tb := cl.table()
	for _, p := range cl.pods {
		if _, ok, err := marks.ReadMark(tb, p.name); err != nil || !ok {
			cl.t.Fatalf("stream %s: no mark (%v)", p.name, err)
		}
	}
}

// snapshots counts events' snapshots.
func (cl *cluster) snapshots() int { return len(cl.table().Metadata().Snapshots()) }

// waitFor polls cond for up to 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// stall makes l's table commits wait until release (also run at the test's end); stalled
// reports whether one is waiting.
func stall(t *testing.T, l *lake.Lake) (stalled func() bool, release func()) {
	var mu sync.Mutex
	active, held := true, 0
	ch := make(chan struct{})
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		mu.Lock()
		a := active
		if a {
			held++
		}
		mu.Unlock()
		if a {
			<-ch
		}
		return next(context.Background(), id, reqs, ups)
	})
	var once sync.Once
	release = func() {
		once.Do(func() {
			mu.Lock()
			active = false
			mu.Unlock()
			close(ch)
		})
	}
	t.Cleanup(release)
	return func() bool { mu.Lock(); defer mu.Unlock(); return held > 0 }, release
}
