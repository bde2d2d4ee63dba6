package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/test/faults"
	"github.com/siglake/siglake/test/testenv"
)

// The drain on the production backends: an Iceberg SQL catalog on PostgreSQL and an s3://
// warehouse on versitygw, through the real binary.

func long() bool { return os.Getenv("SIGLAKE_LONG") == "1" }

// TestBackendsDrainExactlyOnce drains walgen output through S3+PostgreSQL and checks the table
// holds exactly the sealed rows, read back through iceberg-go (S3) and DuckDB (the POSIX root).
func TestBackendsDrainExactlyOnce(t *testing.T) {
	s := newBackendSite(t, "", "")
	var want rowsum.Sum
	for i, stream := range []int{1, 2} {
		r := s.walgen("pod-a", 10000, stream)
		want.Merge(r.Fingerprint)
		s.drainOnce()
		if got := s.tableSum("events"); got != want {
			t.Fatalf("after drain %d: table holds %d rows (sum %d), sealed %d (sum %d)", i, got.Rows, got.Sum, want.Rows, want.Sum)
		}
	}
	s.checkDuckDB("events")
}

// TestBackendsCrashLoopExactlyOnce is the SIGKILL crash loop of TestCrashLoopExactlyOnce on
// S3+PostgreSQL.
func TestBackendsCrashLoopExactlyOnce(t *testing.T) {
	kills := 12
	if long() {
		kills = 100
	}
	s := newBackendSite(t, "", "")
	crashLoop(t, s, kills)
	checkGC(t, s)
}

type gcReport struct {
	Apply  bool `json:"apply"`
	Tables []struct {
		Table   string `json:"table"`
		Orphans []struct {
			Path      string
			SizeBytes int64
		} `json:"orphans"`
		Bytes   int64    `json:"bytes"`
		Deleted []string `json:"deleted"`
	} `json:"tables"`
}

// gc runs `siglake gc` on the site and returns its JSON report.
func (s *site) gc(args ...string) gcReport {
	s.t.Helper()
	cmd := exec.Command(bin, append([]string{"gc", "--catalog", s.catalog, "--warehouse", s.warehouse, "--json"}, args...)...)
	cmd.Env = append(os.Environ(), s.extraEnv...)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		s.t.Fatalf("siglake gc %v: %v\n%s", args, err, stderr)
	}
	var r gcReport
	if err := json.Unmarshal(out, &r); err != nil {
		s.t.Fatalf("siglake gc output %q: %v", out, err)
	}
	return r
}

func (r gcReport) orphans() map[string]int64 {
	out := map[string]int64{}
	for _, t := range r.Tables {
		for _, o := range t.Orphans {
			out[o.Path] = o.SizeBytes
		}
	}
	return out
}

