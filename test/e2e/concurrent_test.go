package e2e

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// TestBackendsConcurrentCommitters runs N drain processes (the real binary, --role drain), each
// with its own WAL dir and stream, committing to ONE table through the PostgreSQL catalog: no row
// is lost or duplicated, and the commit rate, success rate and latency are measured. N=4 always;
// N=16 with SIGLAKE_LONG=1.
func TestBackendsConcurrentCommitters(t *testing.T) {
	ns := []int{4}
	if long() {
		ns = append(ns, 16)
	}
	for _, n := range ns {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			r := concurrentCommitters(t, n, 4000)
			t.Logf("%s", r)
		})
	}
}

type committersResult struct {
	N                 int
	Rows              int64
	Commits, Failed   float64
	Seconds           float64
	MeanLatency       float64 // seconds, from the commit duration histograms
	P50, P95, P99     float64 // seconds, bucket upper bounds
	ObjRequests       float64
	ObjBytesRead      float64
	ObjBytesWritten   float64
	SegmentsPerWriter int
}

func (r committersResult) String() string {
	return fmt.Sprintf("N=%d: %d rows in %.1f s; %.0f commits (%.2f/s), %.0f failed after retries (success %.1f%%); "+
		"commit latency mean %.2f s, p50 <= %.2f s, p95 <= %.2f s, p99 <= %.2f s; object store: %.0f requests, %.1f MB read, %.1f MB written",
		r.N, r.Rows, r.Seconds, r.Commits, r.Commits/r.Seconds, r.Failed, 100*r.Commits/math.Max(1, r.Commits+r.Failed),
		r.MeanLatency, r.P50, r.P95, r.P99, r.ObjRequests, r.ObjBytesRead/1e6, r.ObjBytesWritten/1e6)
}

// concurrentCommitters fills n WALs with rowsEach rows each, starts n drainers at once on one
// table, waits until every WAL is empty, and checks the table holds exactly the rows sealed.
func concurrentCommitters(t *testing.T, n, rowsEach int) committersResult {
	base := newBackendSite(t, "", "")
	var want rowsum.Sum
	sites := make([]*site, n)
	segs := 0
	for i := range sites {
		s := newSite(t)
		s.catalog, s.warehouse, s.s3, s.extraEnv = base.catalog, base.warehouse, base.s3, base.extraEnv
		want.Merge(s.walgen(fmt.Sprintf("pod-%02d", i), rowsEach, 100+i).Fingerprint)
		sites[i] = s
		if ss, err := localwal.Scan(s.wal); err == nil {
			segs += len(ss)
		}
	}
	// The table exists before the race starts, so the measurement is of appends, not of creation.
	seed := filepath.Join(t.TempDir(), "wal")
	os.MkdirAll(seed, 0o755)
	seedSite := *base
	seedSite.wal = seed
	want.Merge(seedSite.walgen("pod-seed", 100, 99).Fingerprint)
	seedSite.drainOnce()

	start := time.Now()
	procs := make([]*running, n)
	for i, s := range sites {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		cmd := s.compactor(nil, "--http-addr", addr, "--role", "drain")
		procs[i] = &running{s: s, cmd: cmd, addr: addr}
		t.Cleanup(procs[i].kill)
	}
	for _, p := range procs {
		p.waitDrained(10 * time.Minute)
	}
	elapsed := time.Since(start).Seconds()

	res := committersResult{N: n, Rows: int64(want.Rows), Seconds: elapsed, SegmentsPerWriter: segs / n}
	buckets := map[float64]float64{}
	var durSum, durCount float64
	for _, p := range procs {
		waitFor(t, 30*time.Second, "/metrics", func() bool { code, _ := p.get("/metrics"); return code == http.StatusOK })
		m := p.scrape()
		res.Commits += m.sum("siglake_drain_commits_total", `outcome="committed"`) + m.sum("siglake_drain_commits_total", `outcome="already_committed"`)
		res.Failed += m.sum("siglake_drain_commits_total", `outcome="failed"`)
		durSum += m.sum("siglake_drain_commit_duration_seconds_sum", "")
		durCount += m.sum("siglake_drain_commit_duration_seconds_count", "")
		res.ObjRequests += m.sum("siglake_objstore_requests_total", "")
		res.ObjBytesRead += m.sum("siglake_objstore_read_bytes_total", "")
		res.ObjBytesWritten += m.sum("siglake_objstore_written_bytes_total", "")
		for le, v := range m.buckets("siglake_drain_commit_duration_seconds_bucket") {
			buckets[le] += v
		}
		p.stop()
	}
	res.MeanLatency = durSum / math.Max(1, durCount)
	res.P50, res.P95, res.P99 = quantile(buckets, 0.50), quantile(buckets, 0.95), quantile(buckets, 0.99)

	if got := base.tableSum("events"); got != want {
		t.Fatalf("%d concurrent drainers: table holds %d rows (sum %d); walgen sealed %d (sum %d)", n, got.Rows, got.Sum, want.Rows, want.Sum)
	}
	if res.Commits < float64(n) {
		t.Fatalf("only %.0f commits counted for %d drainers", res.Commits, n)
	}
	base.checkDuckDB("events")
	return res
}

// buckets returns a histogram's cumulative bucket counts by upper bound (+Inf included).
func (m metrics) buckets(name string) map[float64]float64 {
	out := map[float64]float64{}
	for _, line := range strings.Split(string(m), "\n") {
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		i := strings.LastIndex(line, `le="`) // last: "table=" also ends in le="
		if i < 0 {
			continue
		}
		rest := line[i+4:]
		j := strings.IndexByte(rest, '"')
		le, err := strconv.ParseFloat(rest[:j], 64)
		if err != nil {
			continue
		}
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		out[le] += v
	}
	return out
}

// quantile is the smallest bucket bound holding at least q of the observations.
func quantile(b map[float64]float64, q float64) float64 {
	les := make([]float64, 0, len(b))
	for le := range b {
		les = append(les, le)
	}
	sort.Float64s(les)
	if len(les) == 0 {
		return math.NaN()
	}
	total := b[les[len(les)-1]]
	for _, le := range les {
		if b[le] >= q*total {
			return le
		}
	}
	return math.Inf(1)
}
