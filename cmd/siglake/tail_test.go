package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/config"
)

// TestTailReadsLikeSearch: tail reads the lake as `search --order desc --limit N` does, opening
// files newest first and only until it has N rows, where it scanned every file of --since (the
// whole table with --since 0). The older file of two is removed from the warehouse: a read that
// opened it would fail. Its rows are the newest rows search prints.
func TestTailReadsLikeSearch(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal")
	cat, wh := demoLake(dir)
	now := time.Now().UTC().Truncate(time.Second)
	var files []string
	for _, start := range []time.Time{now.Add(-3 * time.Hour), now.Add(-time.Hour)} {
		if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "2000", "--tables", "events", "--late-fraction", "0",
			"--start", start.Format(time.RFC3339), "--roll-age", "100ms"); r.code != 0 {
			t.Fatalf("walgen: exit %d\n%s", r.code, r.stderr)
		}
		if r := siglake(t, "compactor", "--once", "--wal-dir", wal, "--catalog", cat, "--warehouse", wh, "--http-addr", "127.0.0.1:0"); r.code != 0 {
			t.Fatalf("compactor --once: exit %d\n%s", r.code, r.stderr)
		}
		files = append(files, newParquet(t, wh, files))
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	tail := siglake(t, "tail", "events", "--dir", dir, "--buffer", "none", "--since", "0", "-n", "5", "--columns", "severity")
	if tail.code != 0 {
		t.Fatalf("tail with the older file gone: exit %d\n%s", tail.code, tail.stderr)
	}
	search := siglake(t, "search", "events", "--dir", dir, "--order", "desc", "--limit", "5", "--columns", "severity", "--format", "csv")
	if search.code != 0 {
		t.Fatalf("search: exit %d\n%s", search.code, search.stderr)
	}
	var got, want []string
	for _, l := range strings.Split(strings.TrimSpace(tail.stdout), "\n") {
		got = append(got, strings.Fields(l)[0])
	}
	for _, l := range strings.Split(strings.TrimSpace(search.stdout), "\n")[1:] {
		ts, _, _ := strings.Cut(l, ",")
		want = append(want, ts)
	}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("tail's timestamps %v, search's newest %v\ntail:\n%s\nsearch:\n%s", got, want, tail.stdout, search.stdout)
	}
}

// newParquet is the one data file under the warehouse that is not in seen.
func newParquet(t *testing.T, wh string, seen []string) string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(wh, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") && !strings.Contains(p, "/metadata/") {
			for _, s := range seen {
				if s == p {
					return nil
				}
			}
			found = append(found, p)
		}
		return err
	})
	if err != nil || len(found) != 1 {
		t.Fatalf("new data files under the warehouse: %v %v", found, err)
	}
	return found[0]
}

// TestTailUnknownTable: tail of a table the catalog does not have fails and lists the tables,
// whether or not a WAL buffer is asked too (none answers here).
func TestTailUnknownTable(t *testing.T) {
	dir := demoLakeDir(t)
	for _, buf := range []string{"none", "127.0.0.1:1"} {
		r := siglake(t, "tail", "nosuch", "--dir", dir, "--buffer", buf)
		if r.code == 0 || !strings.Contains(r.stderr, "nosuch") || !strings.Contains(r.stderr, "has: audit, events") {
			t.Errorf("tail nosuch --buffer %s: exit %d\nstdout:\n%s\nstderr:\n%s", buf, r.code, r.stdout, r.stderr)
		}
		// No buffer answered: the unknown-table error alone, without warnings about the buffer.
		if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) != 1 {
			t.Errorf("tail nosuch --buffer %s: stderr is not the single error line:\n%s", buf, r.stderr)
		}
	}
}

// TestTailDefaultBufferAddr: without --buffer, tail dials the sidecar's own listener; a wildcard
// bind (the chart's 0.0.0.0) is dialled on loopback, the name an in-pod certificate carries.
func TestTailDefaultBufferAddr(t *testing.T) {
	for _, c := range []struct {
		addr, cert, want string
	}{
		{"", "", "127.0.0.1:9465"},
		{"0.0.0.0:9465", "/tls.crt", "https://127.0.0.1:9465"},
		{"0.0.0.0:9470", "", "127.0.0.1:9470"},
		{"[::]:9465", "/tls.crt", "https://127.0.0.1:9465"},
		{":9465", "", "127.0.0.1:9465"},
		{"127.0.0.1:9465", "/tls.crt", "https://127.0.0.1:9465"},
		{"[::1]:9465", "", "[::1]:9465"},
		{"10.0.0.7:9465", "", "10.0.0.7:9465"},
	} {
		cfg := config.Config{BufferAddr: c.addr, BufferTLSCertFile: c.cert}
		if got := defaultBufferAddr(cfg); got != c.want {
			t.Errorf("bind %q (cert %q): tail dials %q, want %q", c.addr, c.cert, got, c.want)
		}
	}
}

// TestTailWarnsAboutATokenOverPlainHTTP: tail says once, on stderr, that it sends its token in
// clear to a buffer beyond loopback; not over https, not to loopback, not without a token.
func TestTailWarnsAboutATokenOverPlainHTTP(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("tail-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := demoLakeDir(t)
	const warn = "sending the buffer token over plain HTTP"
	for _, c := range []struct {
		buf, token string
		want       bool
	}{
		{"192.0.2.1:1,http://192.0.2.2:1", tokens, true},
		{"127.0.0.1:1", tokens, false},
		{"https://192.0.2.1:1", tokens, false},
		{"192.0.2.1:1", "", false},
	} {
		args := []string{"tail", "events", "--dir", dir, "--buffer", c.buf, "-n", "1"}
		if c.token != "" {
			args = append(args, "--buffer-token-file", c.token)
		}
		r := siglake(t, args...)
		if n := strings.Count(r.stderr, warn); n != map[bool]int{true: 1, false: 0}[c.want] {
			t.Errorf("--buffer %s, token %v: the warning %d times, want it %v\nstderr:\n%s", c.buf, c.token != "", n, c.want, r.stderr)
		}
	}
}
