package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/catalog"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// startBuffered runs the compactor with the WAL buffer on a free loopback port and waits until
// it answers; it returns the running process and a client.
func (s *site) startBuffered(args ...string) (*running, *reader.Client) {
	s.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(s.t))
	r := s.start(nil, append([]string{"--buffer-addr", addr}, args...)...)
	c := &reader.Client{Addr: addr}
	waitFor(s.t, 30*time.Second, "the WAL buffer", func() bool {
		resp, err := http.Get("http://" + addr + "/v1/buffer")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	})
	return r, c
}

// bufferSum reads table from the buffer with q and fingerprints the answer.
func bufferSum(c *reader.Client, table string, q reader.Query) (rowsum.Sum, reader.Answer, error) {
	var s rowsum.Sum
	ans, err := c.Read(context.Background(), table, q, func(rec arrow.RecordBatch) error { return s.Add(rec, walgen.Columns...) })
	return s, ans, err
}

// TestBufferServesSealedRows: the real binary serves the rows `siglake walgen` sealed, before
// any commit, on its own listener (not /metrics'), refuses a malformed query with 400, counts its
// reads in /metrics, and `siglake tail` prints them.
func TestBufferServesSealedRows(t *testing.T) {
	s := newSite(t)
	w := s.walgen("pod-0", 3000, 1)
	r, c := s.startBuffered("--commit-batch-max-age-secs", "3600", "--commit-batch-target-mb", "1000")
	var got rowsum.Sum
	var ans reader.Answer
	waitFor(t, 30*time.Second, "the buffer to answer (the catalog opens first)", func() bool {
		var err error
		got, ans, err = bufferSum(c, "events", reader.Query{})
		return err == nil
	})
	if got != w.Fingerprint || len(ans.Segments) != w.Segments || !ans.Verified {
		t.Fatalf("buffer %+v in %d segments, walgen sealed %+v in %d", got, len(ans.Segments), w.Fingerprint, w.Segments)
	}
	// Arrow JS, a reader we did not write, reads the same rows (fingerprinted in JavaScript), a
	// filtered answer too.
	js := testenv.ArrowJS(t, "http://"+c.Addr+"/v1/buffer/events", walgen.Columns...)
	if js.Status != 200 || js.Rows != w.Rows || js.Checksum != w.Fingerprint.Sum || js.Metadata[reader.MetaComplete] != "true" ||
		js.Metadata[reader.MetaThrough] != ans.Through.String() {
		t.Fatalf("Arrow JS read %d rows checksum %d (%v); walgen sealed %d rows checksum %d", js.Rows, js.Checksum, js.Metadata, w.Rows, w.Fingerprint.Sum)
	}
	filtered, _, err := bufferSum(c, "events", reader.Query{Filter: rows.Filter{Where: []rows.Condition{{Column: "severity", Values: []string{"error", "fatal"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if js := testenv.ArrowJS(t, "http://"+c.Addr+"/v1/buffer/events?in=severity=error,fatal", walgen.Columns...); js.Rows != filtered.Rows || js.Checksum != filtered.Sum || js.Rows == 0 {
		t.Fatalf("filtered: Arrow JS %d rows %d, Go client %+v", js.Rows, js.Checksum, filtered)
	}
	// The documented curl: headers say where the answer stands; a typo is a 400 naming it.
	resp, err := http.Get("http://" + c.Addr + "/v1/buffer/events?columns=timestamp,raw&in=severity=error,fatal")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != reader.ContentType || resp.Header.Get("Siglake-Buffer-Complete") != "true" {
		t.Fatalf("GET: %d %v", resp.StatusCode, resp.Header)
	}
	resp, err = http.Get("http://" + c.Addr + "/v1/buffer/events?columns=timestamp&whre=service=x")
	if err != nil {
		t.Fatal(err)
	}
	var eb struct{ Error, Parameter string }
	_ = json.NewDecoder(resp.Body).Decode(&eb)
	resp.Body.Close()
	if resp.StatusCode != 400 || eb.Parameter != "whre" {
		t.Fatalf("typo: %d %+v", resp.StatusCode, eb)
	}
	if code, _ := r.get("/v1/buffer/events"); code != http.StatusNotFound {
		t.Fatalf("the metrics listener serves the buffer: %d", code)
	}
	if m := r.scrape(); !strings.Contains(string(m), `siglake_buffer_requests_total{code="400"} 1`) || !strings.Contains(string(m), "siglake_buffer_rows_total") {
		t.Fatalf("metrics lack the buffer's reads:\n%s", grepLines(string(m), "siglake_buffer_"))
	}
	// siglake tail: every row, oldest first, once.
	out, err := exec.Command(bin, "tail", "events", "--buffer", c.Addr, "--catalog", s.catalog, "--warehouse", s.warehouse,
		"-n", "100000", "--since", "0", "--columns", "timestamp,service").Output()
	if err != nil {
		t.Fatalf("siglake tail: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != int(w.Rows) || !sortedByTimestamp(lines) {
		t.Fatalf("siglake tail printed %d lines (sorted %v), walgen sealed %d rows", len(lines), sortedByTimestamp(lines), w.Rows)
	}
	r.stop()
}

// TestBufferExactlyOnceWhileTheBinaryDrains is promise 12 against the real binary: while it
// commits a backlog segment by segment, a reader loops "load the table, read it, read the buffer
// with its marks" with pauses between the two reads. Every answered round's lake plus buffer rows
// must be exactly the rows walgen sealed; every other round a 409 that names the newer marks. With
// retention off a commit between the reads must be refused; with it on the answer comes from
// retention.
func TestBufferExactlyOnceWhileTheBinaryDrains(t *testing.T) {
	for _, c := range []struct {
		name   string
		retain string
	}{{"retention off", "0s"}, {"retention on", "30s"}} {
		t.Run(c.name, func(t *testing.T) {
			s := newSite(t)
			w := s.walgen("pod-0", 40000, 2)
			rt, bc := s.startBuffered("--buffer-retain-after-drain", c.retain, "--drain-poll-interval", "50ms")
			l, err := lake.Open(context.Background(), s.lakeConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			rng := rand.New(rand.NewPCG(3, 4))
			answered, raced, refused := 0, 0, 0
			ctx := context.Background()
			for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
				tbl, err := l.LoadTable(ctx, "events")
				marks := reader.Marks{}
				var lakeSum rowsum.Sum
				if err == nil {
					if marks, err = reader.TableMarks(tbl); err != nil {
						t.Fatal(err)
					}
					if lakeSum, err = rowsum.Table(ctx, tbl, walgen.Columns...); err != nil {
						t.Fatal(err)
					}
				} else if !errors.Is(err, catalog.ErrNoSuchTable) {
					t.Fatal(err)
				}
				time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
				bufSum, ans, err := bufferSum(bc, "events", reader.Query{After: marks})
				var ref *reader.RefusedError
				var se *reader.StatusError
				switch {
				case errors.As(err, &ref):
					if !marks.Get("pod-0").Less(ref.Marks.Get("pod-0")) {
						t.Fatalf("409 with marks %v, not past the reader's %v", ref.Marks, marks)
					}
					refused++
					continue
				case errors.As(err, &se) && se.Code == http.StatusServiceUnavailable:
					continue // the catalog is not open yet
				case err != nil:
					t.Fatal(err)
				}
				answered++
				if marks.Get("pod-0").Less(ans.Marks.Get("pod-0")) {
					raced++
				}
				lakeSum.Merge(bufSum)
				if lakeSum != w.Fingerprint {
					t.Fatalf("reader at %v, table at %v: lake + buffer %+v, walgen sealed %+v", marks, ans.Marks, lakeSum, w.Fingerprint)
				}
				if bufSum.Rows == 0 && lakeSum.Rows == w.Rows && answered > 3 {
					break // all committed
				}
			}
			t.Logf("%d rounds answered (%d with commits between the two reads), %d refused", answered, raced, refused)
			if answered < 3 {
				t.Fatalf("only %d rounds answered", answered)
			}
			if c.retain == "0s" && refused == 0 {
				t.Fatal("no round was refused: the race of a commit between the reads did not happen")
			}
			if c.retain != "0s" && raced == 0 {
				t.Fatal("no answered round had a commit between the reads")
			}
			m := rt.scrape()
			if c.retain == "0s" && !strings.Contains(string(m), `siglake_buffer_refusals_total{reason="drained"}`) {
				t.Fatalf("refusals not counted:\n%s", grepLines(string(m), "siglake_buffer_"))
			}
			rt.stop()
		})
	}
}

// TestTailOnTheDemo: `siglake demo` prints its WAL buffer and a `siglake tail` command line that
// works while it runs.
func TestTailOnTheDemo(t *testing.T) {
	dir := t.TempDir()
	demo := exec.Command(bin, "demo", "--dir", dir, "--duration", "20s", "--rate", "2000")
	stdout, err := demo.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = demo.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = demo.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			_ = demo.Process.Kill()
		}
	}()
	sc := bufio.NewScanner(stdout)
	var hint string
	for sc.Scan() {
		if i := strings.Index(sc.Text(), "(try, while the demo runs: siglake tail"); i >= 0 {
			hint = strings.TrimSuffix(sc.Text()[i+len("(try, while the demo runs: siglake "):], ")")
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if hint == "" {
		t.Fatal("the demo printed no siglake tail command")
	}
	args := strings.Fields(strings.Replace(hint, "--follow", "-n 5 --columns timestamp,service", 1))
	time.Sleep(3 * time.Second) // some rows sealed, some committed
	cmd := exec.Command(bin, args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("siglake %s: %v", strings.Join(args, " "), err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 || !strings.Contains(lines[0], "service=") {
		t.Fatalf("siglake tail on the demo printed %q", out)
	}
	// And --follow keeps printing as segments are sealed (the demo seals one every 2 s per table).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, bin, append(strings.Fields(hint), "-n", "1", "--columns", "timestamp")...)
	var stderr strings.Builder
	follow.Stderr = &stderr
	pipe, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for fs := bufio.NewScanner(pipe); n < 1000 && fs.Scan(); n++ {
	}
	cancel()
	_ = follow.Wait()
	if n < 1000 {
		t.Fatalf("siglake tail --follow printed %d lines in 20 s of a 4,000 rows/s demo (stderr %q)", n, stderr.String())
	}
}

func sortedByTimestamp(lines []string) bool {
	for i := 1; i < len(lines); i++ {
		if strings.Fields(lines[i])[0] < strings.Fields(lines[i-1])[0] {
			return false
		}
	}
	return true
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestBufferNeedsAToken is promise 14 for the WAL buffer against the real binary: a buffer bound
// beyond loopback without credentials does not start (the error names the options); with a token
// file, `siglake tail` without the token fails with an error naming the option and prints no row,
// a curl without it gets 401 and is counted, and `siglake tail` with the token (flag or env)
// prints every row; a rotation of the file reaches the running sidecar: the removed token is
// refused, the new one read.
func TestBufferNeedsAToken(t *testing.T) {
	s := newSite(t)
	out := startFails(t, nil, "--wal-dir", s.wal, "--catalog", s.catalog, "--warehouse", s.warehouse, "--buffer-addr", fmt.Sprintf("0.0.0.0:%d", freePort(t)))
	mustContain(t, out, "--buffer-addr / SIGLAKE_BUFFER_ADDR", "--buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE", "--buffer-insecure-no-auth")

	const old, next = "e2e-old-token-0123456789", "e2e-new-token-9876543210"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	writeFile := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil { // as a Secret volume swaps
			t.Fatal(err)
		}
	}
	writeFile(tokens, old+"\n")
	oldFile, nextFile := filepath.Join(dir, "old"), filepath.Join(dir, "next")
	writeFile(oldFile, old+"\n")
	writeFile(nextFile, next+"\n")

	w := s.walgen("pod-0", 2000, 1)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r := s.start(nil, "--buffer-addr", addr, "--buffer-token-file", tokens, "--commit-batch-max-age-secs", "3600", "--commit-batch-target-mb", "1000")
	waitFor(t, 30*time.Second, "the WAL buffer", func() bool {
		_, ans, err := bufferSum(&reader.Client{Addr: addr, Token: old}, "events", reader.Query{})
		return err == nil && ans.Verified
	})
	resp, err := http.Get("http://" + addr + "/v1/buffer/events")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") || len(body) > 1000 {
		t.Fatalf("curl without a token: %d %v, %d bytes", resp.StatusCode, resp.Header, len(body))
	}

	tail := func(env []string, args ...string) (string, string, error) {
		cmd := exec.Command(bin, append([]string{"tail", "events", "--buffer", addr, "--catalog", s.catalog, "--warehouse", s.warehouse,
			"-n", "100000", "--since", "0", "--columns", "timestamp,service"}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}
	rows := func(out string) int { return len(strings.Split(strings.TrimSpace(out), "\n")) }
	if out, stderr, err := tail(nil); err == nil || strings.TrimSpace(out) != "" || !strings.Contains(stderr, "SIGLAKE_BUFFER_TOKEN_FILE") || !strings.Contains(stderr, "401") {
		t.Fatalf("siglake tail without a token: %v, %d bytes out, stderr %q", err, len(out), stderr)
	}
	if out, stderr, err := tail(nil, "--buffer-token-file", oldFile); err != nil || rows(out) != int(w.Rows) {
		t.Fatalf("siglake tail --buffer-token-file: %v, %d lines, walgen sealed %d; stderr %q", err, rows(out), w.Rows, stderr)
	}
	if out, stderr, err := tail([]string{"SIGLAKE_BUFFER_TOKEN_FILE=" + oldFile}); err != nil || rows(out) != int(w.Rows) {
		t.Fatalf("siglake tail with SIGLAKE_BUFFER_TOKEN_FILE: %v, %d lines; stderr %q", err, rows(out), stderr)
	}

	// Rotation without a restart: add the new token, then remove the old one.
	writeFile(tokens, next+"\n"+old+"\n")
	if out, stderr, err := tail(nil, "--buffer-token-file", nextFile); err != nil || rows(out) != int(w.Rows) {
		t.Fatalf("during the rotation, the new token: %v, %d lines; stderr %q", err, rows(out), stderr)
	}
	writeFile(tokens, next+"\n")
	if out, stderr, err := tail(nil, "--buffer-token-file", oldFile); err == nil || strings.TrimSpace(out) != "" || !strings.Contains(stderr, "was refused") {
		t.Fatalf("after the rotation, the old token: %v, %d bytes out, stderr %q", err, len(out), stderr)
	}
	if out, stderr, err := tail(nil, "--buffer-token-file", nextFile); err != nil || rows(out) != int(w.Rows) {
		t.Fatalf("after the rotation, the new token: %v, %d lines; stderr %q", err, rows(out), stderr)
	}
	m := r.scrape()
	if m.sum("siglake_buffer_unauthorized_total", `reason="missing"`) < 2 || m.sum("siglake_buffer_unauthorized_total", `reason="invalid"`) < 1 {
		t.Fatalf("the refusals are not counted:\n%s", grepLines(string(m), "siglake_buffer_unauthorized_total"))
	}
	r.stop()
}
