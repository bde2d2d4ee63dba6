package commit

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/deadline"
	"github.com/siglake/siglake/sidecar/lake/objstore"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/test/testenv"
)

// Bench knobs: SIGLAKE_BENCH=1 runs TestBenchGroupCommit; SIGLAKE_BENCH_PODS lists the N
// (default 16,100); SIGLAKE_BENCH_WINDOW is how long the pods send (default 60s);
// SIGLAKE_BENCH_MODES lists the modes run for each N (default direct,group; parseBenchModes).
const (
	benchPeriod   = 10 * time.Second // 0.1 requests/s per pod
	benchRows     = 500              // rows per sealed segment: one small Parquet file a request
	benchInterval = time.Second      // the committer's interval
	benchTail     = 2 * time.Minute  // how long the pods may take to empty their WALs after the window
	benchLease    = 10 * time.Second // failover: from the committer's stop to its successor's start
)

// benchMaxWait is the committer's group-commit-max-wait: SIGLAKE_BENCH_MAX_WAIT, default the
// option's (DefaultMaxWait); the interval or less commits every interval.
func benchMaxWait() time.Duration {
	if v := os.Getenv("SIGLAKE_BENCH_MAX_WAIT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			panic(fmt.Sprintf("SIGLAKE_BENCH_MAX_WAIT %q: want a Go duration such as 4s", v))
		}
		return d
	}
	return DefaultMaxWait
}

// TestBenchGroupCommit measures N pods on one table of the PostgreSQL catalog with its warehouse
// on the test S3 server, each pod a real drain on its own WAL dir and Lake sealing one segment
// every 10 s, first committing directly, then handing off to one committer (interval 1 s) on a
// Lake of its own. Both modes get the same segments. The other modes add the owner's maintainer,
// a committer failover, or batches written before the window (benchMode). Every run checks the
// table holds every sealed row once.
func TestBenchGroupCommit(t *testing.T) {
	if os.Getenv("SIGLAKE_BENCH") != "1" {
		t.Skip("SIGLAKE_BENCH=1 runs the group commit harness (minutes, PostgreSQL and S3)")
	}
	window := 60 * time.Second
	if v := os.Getenv("SIGLAKE_BENCH_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		window = d
	}
	modes, err := parseBenchModes(os.Getenv("SIGLAKE_BENCH_MODES"))
	if err != nil {
		t.Fatal(err)
	}
	ns := []int{16, 100}
	if v := os.Getenv("SIGLAKE_BENCH_PODS"); v != "" {
		ns = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ns = append(ns, n)
		}
	}
	for _, n := range ns {
		for _, mode := range modes {
			t.Run(fmt.Sprintf("N=%d/%s", n, mode), func(t *testing.T) { benchRun(t, n, mode, window) })
		}
	}
}

// benchResult is one run's measurements.
type benchResult struct {
	N                   int
	Mode                benchMode
	Window, Drained     time.Duration // the sending window; from its start until every WAL was empty
	Requests            int           // segments sealed (requests offered)
	Waiting             int           // segments still in the WALs after the tail
	Snapshots           int           // table snapshots in the window
	Attempts, Failed    int           // catalog commit attempts of every Lake; those refused (conflicts)
	P50, P99            time.Duration // seal to visible; segments still waiting count with their age then
	DataFiles           int
	DataBytes           int64
	MetaRead            int64 // object-store bytes read (the drain reads no data files)
	MetaPuts            int64 // object-store PUTs that were not data files
	CPUSeconds, WallCPU float64
	RoleCPU             map[string]float64 // CPU seconds sampled in the window by role (roleCPU)
	Commits             string             // the committer's and maintainer's attempts (roleCommits)
	Maint               maintTotals
}

