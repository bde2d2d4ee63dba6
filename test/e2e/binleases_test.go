package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/binleases"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/test/faults"
)

// Bin leases through the real binary (issue 34, docs/design/bin-leases.md): the owner of a table
// plans and offers its bins; every keyed member merges some; the owner commits. On PostgreSQL and
// S3, every row stays exactly once (iceberg-go and DuckDB), also when a worker is killed or frozen
// mid-bin.

// smallFilesSite is a PostgreSQL + S3 site whose table events holds many small overlapping files:
// rows generated into the WAL and drained with every segment its own commit.
func smallFilesSite(t *testing.T, rows int) (*site, rowsum.Sum) {
	t.Helper()
	s := newBackendSite(t, "", "")
	w := s.walgen("pre", rows, 31, "--step", "3s", "--start", "2026-11-20T00:00:00Z") // about a week: bins in several partitions at once
	cmd := exec.Command(bin, "compactor", "--once", "--wal-dir", s.wal, "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--http-addr", "127.0.0.1:0", "--log-format", "json", "--commit-batch-target-mb", "0", "--commit-batch-max-age-secs", "0",
		"--recluster-interval-secs", "0")
	cmd.Env = append(os.Environ(), s.extraEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compactor --once: %v\n%s", err, tail(string(out), 3000))
	}
	_, files := s.table("events")
	t.Logf("events: %d rows sealed in %d segments, %d live files", w.Rows, w.Segments, len(files))
	return s, w.Fingerprint
}

// midMerge: a worker's bin holds its memory and has not sent its result.
func midMerge(r binleases.Running) bool { return !r.Merging.IsZero() && r.Merged.IsZero() }

// behindProxy points the members started from now on at an HTTP proxy in front of s's S3 server
// (test/faults: latency and faults set on it later reach them); the site's own reads stay direct.
func behindProxy(t *testing.T, s *site, cfg faults.Config) *faults.HTTPProxy {
	t.Helper()
	proxy, err := faults.NewHTTPProxy(s.s3.Endpoint, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	for i, e := range s.extraEnv {
		if strings.HasPrefix(e, "SIGLAKE_S3_ENDPOINT=") {
			s.extraEnv[i] = "SIGLAKE_S3_ENDPOINT=" + proxy.URL
		}
	}
	return proxy
}

// leaseEnds reads a member's log for its worker's leased bins and how each ended.
func leaseEnds(t *testing.T, m *member) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(filepath.Dir(m.wal), m.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var line struct {
			Msg     string `json:"msg"`
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "leased bin ended" {
			out[line.Outcome]++
		}
	}
	return out
}

// logLines is the last n lines of a member's log that contain sub.
func logLines(t *testing.T, m *member, sub string, n int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(filepath.Dir(m.wal), m.name+".log"))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(len(out)-n, 0):], "\n")
}

// ownerOf waits until ms agree on the owner of table and returns it.
func ownerOf(t *testing.T, ms []*member, table string) *member {
	t.Helper()
	var owner *member
	waitUntil(t, "the members to agree on "+table+"'s owner", 60*time.Second, func() (bool, string) {
		o := owners(ms, table)
		name := ""
		for _, m := range ms {
			if o[m.name] == "" || (name != "" && o[m.name] != name) {
				return false, fmt.Sprint(o)
			}
			name = o[m.name]
		}
		for _, m := range ms {
			if m.name == name {
				owner = m
			}
		}
		return owner != nil, fmt.Sprint(o)
	})
	return owner
}

