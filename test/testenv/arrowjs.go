package testenv

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// ArrowAnswer is what Arrow JS read from a WAL buffer answer (scripts/duckdb/arrow-stream.mjs).
type ArrowAnswer struct {
	Status   int               `json:"status"`
	Error    string            `json:"error"`
	Rows     int64             `json:"rows"`
	Columns  []string          `json:"columns"`
	Metadata map[string]string `json:"metadata"`
	// Checksum is the row checksum (docs/testing.md) of the columns asked for.
	Checksum uint64 `json:"checksum,string"`
}

// ArrowJS GETs url and reads the answer with Arrow JS (the apache-arrow npm package), an Arrow
// IPC reader we did not write, fingerprinting columns (all when none). It skips (fails under CI)
// when node or the package is missing (scripts/duckdb.sh install).
func ArrowJS(t testing.TB, url string, columns ...string) ArrowAnswer {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "Arrow JS reader: node not on PATH")
		return ArrowAnswer{}
	}
	dir := filepath.Join(RepoRoot(), "scripts", "duckdb")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "apache-arrow")); err != nil {
		unavailable(t, "Arrow JS reader: apache-arrow not installed in scripts/duckdb (scripts/duckdb.sh install)")
		return ArrowAnswer{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{filepath.Join(dir, "arrow-stream.mjs"), url}
	if len(columns) > 0 {
		args = append(args, strings.Join(columns, ","))
	}
	cmd := exec.CommandContext(ctx, node, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("arrow-stream.mjs %s: %v\n%s", url, err, stderr.String())
	}
	var a ArrowAnswer
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatalf("decode arrow-stream.mjs output %q: %v", out, err)
	}
	return a
}