func (r benchResult) String() string {
	gb := float64(r.DataBytes) / 1e9
	return fmt.Sprintf("N=%d %s: %d requests in %s (%d still waiting after %s); %d snapshots in the window (%.2f commits/s); "+
		"%d commit attempts, %d refused (%.1f%%); seal-to-visible p50 %.2f s p99 %.2f s; %d data files, %.1f MB; "+
		"metadata %.1f MB read (%.0f GB/GB), %d objects written (%.1f per commit, %.0f per GB); process CPU %.1f s = %.1f%% of a core; "+
		"in the window, by role: %s; %s%s",
		r.N, r.Mode, r.Requests, r.Window, r.Waiting, r.Drained.Round(time.Second), r.Snapshots, float64(r.Snapshots)/r.Window.Seconds(),
		r.Attempts, r.Failed, 100*float64(r.Failed)/float64(max(1, r.Attempts)), r.P50.Seconds(), r.P99.Seconds(), r.DataFiles, float64(r.DataBytes)/1e6,
		float64(r.MetaRead)/1e6, float64(r.MetaRead)/1e9/gb, r.MetaPuts, float64(r.MetaPuts)/float64(max(1, r.Attempts-r.Failed)), float64(r.MetaPuts)/gb,
		r.CPUSeconds, 100*r.WallCPU, r.roles(), r.Commits, r.Maint)
}

// roles is the CPU by role in the window, in % of a core.
func (r benchResult) roles() string {
	var b strings.Builder
	for _, role := range []string{roleCommitter, roleMaintainer, rolePod, ""} {
		if s, ok := r.RoleCPU[role]; ok {
			fmt.Fprintf(&b, "%s %.2f s = %.2f%% of a core, ", cmp.Or(role, "unlabelled"), s, 100*s/r.Window.Seconds())
		}
	}
	return b.String()
}

// benchCfg points a lake config at a fresh PostgreSQL database and S3 warehouse prefix.
func benchCfg(t *testing.T) func(*lake.Config) {
	s3 := testenv.S3(t)
	dsn, wh := testenv.PostgresDB(t), s3.Warehouse(t)
	return func(c *lake.Config) {
		c.Catalog, c.Warehouse = dsn, wh
		c.S3Endpoint, c.S3Region, c.S3AccessKey, c.S3SecretKey, c.S3PathStyle = s3.Endpoint, s3.Region, s3.AccessKey, s3.SecretKey, true
	}
}

// benchPod is one pod's sealed-but-not-visible segments (seal times, oldest first) and lags.
type benchPod struct {
	*pod
	wake    chan struct{}
	waiting []time.Time
	lags    []time.Duration
}

// benchNewPod adds pod i on a Lake of its own on cfg's catalog and warehouse (cluster.pod copies
// only the catalog and warehouse, not the S3 settings), committing directly until its drain's
// Group is set to its client.
func benchNewPod(cl *cluster, cfg func(*lake.Config), i int) *pod {
	env := cl.base
	if i > 0 {
		env = testlake.NewWith(cl.t, cfg)
	}
	// As the e2e drainers run (--commit-batch-max-age-secs 0): every batch due at once, a failed
	// table backed off 1 s to 32 s as in production (a flushing cycle would ignore the backoff).
	env.Drain.Retry, env.Drain.Cfg.CommitBatchMaxAge = lake.DefaultRetry, time.Millisecond
	p := &pod{name: fmt.Sprintf("pod-%d", i), env: env, view: newView("committer"), obs: newRecorder()}
	capPool(cl.t, env.Lake)
	p.client = NewClient(ClientConfig{Lake: env.Lake, Retry: lake.DefaultRetry, Interval: benchInterval, MaxWait: benchMaxWait(), FallbackAfter: 30 * time.Second, Observer: p.obs},
		roleTransport{cl.hub.Member(p.name), rolePod}, p.view)
	cl.pods = append(cl.pods, p)
	return p
}

