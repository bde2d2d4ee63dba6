package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// demoLakeDir builds what `siglake demo --dir` leaves: WAL, embedded catalog and local warehouse
// under one directory, with two drained tables, through the real commands.
func demoLakeDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal")
	if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "4000", "--tables", "events,audit", "--roll-age", "100ms"); r.code != 0 {
		t.Fatalf("walgen: exit %d\n%s", r.code, r.stderr)
	}
	cat, wh := demoLake(dir)
	if r := siglake(t, "compactor", "--once", "--wal-dir", wal, "--catalog", cat, "--warehouse", wh, "--http-addr", "127.0.0.1:0"); r.code != 0 {
		t.Fatalf("compactor --once: exit %d\n%s", r.code, r.stderr)
	}
	return dir
}

// TestDirShortcut: the tools take --dir DIR (a demo directory) for its catalog and warehouse;
// inspect without a table lists the tables.
func TestDirShortcut(t *testing.T) {
	dir := demoLakeDir(t)
	r := siglake(t, "inspect", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("inspect --dir: exit %d\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"namespace siglake: 2 tables", "audit", "events", "TABLE", "FILES", "siglake inspect TABLE"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect --dir (the table list) lacks %q:\n%s", want, r.stdout)
		}
	}
	if !regexp.MustCompile(`(?m)^events\s+\d+\s+\d+\s+\S+ \S+\s+2000\s+1\s+\d+$`).MatchString(r.stdout) {
		t.Errorf("inspect --dir: no row for events with its 2000 rows:\n%s", r.stdout)
	}
	r = siglake(t, "inspect", "--dir", dir, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, `"table": "events"`) || !strings.Contains(r.stdout, `"rows": 2000`) {
		t.Errorf("inspect --dir --json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = siglake(t, "inspect", "events", "--dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "table siglake.events") || !strings.Contains(r.stdout, "partition ") {
		t.Errorf("inspect events --dir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The table after the flags, and the flag with =, work alike.
	if r := siglake(t, "inspect", "--dir="+dir, "events"); r.code != 0 || !strings.Contains(r.stdout, "table siglake.events") {
		t.Errorf("inspect --dir=DIR events: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := siglake(t, "gc", "--dir", dir); r.code != 0 || !strings.Contains(r.stdout, "table events:") {
		t.Errorf("gc --dir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// gc says which commit deadline it assumed (it cannot see the compactor's).
	if r := siglake(t, "gc", "--dir", dir, "--commit-timeout", "5m"); r.code != 0 || !strings.Contains(r.stdout, "assuming the compactor's --commit-timeout is 5m") || !strings.Contains(r.stdout, "the floor is at least 1h") {
		t.Errorf("gc --commit-timeout 5m: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = siglake(t, "delete-request", "--dir", dir, "--table", "events", "--where", "service=billing", "--reason", "test")
	if r.code != 0 || strings.TrimSpace(r.stdout) == "" {
		t.Fatalf("delete-request --dir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	if r := siglake(t, "delete-sweep", "--dir", dir); r.code != 0 || !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "waits its cancel period") {
		t.Errorf("delete-sweep --dir does not show request %s waiting: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	// delete-cancel takes the id after its flags and needs --table.
	if r := siglake(t, "delete-cancel", "--dir", dir, id); r.code != 2 || !strings.Contains(r.stderr, "--table TABLE ID") {
		t.Errorf("delete-cancel without --table: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := siglake(t, "delete-cancel", "--dir", dir, "--table", "events", id); r.code != 0 || !strings.Contains(r.stdout, "cancelled deletion request "+id) {
		t.Errorf("delete-cancel --dir: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// -h names the shortcut.
	for _, tool := range []string{"inspect", "gc", "delete-request", "delete-sweep", "delete-cancel", "status"} {
		if r := siglake(t, tool, "-h"); !strings.Contains(r.stdout, "-dir") {
			t.Errorf("%s -h does not list -dir:\n%s", tool, r.stdout)
		}
	}
	// --dir and --catalog say the same thing twice.
	r = siglake(t, "inspect", "--dir", dir, "--catalog", "sqlite:"+filepath.Join(dir, "catalog.db"))
	if r.code != 1 || !strings.Contains(r.stderr, "either --dir or --catalog") {
		t.Errorf("inspect --dir --catalog: exit %d, stderr %q", r.code, r.stderr)
	}
	// No sidecar runs on the directory: status says how to start one.
	r = siglake(t, "status", "--dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "--keep-running") {
		t.Errorf("status --dir without a running sidecar: exit %d, stderr %q", r.code, r.stderr)
	}
	r = siglake(t, "inspect", "--dir", filepath.Join(dir, "nope"))
	if r.code != 1 || !strings.Contains(r.stderr, "no such directory") {
		t.Errorf("inspect --dir MISSING: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMissingCatalog: a tool pointed at an embedded catalog that does not exist says what to
// pass, instead of SQLite's "unable to open database file (14)" or an empty catalog it creates.
func TestMissingCatalog(t *testing.T) {
	tmp := t.TempDir()
	for _, path := range []string{filepath.Join(tmp, "nodir", "catalog.db"), filepath.Join(tmp, "catalog.db")} {
		for _, args := range [][]string{
			{"inspect"}, {"inspect", "events"}, {"gc"}, {"delete-sweep"},
			{"delete-request", "--table", "events", "--where", "service=x"},
		} {
			r := siglake(t, append(args, "--catalog", "sqlite:"+path, "--warehouse", tmp)...)
			if r.code != 1 || !strings.Contains(r.stderr, "no such file") || !strings.Contains(r.stderr, "--dir") ||
				strings.Contains(r.stderr, "unable to open") || strings.Count(r.stderr, "\n") > 1 {
				t.Errorf("siglake %s with catalog %s: exit %d, stderr %q; want one line naming --dir", strings.Join(args, " "), path, r.code, r.stderr)
			}
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("a tool created the missing catalog %s", path)
		}
	}
	// The sidecar itself creates its embedded catalog: no refusal there.
	r := siglake(t, "compactor", "--once", "--wal-dir", tmp, "--catalog", "sqlite:"+filepath.Join(tmp, "new.db"), "--warehouse", tmp, "--http-addr", "127.0.0.1:0")
	if r.code != 0 {
		t.Errorf("compactor --once on a new embedded catalog: exit %d\n%s", r.code, r.stderr)
	}
}

// TestStartupErrorOnce: a sidecar that cannot start logs the reason once (no second, plain copy
// from main), and a console log written to a pipe has no colour codes.
func TestStartupErrorOnce(t *testing.T) {
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "no-such-wal")
	for _, format := range []string{"json", "console"} {
		r := siglake(t, "compactor", "--log-format", format, "--wal-dir", missing, "--catalog", "sqlite:"+filepath.Join(tmp, "c.db"),
			"--warehouse", tmp, "--http-addr", "127.0.0.1:0")
		if r.code != 1 {
			t.Fatalf("%s: exit %d, want 1\n%s", format, r.code, r.stderr)
		}
		if n := strings.Count(r.stderr, "accepted: an existing, readable directory"); n != 1 || strings.Contains(r.stderr, "runCompactor") {
			t.Errorf("%s: the error appears %d times on stderr (or with a stack trace), want once:\n%s", format, n, r.stderr)
		}
		if strings.Contains(r.stderr, "\x1b[") {
			t.Errorf("%s: colour codes in a log that is not on a terminal: %q", format, r.stderr)
		}
	}
}

// TestVersionVerbose: version -v adds the revision and the Go version; the first line is the
// version alone, as scripts read it.
func TestVersionVerbose(t *testing.T) {
	r := siglake(t, "version", "-v")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(lines) != 3 || lines[0] != buildVersion() || !strings.HasPrefix(lines[1], "revision ") || !strings.HasPrefix(lines[2], "go") {
		t.Fatalf("version -v: exit %d\n%s", r.code, r.stdout)
	}
	if v := buildVersion(); v == "(devel)" || v == "" {
		t.Fatalf("the version of an unstamped build is %q", v)
	}
}

// TestSearchRefusesFormatFirst: a bad --format is refused before the catalog is opened (here it
// does not exist, which would otherwise be the error).
func TestSearchRefusesFormatFirst(t *testing.T) {
	err := runSearch([]string{"events", "--dir", t.TempDir(), "--format", "xml"})
	if err == nil || !strings.Contains(err.Error(), `--format "xml": accepted: table, json, csv`) {
		t.Fatalf("got %v, want the --format error", err)
	}
}