// merging waits until a member of ms other than owner holds a leased bin and returns it: with
// granted, any bin granted to it (merging, waiting for merge memory, or waiting on the owner's
// answer: siglake_bin_lease_worker_running_bins plus _waiting_bins), else one merging (it got its
// memory and has not sent its result: its status shows merging and no merged time; the status is
// a second old at most, so a kill lands mid-merge when merges take longer than that).
func merging(t *testing.T, ms []*member, owner *member, timeout time.Duration, granted bool) *member {
	t.Helper()
	var w *member
	waitUntil(t, "a worker to hold a leased bin", timeout, func() (bool, string) {
		var seen []string
		for _, m := range ms {
			if m == owner {
				continue
			}
			r, err := status(m.httpAddr)
			if err != nil || r.BinLeases == nil || r.BinLeases.Worker == nil {
				seen = append(seen, fmt.Sprintf("%s: %v", m.name, err))
				continue
			}
			wk := r.BinLeases.Worker
			seen = append(seen, fmt.Sprintf("%s: %d running, %d waiting", m.name, wk.RunningBins, wk.WaitingBins))
			if granted && len(wk.Running)+len(wk.Waiting) > 0 || slices.ContainsFunc(wk.Running, midMerge) {
				w = m
				return true, ""
			}
		}
		return false, "no worker holds a leased bin: " + strings.Join(seen, "; ")
	})
	return w
}

func binLeaseMembers(t *testing.T, s *site, n int, extra ...string) []*member {
	t.Helper()
	var ms []*member
	for i := 0; i < n; i++ {
		ms = append(ms, newMember(t, s, fmt.Sprintf("bl-%d", i), i))
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range ms {
				t.Logf("%s's bin-lease log:\n%s", m.name, logLines(t, m, "bin", 20))
				if r, err := status(m.httpAddr); err == nil {
					b, _ := json.Marshal(r.BinLeases)
					t.Logf("%s's bin_leases: %s", m.name, b)
				}
			}
		}
	})
	startGroup(t, s, ms, gossipKey(9), append([]string{"--bin-lease-duration", "10s"}, extra...)...)
	return ms
}

// TestBinLeasesCluster: four keyed members on PostgreSQL and S3; the owner of events offers its
// bins and at least three members merge some; the table converges with every row once.
func TestBinLeasesCluster(t *testing.T) {
	s, want := smallFilesSite(t, 120000)
	ms := binLeaseMembers(t, s, 4)
	owner := ownerOf(t, ms, "events")
	waitUntil(t, "events to settle", 240*time.Second, func() (bool, string) { return settled(owner, "events") })
	checkBinLeaseStatus(t, owner)
	counted, lost := map[string]float64{}, map[string]float64{}
	for _, m := range ms {
		mm, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		counted[m.name] = mm.sum("siglake_bin_lease_worker_bins_total", `outcome="committed"`)
		// Before the stop: a worker stopped while it waits for an answer counts it lost.
		lost[m.name] = mm.sum("siglake_bin_lease_worker_bins_total", `outcome="lost"`)
	}
	stopAll(ms)
	merged := map[string]map[string]int{}
	workers := 0
	for _, m := range ms {
		merged[m.name] = leaseEnds(t, m)
		if merged[m.name]["committed"] > 0 {
			workers++
		}
		if counted[m.name] != float64(merged[m.name]["committed"]) {
			t.Errorf("%s: siglake_bin_lease_worker_bins_total{outcome=committed} %v, its log %d", m.name, counted[m.name], merged[m.name]["committed"])
		}
		if lost[m.name] > 0 { // every result is answered: the owner commits each within the lease's age bound
			t.Errorf("%s: %v leased bins got no answer (lost)", m.name, lost[m.name])
		}
	}
	t.Logf("owner %s; leased bins by member and outcome: %v", owner.name, merged)
	if workers < 3 {
		for _, m := range ms {
			t.Logf("%s's bin-lease log:\n%s", m.name, logLines(t, m, "bin", 30))
		}
		t.Fatalf("leased bins committed on %d members, want at least 3: %v", workers, merged)
	}
	exactlyOnce(t, s, want)
}