// checkGC runs `siglake gc` after a crash loop left uncommitted outputs on S3: nothing younger
// than the limit is listed, the dry run deletes nothing, --apply removes the old orphans and
// only them, and the table still reads back whole.
func checkGC(t *testing.T, s *site) {
	want := s.tableSum("events")
	// The objects here are seconds old, far under gc's 24h floor: lower it explicitly, as an
	// operator who knows no commit runs would (12 x a 1ms commit deadline).
	low := func(args ...string) gcReport {
		return s.gc(append([]string{"--commit-timeout", "1ms", "--min-age-floor", "12ms"}, args...)...)
	}
	if r := low("--older-than", "1h"); len(r.orphans()) != 0 {
		t.Fatalf("gc --older-than 1h lists objects written minutes ago: %v", r.orphans())
	}
	time.Sleep(2 * time.Second)
	dry := low("--older-than", "1s")
	orphans := dry.orphans()
	if len(orphans) == 0 {
		t.Fatal("the crash loop left no orphan behind; gc was not exercised")
	}
	live := map[string]bool{}
	for _, f := range s.liveFiles("events") {
		live[f] = true
	}
	for p := range orphans {
		if live[p] {
			t.Fatalf("gc lists live data file %s as an orphan", p)
		}
		if _, err := os.Stat(s.localPath(p)); err != nil {
			t.Fatalf("dry run: orphan %s: %v", p, err)
		}
	}
	// A fresh unreferenced object, younger than the limit, must survive --apply.
	young := strings.TrimRight(s.warehouse, "/") + "/siglake.db/events/data/young-uncommitted.parquet"
	if err := os.WriteFile(s.localPath(young), []byte("not committed yet"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Stamped 30 s ahead, so it is still younger than --older-than 2s however long the gc below
	// takes to start on a loaded machine (seen: a 2 s margin was not enough).
	if ahead := time.Now().Add(30 * time.Second); os.Chtimes(s.localPath(young), ahead, ahead) != nil {
		t.Fatal("stamping the young object")
	}
	applied := low("--older-than", "2s", "--apply")
	deleted := 0
	for _, tbl := range applied.Tables {
		deleted += len(tbl.Deleted)
		for _, p := range tbl.Deleted {
			if live[p] || p == young {
				t.Fatalf("gc --apply deleted %s, which it must keep", p)
			}
			if _, err := os.Stat(s.localPath(p)); !os.IsNotExist(err) {
				t.Fatalf("gc says it deleted %s, yet it is there (%v)", p, err)
			}
		}
	}
	if deleted < len(orphans) {
		t.Fatalf("gc --apply deleted %d objects, the dry run listed %d", deleted, len(orphans))
	}
	if _, err := os.Stat(s.localPath(young)); err != nil {
		t.Fatalf("gc removed an object younger than the limit: %v", err)
	}
	// Back to its real age, so the check below can see it as the orphan it is.
	if past := time.Now().Add(-time.Second); os.Chtimes(s.localPath(young), past, past) != nil {
		t.Fatal("restamping the young object")
	}
	if _, seen := low("--older-than", "12ms").orphans()[young]; !seen {
		t.Fatalf("gc does not see %s as an orphan at all, so keeping it proved nothing", young)
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("after gc the table holds %d rows (sum %d), before %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
	t.Logf("gc: dry run listed %d orphans (%d bytes); --apply deleted %d; live files and the young object kept",
		len(orphans), dry.Tables[0].Bytes, deleted)
}

// liveFiles lists the table's live data file locations.
func (s *site) liveFiles(name string) []string {
	s.t.Helper()
	_, files := s.table(name)
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.Path
	}
	return out
}

// TestBackendsObjectStoreFaults drains and rewrites through a proxy that fails 10% of S3 requests
// (5xx, resets, responses lost after the write, truncated reads): everything arrives exactly once,
// at least one rewrite commits, and every live data file is whole (DuckDB reads each one with the
// manifest's row count and bounds), so no partially written object was committed.
func TestBackendsObjectStoreFaults(t *testing.T) {
	s3 := testenv.S3(t)
	proxy, err := faults.NewHTTPProxy(s3.Endpoint, faults.Config{FailRate: 0.10, Latency: 2 * time.Millisecond, Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	s := newBackendSite(t, "", proxy.URL)
	rows := int(6000)
	if long() {
		rows = 40000
	}
	var want rowsum.Sum
	want.Merge(s.walgen("pod-a", rows, 1).Fingerprint)

	lines := make(chan string, 100000)
	c := s.start(lines)
	c.waitDrained(3 * time.Minute)
	want.Merge(s.walgen("pod-a", rows/2, 2).Fingerprint) // more while it runs
	c.waitDrained(3 * time.Minute)
	// The maintenance loop (role all) rewrites the many small files under the same faults.
	deadline := time.Now().Add(3 * time.Minute)
	for c.scrape().sum("siglake_compactor_rewrites_total", `outcome="committed"`) < 1 {
		if time.Now().After(deadline) {
			m := c.scrape()
			for len(lines) > 0 {
				if l := <-lines; strings.Contains(l, "rewrite") || strings.Contains(l, "maint") {
					t.Log(l)
				}
			}
			t.Fatalf("no rewrite committed through the faulty store within 3 minutes: %v conflict, %v failed",
				m.sum("siglake_compactor_rewrites_total", `outcome="conflict"`), m.sum("siglake_compactor_rewrites_total", `outcome="failed"`))
		}
		time.Sleep(500 * time.Millisecond)
	}
	m := c.scrape()
	c.stop()

	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d); walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
	counts := proxy.Counts()
	t.Logf("proxy: %v; drain commits %v committed, %v failed; rewrites %v committed, %v conflict, %v failed; object-store errors seen by the SDK: %v",
		counts, m.sum("siglake_drain_commits_total", `outcome="committed"`), m.sum("siglake_drain_commits_total", `outcome="failed"`),
		m.sum("siglake_compactor_rewrites_total", `outcome="committed"`), m.sum("siglake_compactor_rewrites_total", `outcome="conflict"`),
		m.sum("siglake_compactor_rewrites_total", `outcome="failed"`), m.sum("siglake_objstore_request_errors_total", ""))
	if proxy.Faults() < 10 {
		t.Fatalf("only %d faults injected; the test did not exercise what it claims", proxy.Faults())
	}
	if m.sum("siglake_objstore_request_errors_total", "") < 1 {
		t.Fatal("the binary counted no object-store errors although the proxy injected some")
	}
}

// TestBackendsCatalogOutage stops the catalog's PostgreSQL in the middle of a run: /readyz says
// not ready, the backlog grows, nothing is lost; once PostgreSQL is back it catches up.
func TestBackendsCatalogOutage(t *testing.T) {
	pg, dsn := testenv.OwnPostgres(t)
	s := newBackendSite(t, dsn, "")
	var want rowsum.Sum
	want.Merge(s.walgen("pod-a", 5000, 1).Fingerprint)
	c := s.start(nil)
	c.waitDrained(2 * time.Minute)
	if code, _ := c.get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz %d before the outage", code)
	}

	pg.Stop(t)
	want.Merge(s.walgen("pod-a", 8000, 2).Fingerprint)
	waitFor(t, time.Minute, "/readyz to report the outage", func() bool {
		code, _ := c.get("/readyz")
		return code == http.StatusServiceUnavailable
	})
	_, body := c.get("/readyz")
	// How steadily /readyz reports the outage: the share of 100 ms samples over 3 s answering 503.
	notReady := 0
	for i := 0; i < 30; i++ {
		if code, _ := c.get("/readyz"); code == http.StatusServiceUnavailable {
			notReady++
		}
		time.Sleep(100 * time.Millisecond)
	}
	backlog := c.scrape().sum("siglake_wal_sealed_segments", "")
	if backlog < 1 {
		t.Fatalf("during the outage the backlog gauge is %v", backlog)
	}
	segs, _ := localwal.Scan(s.wal)
	t.Logf("outage: /readyz %q, not ready in %d of 30 samples; %d segments waiting (gauge %v)",
		strings.TrimSpace(body), notReady, len(segs), backlog)
	if notReady < 30 {
		t.Fatalf("/readyz answered ready in %d of 30 samples while the catalog was down", 30-notReady)
	}
	if len(segs) == 0 {
		t.Fatal("segments were removed while the catalog was down")
	}

	pg.Start(t)
	c.waitDrained(3 * time.Minute)
	waitFor(t, time.Minute, "/readyz to recover", func() bool {
		code, _ := c.get("/readyz")
		return code == http.StatusOK
	})
	c.stop()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("after the outage the table holds %d rows (sum %d); walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}

// running is a compactor started by site.start, with its HTTP address.
type running struct {
	s    *site
	cmd  *exec.Cmd
	addr string
}

// start runs `siglake compactor` on a fixed free port (so /metrics and /readyz can be read).
func (s *site) start(lines chan<- string, args ...string) *running {
	s.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(s.t))
	cmd := s.compactor(lines, append([]string{"--http-addr", addr}, args...)...)
	r := &running{s: s, cmd: cmd, addr: addr}
	s.t.Cleanup(func() { r.kill() })
	waitFor(s.t, 30*time.Second, "the compactor's HTTP server", func() bool {
		code, _ := r.get("/healthz")
		return code == http.StatusOK
	})
	return r
}

func (r *running) get(path string) (int, string) {
	resp, err := http.Get("http://" + r.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitDrained waits until the site's WAL holds no sealed segment.
func (r *running) waitDrained(timeout time.Duration) {
	r.s.t.Helper()
	waitFor(r.s.t, timeout, "the WAL to drain", func() bool {
		segs, err := localwal.Scan(r.s.wal)
		return err == nil && len(segs) == 0
	})
}

// stop sends SIGTERM and waits for a clean exit.
func (r *running) stop() {
	r.s.t.Helper()
	if r.cmd.ProcessState != nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			r.s.t.Errorf("compactor exited with %v after SIGTERM", err)
		}
	case <-time.After(60 * time.Second):
		r.kill()
		r.s.t.Error("compactor did not stop within 60 s of SIGTERM")
	}
}

func (r *running) kill() {
	if r.cmd.ProcessState == nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
}

// metrics is a /metrics scrape in the text format.
type metrics string

func (r *running) scrape() metrics {
	r.s.t.Helper()
	code, body := r.get("/metrics")
	if code != http.StatusOK {
		r.s.t.Fatalf("/metrics: %d %s", code, body)
	}
	return metrics(body)
}

// sum adds the samples of the series named name (exactly) whose labels contain every
// comma-separated fragment of labels (e.g. `outcome="committed"`).
func (m metrics) sum(name, labels string) float64 {
	total := 0.0
	sc := bufio.NewScanner(strings.NewReader(string(m)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, lbl, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		match := true
		for _, f := range strings.Split(labels, ",") {
			if f != "" && !strings.Contains(lbl, f) {
				match = false
			}
		}
		if !match {
			continue
		}
		if v, err := strconv.ParseFloat(strings.Fields(val)[0], 64); err == nil {
			total += v
		}
	}
	return total
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBackendsCatalogPartition cuts every connection between the compactor and PostgreSQL (a TCP
// proxy; the server stays up) right as commits start, several times: some commits lose their
// response mid-flight. The stream mark, re-read before every retry, keeps the rows exactly once.
func TestBackendsCatalogPartition(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := faults.NewTCPProxy(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	u.Host = proxy.Addr
	s := newBackendSite(t, u.String(), "")
	var want rowsum.Sum
	want.Merge(s.walgen("pod-a", 8000, 1).Fingerprint)

	lines := make(chan string, 100000)
	c := s.start(lines, "--log-level", "debug", "--role", "drain")
	cuts := 0
	deadline := time.Now().Add(2 * time.Minute)
	for cuts < 8 && time.Now().Before(deadline) {
		select {
		case l := <-lines:
			if !strings.Contains(l, "committing batch") {
				continue
			}
			time.Sleep(time.Duration(cuts*40) * time.Millisecond) // land at different points of the commit
			proxy.Cut()
			cuts++
			time.Sleep(1500 * time.Millisecond)
			proxy.Restore()
			want.Merge(s.walgen("pod-a", 1000, 10+cuts).Fingerprint)
		case <-time.After(time.Second):
		}
	}
	if cuts < 3 {
		t.Fatalf("only %d cuts landed at a commit", cuts)
	}
	c.waitDrained(3 * time.Minute)
	m := c.scrape()
	c.stop()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("after %d cuts the table holds %d rows (sum %d); walgen sealed %d (sum %d)", cuts, got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
	t.Logf("%d cuts at a commit: commits %v committed, %v already committed (lost response detected), %v failed and retried later",
		cuts, m.sum("siglake_drain_commits_total", `outcome="committed"`), m.sum("siglake_drain_commits_total", `outcome="already_committed"`),
		m.sum("siglake_drain_commits_total", `outcome="failed"`))
}
