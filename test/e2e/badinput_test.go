package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// Bad configuration and a hostile environment, through the real binary (DESIGN.md promise 8 and
// the process's lifecycle): options that cannot work fail at start naming the flag, the env var and
// what is accepted; a missing catalog keeps the process up, not ready and accumulating; SIGTERM
// exits cleanly without losing a row.

// startFails runs `siglake compactor` with args and extra environment, expects it to exit non-zero
// before timeout, and returns its output.
func startFails(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"compactor", "--http-addr", "127.0.0.1:0", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("compactor %v with %v still ran after 30 s; it must fail at start\n%s", args, env, tail(string(out), 2000))
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("compactor %v with %v: %v, want a non-zero exit\n%s", args, env, err, tail(string(out), 2000))
	}
	return string(out)
}

func mustContain(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, tail(out, 2000))
		}
	}
}

// TestWALDirMissingOrUnreadable: a WAL dir that does not exist, is a file or cannot be read stops
// the process at start with an error naming --wal-dir / SIGLAKE_WAL_DIR, by flag and by env.
func TestWALDirMissingOrUnreadable(t *testing.T) {
	dir := t.TempDir()
	catalog := []string{"--catalog", "sqlite:" + filepath.Join(dir, "catalog.db"), "--warehouse", filepath.Join(dir, "warehouse")}
	missing := filepath.Join(dir, "no-such-wal")
	file := filepath.Join(dir, "wal-is-a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		env  []string
		args []string
		path string
	}{
		{"missing_by_flag", nil, append([]string{"--wal-dir", missing}, catalog...), missing},
		{"missing_by_env", []string{"SIGLAKE_WAL_DIR=" + missing}, catalog, missing},
		{"missing_once", nil, append([]string{"--once", "--wal-dir", missing}, catalog...), missing},
		{"a_file", nil, append([]string{"--wal-dir", file}, catalog...), file},
	}
	if os.Geteuid() != 0 { // root reads any directory
		locked := filepath.Join(dir, "locked")
		if err := os.Mkdir(locked, 0o000); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(locked, 0o755) })
		cases = append(cases, struct {
			name string
			env  []string
			args []string
			path string
		}{"unreadable", nil, append([]string{"--wal-dir", locked}, catalog...), locked})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := startFails(t, c.env, c.args...)
			mustContain(t, out, "--wal-dir", "SIGLAKE_WAL_DIR", c.path)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); err == nil {
		t.Error("the catalog was created although the process should have failed before opening it")
	}
}