// settled reports whether the owner's last pass of table planned nothing and left nothing
// outstanding, with no bin on offer or leased: the rewrites are done. (converged's L0 count is
// the table's; with a week of partitions each may keep a few L0 files below the trigger.)
func settled(owner *member, table string) (bool, string) {
	r, err := status(owner.httpAddr)
	if err != nil {
		return false, err.Error()
	}
	tr := r.Tables[table]
	if tr == nil || tr.Maintenance == nil || tr.Maintenance.LastPass == nil {
		return false, "no pass yet"
	}
	lp, ms := tr.Maintenance.LastPass, tr.Maintenance
	busy := 0
	if r.BinLeases != nil {
		for _, bt := range r.BinLeases.Tables {
			if bt.Table == table {
				busy = bt.OfferedBins + bt.LeasedBins + bt.CommittingBins
			}
		}
	}
	return len(lp.Bins) == 0 && lp.OutstandingBins == 0 && busy == 0 && ms.OverlapDepth <= 4 && r.Backlog.Segments == 0,
		fmt.Sprintf("last pass %d bins, %d outstanding; %d bins offered or leased; depth %d", len(lp.Bins), lp.OutstandingBins, busy, ms.OverlapDepth)
}

// checkBinLeaseStatus checks what the owner shows of bin leases: on in /debug/status, and the
// BIN LEASES block of `siglake status`.
func checkBinLeaseStatus(t *testing.T, owner *member) {
	t.Helper()
	r, err := status(owner.httpAddr)
	if err != nil {
		t.Fatal(err)
	}
	if r.BinLeases == nil || !r.BinLeases.Enabled {
		t.Fatalf("%s: bin leases not on in /debug/status: %+v", owner.name, r.BinLeases)
	}
	out, err := exec.Command(bin, "status", "--addr", owner.httpAddr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "BIN LEASES") {
		t.Fatalf("siglake status of %s lacks the BIN LEASES block (%v):\n%s", owner.name, err, out)
	}
}