// benchRun runs one mode for n pods and returns what it measured.
func benchRun(t *testing.T, n int, mode benchMode, window time.Duration) benchResult {
	cfg := benchCfg(t)
	cl := &cluster{t: t, base: testlake.NewWith(t, cfg), hub: peermsg.NewLocalHub()}
	var attempts, failed atomic.Int64
	watch := func(l *lake.Lake) {
		l.WatchCommits(func(e deadline.CommitEvent) {
			if e.Phase == deadline.CommitDone {
				attempts.Add(1)
				if e.Err != nil {
					failed.Add(1)
				}
			}
		})
	}
	pods := make([]*benchPod, n)
	for i := range pods {
		p := benchNewPod(cl, cfg, i)
		watch(p.env.Lake)
		if err := os.MkdirAll(p.env.WAL, 0o755); err != nil {
			t.Fatal(err)
		}
		pods[i] = &benchPod{pod: p, wake: make(chan struct{}, 1)}
	}
	// The table exists before the run starts: the measurement is of appends, not of creation.
	cl.seal(pods[0].pod, 1, benchRows, day.Add(-time.Hour))
	if err := cl.drain(pods[0].pod, 3); err != nil {
		t.Fatal(err)
	}
	before := testlake.LiveByPath(t, cl.base.Lake)
	rc := newRoleCommits()
	var owner *lake.Lake // the committer's, or nil in direct mode
	if mode.Group {
		owner, _ = benchCommitter(cl, "committer", nil, watch, rc)
		for _, p := range pods {
			p.env.Drain.Group = p.client
		}
	}
	var prewritten [][]captured
	if mode.Prewritten {
		prewritten = benchPrewrite(cl, pods, window)
	}
	attempts.Store(0)
	failed.Store(0)

	var sealMu sync.Mutex // cl.seal's sum, and each pod's waiting list against its WAL
	objBefore := objTotals()
	cpuBefore := cpuSeconds()
	stopCPU, err := roleCPU()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var r benchResult
	wg.Add(1)
	go func() { // the owner's side in the window: maintenance, failover, and the CPU profile's end
		defer wg.Done()
		r.Maint = benchOwner(cl, mode, owner, start, window, watch, rc, pods)
		var err error
		if r.RoleCPU, err = stopCPU(); err != nil {
			t.Error(err)
		}
	}()
	requests := atomic.Int64{}
	for i, p := range pods {
		first := start.Add(time.Duration(i) * benchPeriod / time.Duration(n))
		if prewritten != nil {
			requests.Add(int64(len(prewritten[i])))
			wg.Add(1)
			go labelled(context.Background(), rolePod, func(context.Context) {
				defer wg.Done()
				benchHandOff(cl, p, prewritten[i], first)
			})
			continue
		}
		sealing := make(chan struct{})
		wg.Add(2)
		go labelled(context.Background(), rolePod, func(context.Context) { // the ingest
			defer wg.Done()
			defer close(sealing)
			requests.Add(int64(benchSeal(cl, p, &sealMu, first, start.Add(window), i)))
		})
		go labelled(context.Background(), rolePod, func(context.Context) { // the drain: a cycle whenever something was sealed, until the WAL is empty
			defer wg.Done()
			benchDrain(t, p, sealing, &sealMu, start.Add(window+benchTail))
		})
	}
	wg.Wait()
	r.N, r.Mode, r.Window, r.Drained, r.Requests = n, mode, window, time.Since(start), int(requests.Load())
	r.CPUSeconds = cpuSeconds() - cpuBefore
	r.WallCPU = r.CPUSeconds / r.Drained.Seconds()
	objAfter := objTotals()
	r.MetaRead = objAfter.BytesRead - objBefore.BytesRead
	r.Attempts, r.Failed, r.Commits = int(attempts.Load()), int(failed.Load()), rc.String()
	for path, f := range testlake.LiveByPath(t, cl.base.Lake) {
		if _, ok := before[path]; !ok {
			r.DataFiles++
			r.DataBytes += f.Size
		}
	}
	r.MetaPuts = objAfter.Requests - objBefore.Requests
	if !mode.Prewritten { // a prewritten run's data files were written before objBefore
		r.MetaPuts -= int64(r.DataFiles)
	}
	for _, s := range cl.table().Metadata().Snapshots() {
		if ts := time.UnixMilli(s.TimestampMs); !ts.Before(start) && !ts.After(start.Add(window)) {
			r.Snapshots++
		}
	}
	benchLags(&r, pods)
	t.Logf("%s", r) // before the check, which may stop the test
	// A saturated table leaves batches waiting: drain them one pod at a time, so the check below
	// covers every sealed row.
	for _, p := range pods {
		if len(p.waiting) > 0 {
			if err := cl.drain(p.pod, 10); err != nil {
				t.Error(err)
			}
		}
	}
	cl.checkOnce()
	return r
}