// TestBadOptionsFailAtStart: each bad value fails at start, naming flag, env var and what is
// accepted, whether it came from the environment or a flag.
func TestBadOptionsFailAtStart(t *testing.T) {
	s := newSite(t)
	base := []string{"--wal-dir", s.wal, "--catalog", s.catalog, "--warehouse", s.warehouse}
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"role_env", []string{"SIGLAKE_COMPACTOR_ROLE=leader"}, nil,
			[]string{`"leader"`, "--role", "SIGLAKE_COMPACTOR_ROLE", "all, drain, maintenance"}},
		{"role_flag", nil, []string{"--role", "leader"},
			[]string{`"leader"`, "--role", "SIGLAKE_COMPACTOR_ROLE", "all, drain, maintenance"}},
		{"leveled_env", []string{"SIGLAKE_COMPACTOR_LEVELED=maybe"}, nil,
			[]string{`"maybe"`, "--leveled", "SIGLAKE_COMPACTOR_LEVELED", "1/0, true/false, on/off, yes/no"}},
		{"leveled_flag", nil, []string{"--leveled=maybe"},
			[]string{`"maybe"`, "--leveled", "SIGLAKE_COMPACTOR_LEVELED", "1/0, true/false, on/off, yes/no"}},
		{"overlap_depth_zero", []string{"SIGLAKE_COMPACTOR_MAX_OVERLAP_DEPTH=0"}, nil,
			[]string{"--max-overlap-depth", "SIGLAKE_COMPACTOR_MAX_OVERLAP_DEPTH", ">= 1"}},
		{"batch_target_negative", nil, []string{"--commit-batch-target-mb=-1"},
			[]string{"--commit-batch-target-mb", "SIGLAKE_COMMIT_BATCH_TARGET_MB", ">= 0"}},
		{"catalog_scheme", []string{"SIGLAKE_CATALOG=mysql://x"}, nil,
			[]string{"--catalog", "SIGLAKE_CATALOG", "sqlite:PATH"}},
		{"poll_interval", []string{"SIGLAKE_DRAIN_POLL_INTERVAL=soon"}, nil,
			[]string{"--drain-poll-interval", "SIGLAKE_DRAIN_POLL_INTERVAL", "duration"}},
		// Parses as a number, yet the planner could never run a bin: refused at start, not in
		// every maintenance cycle while the process reports ready.
		{"max_fan_in_one", []string{"SIGLAKE_COMPACTOR_MAX_FANIN=1"}, nil,
			[]string{`"1"`, "--max-fan-in", "SIGLAKE_COMPACTOR_MAX_FANIN", "from 2 to"}},
		{"footer_max_bytes_zero", []string{"SIGLAKE_INDEX_FOOTER_MAX_BYTES=0"}, nil,
			[]string{"--index-footer-max-bytes", "SIGLAKE_INDEX_FOOTER_MAX_BYTES", ">= 1", "SIGLAKE_INVERTED_INDEX=off"}},
		{"gossip_probe_timeout", nil, []string{"--gossip-bind", "127.0.0.1:0", "--gossip-probe-timeout", "2s"},
			[]string{"SIGLAKE_GOSSIP_PROBE_TIMEOUT", "SIGLAKE_GOSSIP_PROBE_INTERVAL", "shorter"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := base
			if c.env != nil && strings.HasPrefix(c.env[0], "SIGLAKE_CATALOG=") {
				args = []string{"--wal-dir", s.wal, "--warehouse", s.warehouse} // the env must not be overridden
			}
			out := startFails(t, c.env, append(append([]string(nil), args...), c.args...)...)
			mustContain(t, out, c.want...)
		})
	}
	if _, err := os.Stat(strings.TrimPrefix(s.catalog, "sqlite:")); err == nil {
		t.Error("a run with a bad option created the catalog; it must fail before doing anything")
	}
}

// TestWALDirVanishesWhileRunning: losing the WAL volume makes /readyz say so by option name while
// /healthz stays up; when the directory is back the process is ready and drains it.
func TestWALDirVanishesWhileRunning(t *testing.T) {
	s := newSite(t)
	c := s.start(nil)
	waitFor(t, 30*time.Second, "/readyz 200", func() bool { code, _ := c.get("/readyz"); return code == http.StatusOK })
	moved := s.wal + ".moved"
	if err := os.Rename(s.wal, moved); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "/readyz to report the WAL dir", func() bool {
		code, body := c.get("/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "--wal-dir") && strings.Contains(body, "SIGLAKE_WAL_DIR")
	})
	if code, _ := c.get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz %d while the WAL dir is gone; a restart would not bring it back", code)
	}
	if err := os.Rename(moved, s.wal); err != nil {
		t.Fatal(err)
	}
	want := s.walgen("pod-a", 3000, 1).Fingerprint
	c.waitDrained(time.Minute)
	waitFor(t, 30*time.Second, "/readyz 200 again", func() bool { code, _ := c.get("/readyz"); return code == http.StatusOK })
	c.stop()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, sealed %+v", got, want)
	}
}