// TestBinLeasesWorkerKilledAndFrozen: a worker is killed with SIGKILL in the middle of a leased
// merge, another frozen with SIGSTOP past its lease and woken; their bins are planned again and
// merged elsewhere, the frozen one's late result is refused, and every row is in the table once.
// (That the refused outputs are removed is shown by sidecar/work's tests: here other workers'
// merges in flight in the same partitions leave unreferenced objects too, so a listing cannot
// tell the frozen worker's apart.)
func TestBinLeasesWorkerKilledAndFrozen(t *testing.T) {
	s, want := smallFilesSite(t, 160000)
	proxy := behindProxy(t, s, faults.Config{})
	ms := binLeaseMembers(t, s, 4, "--merge-memory-bytes", "67108864")
	owner := ownerOf(t, ms, "events")
	// Slow S3 for the kill and the freeze: merges take seconds instead of under one, so a bin the
	// worker's status (a second old at most) shows merging is still merging when the kill lands,
	// and bins are still out when the freeze comes after the kill's lease lapsed.
	proxy.Set(faults.Config{Latency: 300 * time.Millisecond})
	killed := merging(t, ms, owner, 120*time.Second, false)
	lapsedBefore := memberMetrics(t, owner).sum("siglake_bin_lease_ends_total", `outcome="lapsed"`)
	_ = killed.cmd.Process.Signal(syscall.SIGKILL)
	_ = killed.cmd.Wait()
	var rest []*member
	for _, m := range ms {
		if m != killed {
			rest = append(rest, m)
		}
	}
	// The killed worker's bin stops renewing: its lease lapses at the owner (10 s), and the bin
	// is planned again; the table settling below means it was merged elsewhere.
	waitUntil(t, "the killed worker's lease to lapse at the owner", 60*time.Second, func() (bool, string) {
		n := memberMetrics(t, owner).sum("siglake_bin_lease_ends_total", `outcome="lapsed"`)
		return n > lapsedBefore, fmt.Sprintf("%v lapsed leases", n)
	})
	// Any granted bin: a frozen worker whose only bin already sent its result would see it
	// committed, not refused; one still waiting for memory merges and answers late after waking.
	frozen := merging(t, rest, owner, 120*time.Second, true)
	// Past its leases' deadlines: at least the 10 s of --bin-lease-duration, longer for a bin the
	// owner's rewrite rate says takes longer (work.LeaseDuration; slow S3 makes it so).
	pause := leasePause(t, owner, frozen, 15*time.Second)
	_ = frozen.cmd.Process.Signal(syscall.SIGSTOP)
	proxy.Set(faults.Config{}) // slow until here: bins are still out for the freeze to catch
	t.Cleanup(func() { _ = frozen.cmd.Process.Signal(syscall.SIGCONT) })
	time.Sleep(pause)
	t.Logf("froze %s for %s", frozen.name, pause.Round(time.Second))
	_ = frozen.cmd.Process.Signal(syscall.SIGCONT)
	waitUntil(t, "events to settle", 240*time.Second, func() (bool, string) { return settled(owner, "events") })
	time.Sleep(2 * time.Second)
	// Every other worker's results were answered, however slow the owner's commits behind the
	// slow store: a worker waits for an answer about as long as the owner may commit, not one
	// lease duration. (The frozen one may miss answers sent while it slept.) Read before the
	// stop: a worker stopped while it waits for an answer counts it lost.
	for _, m := range rest {
		if m != frozen {
			if n := memberMetrics(t, m).sum("siglake_bin_lease_worker_bins_total", `outcome="lost"`); n > 0 {
				t.Errorf("%s: %v leased bins got no answer (lost)", m.name, n)
			}
		}
	}
	stopAll(rest)
	ends := leaseEnds(t, frozen)
	t.Logf("killed %s, froze %s (its leases ended %v); owner %s", killed.name, frozen.name, ends, owner.name)
	// The owner refused the woken worker's late results (answered expired), not merely the
	// worker giving up on its own.
	if ends["expired"] == 0 {
		t.Fatalf("the frozen worker's leases ended %v: want results answered expired", ends)
	}
	exactlyOnce(t, s, want)
}

// leasePause is how long to freeze worker so that every lease it holds has lapsed at the owner
// (nobody renews them): 3 s past the longest lease duration its status shows (a renewal came at
// most that long ago; a quarter more for a bin granted after the read) and past the latest
// deadline the owner lists for it; at least least, at most 2 minutes.
func leasePause(t *testing.T, owner, worker *member, least time.Duration) time.Duration {
	t.Helper()
	pause := least
	if r, err := status(worker.httpAddr); err == nil && r.BinLeases != nil && r.BinLeases.Worker != nil {
		for _, b := range append(r.BinLeases.Worker.Running, r.BinLeases.Worker.Waiting...) {
			pause = max(pause, time.Duration(b.LeaseSeconds*1.25*float64(time.Second))+3*time.Second)
		}
	}
	if r, err := status(owner.httpAddr); err == nil && r.BinLeases != nil {
		for _, tb := range r.BinLeases.Tables {
			for _, l := range tb.Leases {
				if l.Worker == worker.name {
					pause = max(pause, time.Until(l.Deadline)+3*time.Second)
				}
			}
		}
	}
	return min(pause, 2*time.Minute)
}

