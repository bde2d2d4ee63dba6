package e2e

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/rowsum"
)

// holdSQLiteWriteLock takes the write lock of the SQLite catalog at path from another connection
// (a tool left open, a writer stuck mid-transaction) and returns its release.
func holdSQLiteWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
			t.Error(err)
		}
		conn.Close()
		db.Close()
	}
	t.Cleanup(release)
	return release
}

// warehouseFiles lists every object under the site's (local) warehouse.
func warehouseFiles(t *testing.T, root string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			out[p] = true
		}
		return nil
	})
	return out
}

// TestGCAgainstHeldCommit: the drain commits while another connection holds the SQLite catalog's
// write lock. The commit is abandoned at --commit-timeout (logged, counted, the catalog shown as
// not writable, /readyz not ready) and its files stay. `siglake gc --older-than 3s --apply` is
// refused, naming the floor; with the floor lowered explicitly to a value above the objects' age
// gc removes nothing; a dry run with the floor lowered below their age shows what the refused gc
// would have deleted. Once the lock is gone the table loads and holds every row exactly once.
func TestGCAgainstHeldCommit(t *testing.T) {
	s := newSite(t)
	catalogPath := strings.TrimPrefix(s.catalog, "sqlite:")
	first := s.walgen("pod-0", 2000, 1)
	lines := make(chan string, 4096)
	r := s.start(lines, "--commit-timeout", "2s")
	r.waitDrained(time.Minute)

	release := holdSQLiteWriteLock(t, catalogPath)
	before := warehouseFiles(t, s.warehouse)
	second := s.walgen("pod-0", 20000, 2)
	waitFor(t, time.Minute, "a commit abandoned at --commit-timeout", func() bool {
		return r.scrape().sum("siglake_catalog_commit_timeouts_total", `table="events"`) > 0
	})
	m := r.scrape()
	if m.sum("siglake_catalog_writable", "") != 0 || m.sum("siglake_catalog_commit_slow_total", `table="events"`) == 0 {
		t.Fatalf("held commit: writable %v, slow commits %v; want 0 and some",
			m.sum("siglake_catalog_writable", ""), m.sum("siglake_catalog_commit_slow_total", `table="events"`))
	}
	if code, body := r.get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "--commit-timeout") {
		t.Fatalf("/readyz %d %q while commits hang; want 503 naming --commit-timeout", code, body)
	}
	sawWarn := false
	for len(lines) > 0 && !sawWarn {
		l := <-lines
		sawWarn = strings.Contains(l, `"level":"warn"`) && strings.Contains(l, "catalog commit abandoned at its deadline") &&
			strings.Contains(l, `"table":"events"`) && strings.Contains(l, `"elapsed"`)
	}
	if !sawWarn {
		t.Error("no warn line with table and elapsed time for the abandoned commit")
	}
	pending := map[string]bool{}
	for p := range warehouseFiles(t, s.warehouse) {
		if !before[p] {
			pending[p] = true
		}
	}
	if len(pending) == 0 {
		t.Fatal("the held commit left no files: nothing for gc to threaten")
	}
	time.Sleep(1500 * time.Millisecond) // every pending object older than 1 s

	gcCmd := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append([]string{"gc", "--catalog", s.catalog, "--warehouse", s.warehouse}, args...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := gcCmd("--older-than", "3s", "--apply")
	if err == nil || !strings.Contains(out, "below gc's floor of 1d") || !strings.Contains(out, "--min-age-floor") {
		t.Fatalf("gc --older-than 3s --apply: %v\n%s\nwant a refusal naming the floor and --min-age-floor", err, out)
	}
	if out, err := gcCmd("--commit-timeout", "2s", "--min-age-floor", "30s", "--older-than", "3s"); err == nil || !strings.Contains(out, "--older-than 3s is below gc's floor of 30s") {
		t.Fatalf("gc below a lowered floor: %v\n%s", err, out)
	}
	if out, err := gcCmd("--commit-timeout", "2s", "--min-age-floor", "10s", "--older-than", "10s"); err == nil || !strings.Contains(out, "--min-age-floor 10s is below 24s") {
		t.Fatalf("gc with a floor under 12 x --commit-timeout: %v\n%s", err, out)
	}
	// What the floor prevents: with the floor lowered below their age the dry run lists the
	// held commit's objects as orphans, and --apply would have deleted them.
	out, err = gcCmd("--commit-timeout", "1ms", "--min-age-floor", "12ms", "--older-than", "1s")
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	listed := 0
	for p := range pending {
		if strings.Contains(out, p) {
			listed++
		}
	}
	if listed == 0 {
		t.Fatalf("the dry run with a 1s limit lists none of the held commit's %d objects:\n%s", len(pending), out)
	}
	out, err = gcCmd("--commit-timeout", "2s", "--min-age-floor", "1m", "--older-than", "1m", "--apply")
	if err != nil || !strings.Contains(out, "deleted 0 objects") {
		t.Fatalf("gc above the objects' age: %v\n%s", err, out)
	}
	for p := range pending {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("gc removed %s of the held commit: %v", p, err)
		}
	}
	t.Logf("held commit: %d objects written, %d listed by a 1s dry run, none removed with the floor", len(pending), listed)

	release()
	r.waitDrained(2 * time.Minute)
	waitFor(t, time.Minute, "the catalog to be writable again", func() bool {
		code, _ := r.get("/readyz")
		return r.scrape().sum("siglake_catalog_writable", "") == 1 && code == http.StatusOK
	})
	r.stop()
	var want rowsum.Sum
	want.Merge(first.Fingerprint)
	want.Merge(second.Fingerprint)
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table %d rows (sum %d), want %d rows (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
}
