package e2e

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar"
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
	var want sidecar.RowSum
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
	crashLoop(t, newBackendSite(t, "", ""), kills)
}

// TestBackendsObjectStoreFaults drains through a proxy that fails 10% of S3 requests (5xx,
// resets, responses lost after the write, truncated reads): everything arrives exactly once, and
// every live data file is whole (DuckDB reads each one with the manifest's row count and bounds),
// so no partially written object was committed.
func TestBackendsObjectStoreFaults(t *testing.T) {
	s3 := testenv.S3(t)
	proxy, err := faults.NewHTTPProxy(s3.Endpoint, faults.Config{FailRate: 0.10, Latency: 2 * time.Millisecond, Seed: uint64(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	s := newBackendSite(t, "", proxy.URL)
	var want sidecar.RowSum
	want.Merge(s.walgen("pod-a", 20000, 1).Fingerprint)

	c := s.start(nil)
	c.waitDrained(3 * time.Minute)
	want.Merge(s.walgen("pod-a", 10000, 2).Fingerprint) // more while it runs
	c.waitDrained(3 * time.Minute)
	m := c.scrape()
	c.stop()

	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d); walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
	counts := proxy.Counts()
	t.Logf("proxy: %v; commits %v committed, %v failed; object-store errors seen by the SDK: %v",
		counts, m.sum("siglake_drain_commits_total", `outcome="committed"`), m.sum("siglake_drain_commits_total", `outcome="failed"`),
		m.sum("siglake_objstore_request_errors_total", ""))
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
	var want sidecar.RowSum
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
	backlog := c.scrape().sum("siglake_wal_sealed_segments", "")
	if backlog < 1 {
		t.Fatalf("during the outage the backlog gauge is %v", backlog)
	}
	segs, _ := localwal.Scan(s.wal)
	t.Logf("outage: /readyz %q, %d segments waiting (gauge %v)", strings.TrimSpace(body), len(segs), backlog)
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
