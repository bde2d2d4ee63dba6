// Package testenv gives tests the real services they run against: a PostgreSQL
// database, an S3 server (versitygw) and DuckDB as an independent Parquet reader,
// plus the row checksum that lets Go compare its rows with DuckDB's.
//
// Services are started by scripts/test-services.sh up (see docs/testing.md). A test
// finds them through SIGLAKE_TEST_* environment variables or, when those are unset,
// through the env files the scripts write under $SIGLAKE_TEST_STATE (default
// <repo>/.cache/testenv). A missing service skips the test with the command that
// starts it; with CI=true it fails the test instead, so CI never passes by skipping.
// The Iceberg REST catalog (REST, RESTCatalog: test/restcat) needs no script: it runs inside
// the test process on 127.0.0.1 and stops with the test.
package testenv

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// CI reports whether the environment says this is a CI run (CI=true or 1), where a
// missing service is a failure rather than a skip.
func CI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// unavailable skips the test, or fails it under CI, explaining how to start the service.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true and a required test service is unavailable: "+format, args...)
	}
	t.Skipf("test service unavailable (start it with scripts/test-services.sh up): "+format, args...)
}

var (
	rootOnce sync.Once
	rootDir  string
)

// RepoRoot returns the directory holding the module's go.mod, found by walking up from
// the working directory (go test runs in the package directory). Empty when not found.
func RepoRoot() string {
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			return
		}
		for {
			if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
				strings.Contains(string(b), "module github.com/siglake/siglake\n") {
				rootDir = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return
			}
			dir = parent
		}
	})
	return rootDir
}

// StateDir is where the service scripts keep their state and env files.
func StateDir() string {
	if d := os.Getenv("SIGLAKE_TEST_STATE"); d != "" {
		return d
	}
	if r := RepoRoot(); r != "" {
		return filepath.Join(r, ".cache", "testenv")
	}
	return ""
}

// lookup returns the named variable from the environment, else from the env files the
// service scripts write (lines of the form: export NAME='value').
func lookup(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	dir := StateDir()
	if dir == "" {
		return ""
	}
	for _, f := range []string{"postgres.env", "versitygw.env"} {
		if v := readEnvFile(filepath.Join(dir, f))[name]; v != "" {
			return v
		}
	}
	return ""
}

// readEnvFile parses the scripts' export lines. Values are single-quoted and never
// contain a quote (the scripts choose them), so no shell unquoting is needed.
func readEnvFile(path string) map[string]string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		out[k] = strings.Trim(v, "'\"")
	}
	return out
}