// TestCatalogClosedPort: a catalog nobody listens on keeps the process up and not ready, naming the
// catalog (password redacted); /healthz stays 200; the backlog gauge follows walgen; no segment
// is touched; SIGTERM exits 0. A later drain against a working catalog then commits every row.
func TestCatalogClosedPort(t *testing.T) {
	s := newSite(t)
	port := freePort(t)
	dead := fmt.Sprintf("postgres://siglake:s3cret-pw@127.0.0.1:%d/x", port)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "compactor", "--wal-dir", s.wal, "--catalog", dead, "--warehouse", s.warehouse,
		"--http-addr", addr, "--log-format", "json", "--drain-poll-interval", "100ms", "--shutdown-timeout", "10s")
	var logs bytes.Buffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &running{s: s, cmd: cmd, addr: addr}
	t.Cleanup(r.kill)
	waitFor(t, 30*time.Second, "the HTTP server", func() bool { code, _ := r.get("/healthz"); return code == http.StatusOK })

	var want rowsum.Sum
	backlog := 0.0
	for round := 1; round <= 3; round++ {
		code, body := r.get("/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "catalog") || !strings.Contains(body, fmt.Sprint(port)) {
			t.Fatalf("/readyz %d %q, want 503 naming the catalog", code, body)
		}
		if strings.Contains(body, "s3cret-pw") {
			t.Fatalf("/readyz shows the catalog password: %q", body)
		}
		if code, _ := r.get("/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz %d during the outage", code)
		}
		res := s.walgen("pod-a", 2000, round)
		want.Merge(res.Fingerprint)
		segs, err := localwal.Scan(s.wal)
		if err != nil {
			t.Fatal(err)
		}
		if float64(len(segs)) <= backlog {
			t.Fatalf("round %d: %d segments in the WAL, %v before: segments went away while the catalog was unreachable", round, len(segs), backlog)
		}
		// The gauge follows the WAL at the drain's poll cadence, not the catalog's retry backoff.
		waitFor(t, 5*time.Second, fmt.Sprintf("siglake_wal_sealed_segments to reach %d", len(segs)), func() bool {
			return r.scrape().sum("siglake_wal_sealed_segments", "") == float64(len(segs))
		})
		backlog = float64(len(segs))
		if up := r.scrape().sum("siglake_catalog_up", ""); up != 0 {
			t.Fatalf("siglake_catalog_up %v during the outage", up)
		}
		time.Sleep(2 * time.Second) // let the retry backoff grow past the poll interval
	}

	began := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM during the outage: %v\n%s", err, tail(logs.String(), 2000))
	}
	t.Logf("exited 0 %v after SIGTERM; %v segments waited", time.Since(began).Round(time.Millisecond), backlog)
	if strings.Contains(logs.String(), "s3cret-pw") {
		t.Fatal("the log shows the catalog password")
	}

	s.drainOnce() // the site's own (working) catalog
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, walgen sealed %+v", got, want)
	}
}

// TestCatalogDownAtStartThenBack: the catalog's PostgreSQL is down when the process starts; it
// stays up, not ready, and the backlog grows as walgen writes; once PostgreSQL is back the backlog
// drains, /readyz turns 200, and the table holds every row exactly once.
func TestCatalogDownAtStartThenBack(t *testing.T) {
	pg, dsn := testenv.OwnPostgres(t)
	s := newSite(t)
	s.catalog = dsn // local warehouse: this test is about the catalog
	pg.Stop(t)

	c := s.start(nil, "--drain-poll-interval", "100ms")
	var want rowsum.Sum
	prev := 0.0
	for round := 1; round <= 3; round++ {
		want.Merge(s.walgen("pod-a", 2000, round).Fingerprint)
		segs, _ := localwal.Scan(s.wal)
		waitFor(t, 5*time.Second, "the backlog gauge to follow walgen", func() bool {
			v := c.scrape().sum("siglake_wal_sealed_segments", "")
			return v == float64(len(segs)) && v > prev
		})
		prev = float64(len(segs))
		code, body := c.get("/readyz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "catalog") {
			t.Fatalf("/readyz %d %q while PostgreSQL is down, want 503 naming the catalog", code, body)
		}
		if code, _ := c.get("/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz %d while PostgreSQL is down", code)
		}
	}

	pg.Start(t)
	c.waitDrained(2 * time.Minute)
	waitFor(t, time.Minute, "/readyz 200", func() bool { code, _ := c.get("/readyz"); return code == http.StatusOK })
	if v := c.scrape().sum("siglake_wal_sealed_segments", ""); v != 0 {
		t.Fatalf("backlog gauge %v after the drain", v)
	}
	c.stop()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, walgen sealed %+v", got, want)
	}
}