// TestBenchBinLeases measures what leasing buys: the same table of small files (a week and more
// of partitions) rewritten by four keyed members, with --bin-leases off (the owner rewrites alone)
// and on, alternated; it reports the time from the owner's election until its passes settle, and
// the rewrites' input bytes per second.
//
//	SIGLAKE_BENCH=1 SIGLAKE_BENCH_ROWS=320000 SIGLAKE_BENCH_ROUNDS=1 go test ./test/e2e -run TestBenchBinLeases -v -timeout 60m
//	SIGLAKE_BENCH=1 SIGLAKE_BENCH_ROWS=120000 SIGLAKE_BENCH_ROUNDS=3 SIGLAKE_BENCH_S3_LATENCY=80ms go test ./test/e2e -run TestBenchBinLeases -v -timeout 60m
//
// (docs/benchmarks.md, "Scale out maintenance (real processes)": without and with latency.)
func TestBenchBinLeases(t *testing.T) {
	if os.Getenv("SIGLAKE_BENCH") != "1" {
		t.Skip("benchmark: set SIGLAKE_BENCH=1")
	}
	rows, rounds := 320000, 1
	if v := os.Getenv("SIGLAKE_BENCH_ROWS"); v != "" {
		fmt.Sscan(v, &rows)
	}
	if v := os.Getenv("SIGLAKE_BENCH_ROUNDS"); v != "" {
		fmt.Sscan(v, &rounds)
	}
	// SIGLAKE_BENCH_S3_LATENCY (e.g. 80ms) puts the members' S3 requests behind a proxy adding a
	// uniform [0, it] latency to each (half of it on average): an object store's first-byte wait,
	// which a merge spends idle and another member's merge can use.
	var latency time.Duration
	if v := os.Getenv("SIGLAKE_BENCH_S3_LATENCY"); v != "" {
		var err error
		if latency, err = time.ParseDuration(v); err != nil || latency < 0 {
			t.Fatalf("SIGLAKE_BENCH_S3_LATENCY=%q: accepted: a duration such as 80ms", v)
		}
	}
	took := map[string][]time.Duration{}
	rate := map[string][]float64{} // rewrite input MB per second of settling
	for r := 0; r < rounds; r++ {
		for _, mode := range []string{"false", "true"} {
			t.Run(fmt.Sprintf("leases=%s/%d", mode, r), func(t *testing.T) {
				s, want := smallFilesSite(t, rows)
				if latency > 0 {
					behindProxy(t, s, faults.Config{Latency: latency, Seed: uint64(r)})
				}
				ms := binLeaseMembers(t, s, 4, "--bin-leases="+mode)
				owner := ownerOf(t, ms, "events")
				start := time.Now()
				waitUntil(t, "events to settle", 30*time.Minute, func() (bool, string) { return settled(owner, "events") })
				d := time.Since(start)
				var read float64
				var merged []string // committed leased bins by member
				for _, m := range ms {
					mm, err := scrapeMember(m.httpAddr)
					if err == nil {
						read += mm.sum("siglake_compactor_rewrite_read_bytes_total", "")
						merged = append(merged, fmt.Sprintf("%s %v", m.name, mm.sum("siglake_bin_lease_worker_bins_total", `outcome="committed"`)))
					}
				}
				stopAll(ms)
				exactlyOnce(t, s, want)
				took[mode] = append(took[mode], d)
				rate[mode] = append(rate[mode], read/1e6/d.Seconds())
				t.Logf("bin leases %s: settled in %s, rewrites read %.0f MB (%.3f MB/s); leased bins committed by worker: %s",
					mode, d.Round(100*time.Millisecond), read/1e6, read/1e6/d.Seconds(), strings.Join(merged, ", "))
			})
		}
	}
	med := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	if len(took["false"]) > 0 && len(took["true"]) > 0 {
		off, on := med(took["false"]), med(took["true"])
		t.Logf("median settle: owner alone %s, leased to 4 members %s: %.2fx", off.Round(100*time.Millisecond), on.Round(100*time.Millisecond), off.Seconds()/on.Seconds())
		sort.Float64s(rate["false"])
		sort.Float64s(rate["true"])
		roff, ron := rate["false"][len(rate["false"])/2], rate["true"][len(rate["true"])/2]
		t.Logf("median rewrite throughput: owner alone %.3f MB/s, leased to 4 members %.3f MB/s: %.2fx", roff, ron, ron/roff)
	}
}
