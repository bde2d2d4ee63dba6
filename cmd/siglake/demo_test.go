package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDemoTwice: a second demo on the same directory starts fresh and says so (it compared the
// whole table with this run's rows and failed), reports the rate it achieved beside the one asked
// for, and lists the live files of every table it summarises, the rollup included. A directory
// with anything a demo does not write is refused, naming it and --dir, and left untouched.
func TestDemoTwice(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	args := []string{"demo", "--dir", dir, "--duration", "2s", "--rate", "2000", "--http-addr", "127.0.0.1:0"}
	for run := 1; run <= 2; run++ {
		r := siglake(t, args...)
		if r.code != 0 {
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", run, r.code, r.stdout, r.stderr)
		}
		fresh := strings.Contains(r.stdout, "removed them to start fresh")
		if fresh != (run == 2) {
			t.Fatalf("run %d: says it started fresh: %v\n%s", run, fresh, r.stdout)
		}
		if !regexp.MustCompile(`wrote \d+ rows/s into each table for [0-9.]+s \(asked for 2000 rows/s\)`).MatchString(r.stdout) {
			t.Fatalf("run %d: no achieved rate:\n%s", run, r.stdout)
		}
		for _, tbl := range []string{"events", "audit", "events_1m"} {
			b, err := os.ReadFile(filepath.Join(dir, tbl+".live-files.txt"))
			if err != nil || len(strings.TrimSpace(string(b))) == 0 {
				t.Fatalf("run %d: %s.live-files.txt: %v %q", run, tbl, err, b)
			}
			for _, p := range strings.Fields(string(b)) {
				if _, err := os.Stat(p); err != nil {
					t.Fatalf("run %d: %s lists %s: %v", run, tbl, p, err)
				}
			}
		}
		if !strings.Contains(r.stdout, "events_1m.live-files.txt") {
			t.Fatalf("run %d: the rollup's DuckDB check is not printed:\n%s", run, r.stdout)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := siglake(t, args...)
	if r.code == 0 || !strings.Contains(r.stderr, "--dir "+dir) || !strings.Contains(r.stderr, "notes.txt") || !strings.Contains(r.stderr, "give another with --dir") {
		t.Fatalf("a directory with foreign entries: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "catalog.db")); err != nil {
		t.Fatalf("the refused directory lost the earlier demo: %v", err)
	}
}

// TestDemoRefusesUnstampedLake: a directory laid out like the demo's (wal, warehouse, catalog.db:
// also the binary's defaults for a real single-node lake) but without the demo's stamp is refused,
// naming --dir, and left intact; the demo used to clear it by its names alone.
func TestDemoRefusesUnstampedLake(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "lake")
	for _, d := range []string{"wal", "warehouse/db/events"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"catalog.db": "a real catalog", "warehouse/db/events/data.parquet": "rows", "wal/00000001.seg": "segment"}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := siglake(t, "demo", "--dir", dir, "--duration", "2s", "--rate", "100", "--http-addr", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.stderr, "--dir "+dir) || !strings.Contains(r.stderr, ".siglake-demo") {
		t.Fatalf("an unstamped lake: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for name, body := range files {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != body {
			t.Fatalf("the refused directory lost %s: %v %q", name, err, b)
		}
	}
}