// benchLags sets r's lag percentiles and waiting count from the pods' lags and what still waits.
func benchLags(r *benchResult, pods []*benchPod) {
	var lags []time.Duration
	end := time.Now()
	for _, p := range pods {
		lags = append(lags, p.lags...)
		for _, at := range p.waiting {
			lags = append(lags, end.Sub(at))
		}
		r.Waiting += len(p.waiting)
	}
	slices.Sort(lags)
	if len(lags) > 0 {
		r.P50, r.P99 = lags[len(lags)/2], lags[min(len(lags)-1, len(lags)*99/100)]
	}
}

// benchSeal is pod i's ingest: one segment every period from first until end, each seal time
// queued for its lag and the drain woken; it returns the segments sealed.
func benchSeal(cl *cluster, p *benchPod, mu *sync.Mutex, first, end time.Time, i int) int {
	k := 0
	for ; !first.Add(time.Duration(k) * benchPeriod).After(end); k++ {
		time.Sleep(time.Until(first.Add(time.Duration(k) * benchPeriod)))
		mu.Lock()
		cl.seal(p.pod, 1, benchRows, day.Add(time.Duration(i)*time.Minute+time.Duration(k)*benchPeriod))
		p.waiting = append(p.waiting, time.Now())
		mu.Unlock()
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return k
}

// benchDrain runs p's drain cycles as the drain loop would: after every seal, and once a second
// while a batch is left (the drain's backoff decides whether it is retried then), until sealing ended and the WAL is empty, or deadline. After each cycle
// the segments gone from the WAL are visible: their lag is seal to now.
func benchDrain(t *testing.T, p *benchPod, sealing <-chan struct{}, mu *sync.Mutex, deadline time.Time) {
	done := false
	for {
		if _, err := p.env.Drain.Cycle(context.Background(), false); err != nil {
			t.Logf("%s: %v", p.name, err)
		}
		mu.Lock()
		segs, err := localwal.Scan(p.env.WAL)
		if err != nil {
			mu.Unlock()
			t.Error(err)
			return
		}
		now := time.Now()
		visible := len(p.waiting) - len(segs)
		for _, at := range p.waiting[:max(0, visible)] {
			p.lags = append(p.lags, now.Sub(at))
		}
		p.waiting = p.waiting[max(0, visible):]
		left := len(segs)
		mu.Unlock()
		if done && left == 0 {
			return
		}
		if now.After(deadline) {
			return // the table is saturated: benchRun counts what is left
		}
		wait := time.After(time.Second)
		if left == 0 {
			wait = nil
		}
		select {
		case <-p.wake:
		case <-sealing:
			sealing, done = nil, true
		case <-wait:
		}
	}
}

// objTotals sums the process's object-store counters over every table and kind of request that
// writes or reads (PUTs and multipart parts count as writes).
func objTotals() (c objstore.Count) {
	for _, n := range objstore.Counts() {
		c.BytesRead += n.BytesRead
		if n.Op == objstore.OpPut || n.Op == objstore.OpMultipart {
			c.Requests += n.Requests
		}
	}
	return c
}

// cpuSeconds is the whole test process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