// TestSIGTERMDuringDrain sends SIGTERM as a commit starts while walgen keeps writing: the process
// exits 0 within its shutdown timeout, and a later --once drain leaves exactly the sealed rows.
func TestSIGTERMDuringDrain(t *testing.T) {
	const shutdownTimeout = 15 * time.Second
	s := newSite(t)
	var want rowsum.Sum
	want.Merge(s.walgen("pod-a", 30000, 1).Fingerprint)

	lines := make(chan string, 4096)
	cmd := s.compactor(lines, "--log-level", "debug", "--shutdown-timeout", shutdownTimeout.String())
	t.Cleanup(func() { (&running{cmd: cmd}).kill() })
	// More rows arrive while it drains.
	gen := make(chan walgenResult, 1)
	go func() { gen <- s.walgen("pod-a", 10000, 2, "--rate", "20000") }()

	deadline := time.After(30 * time.Second)
	commits := 0
wait:
	for {
		select {
		case l := <-lines:
			if strings.Contains(l, "committing batch") {
				if commits++; commits == 3 {
					break wait
				}
			}
		case <-deadline:
			t.Fatal("no commit started within 30 s")
		}
	}
	began := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(shutdownTimeout + 5*time.Second):
		t.Fatalf("still running %v after SIGTERM (shutdown timeout %v)", time.Since(began), shutdownTimeout)
	}
	took := time.Since(began)
	if took > shutdownTimeout {
		t.Fatalf("exit took %v, longer than the shutdown timeout %v", took, shutdownTimeout)
	}
	want.Merge((<-gen).Fingerprint)
	left, _ := localwal.Scan(s.wal)
	t.Logf("exited 0 %v after SIGTERM; %d sealed segments left for the next run", took.Round(time.Millisecond), len(left))

	s.drainOnce()
	if segs, err := localwal.Scan(s.wal); err != nil || len(segs) != 0 {
		t.Fatalf("%d segments left after --once (%v)", len(segs), err)
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, walgen sealed %+v", got, want)
	}
}

// TestQuarantineThroughBinary: a truncated segment among good ones is quarantined by the real
// process, counted in /metrics by reason and logged as JSON; the good rows commit.
func TestQuarantineThroughBinary(t *testing.T) {
	s := newSite(t)
	s.walgen("pod-a", 5000, 1)
	segs, err := localwal.Scan(s.wal)
	if err != nil || len(segs) < 3 {
		t.Fatalf("walgen sealed %d segments (%v), want at least 3", len(segs), err)
	}
	bad := segs[1]
	var want rowsum.Sum // every segment's rows but the one about to be truncated
	for _, seg := range segs {
		if seg.Name == bad.Name {
			continue
		}
		l, err := localwal.ReadAll(seg.Path, localwal.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range l.Records {
			if err := want.Add(rec, walgen.Columns...); err != nil {
				t.Fatal(err)
			}
		}
		l.Release()
	}
	data, err := os.ReadFile(bad.Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad.Path, data[:len(data)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 4096)
	c := s.start(lines)
	c.waitDrained(time.Minute)
	if v := c.scrape().sum("siglake_wal_quarantined_segments_total", `reason="truncated"`); v != 1 {
		t.Fatalf("quarantined{reason=truncated} = %v, want 1", v)
	}
	c.stop()
	logged := false
	for len(lines) > 0 {
		l := <-lines
		if strings.Contains(l, `"quarantined bad segment"`) && strings.Contains(l, bad.Name) && strings.Contains(l, `"reason":"truncated"`) {
			logged = true
		}
	}
	if !logged {
		t.Error("no JSON log line says the segment was quarantined with reason truncated")
	}
	q, err := os.ReadFile(filepath.Join(s.wal, localwal.QuarantineDir, bad.Name))
	if err != nil || !bytes.Equal(q, data[:len(data)/3]) {
		t.Fatalf("quarantined copy differs from the truncated file (%v)", err)
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want every good segment's rows %+v", got, want)
	}
	// The runbook's kubectl exec cat runs as another user of the pod's group.
	if fi, err := os.Stat(filepath.Join(s.wal, localwal.QuarantineDir, bad.Name+localwal.ReasonSuffix)); err != nil || fi.Mode().Perm()&0o040 == 0 {
		t.Fatalf("reason file not group-readable: %v %v", fi, err)
	}

	// After a restart the process still reports the segment in quarantine, in /metrics and status.
	c = s.start(make(chan string, 4096))
	waitFor(t, time.Minute, "siglake_wal_segments_in_quarantine 1 after a restart", func() bool {
		return c.scrape().sum("siglake_wal_segments_in_quarantine", "") == 1
	})
	_, body := c.get("/debug/status")
	var st struct {
		Backlog struct {
			InQuarantine int `json:"in_quarantine"`
		} `json:"backlog"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Backlog.InQuarantine != 1 {
		t.Fatalf("status after a restart: %d in quarantine (%v), want 1", st.Backlog.InQuarantine, err)
	}
	c.stop()
}
