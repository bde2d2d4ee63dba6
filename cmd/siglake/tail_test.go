package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
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
