package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Duck runs DuckDB (scripts/duckdb/check.mjs under node) as an independent reader.
type Duck struct {
	t      testing.TB
	node   string
	script string
}

// DuckDB returns the DuckDB checker, or skips (fails under CI) when node or the
// installed npm package is missing (scripts/duckdb.sh install).
func DuckDB(t testing.TB) *Duck {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable(t, "DuckDB checker: node not on PATH")
		return nil
	}
	root := RepoRoot()
	if root == "" {
		t.Fatalf("repository root not found from the working directory")
	}
	dir := filepath.Join(root, "scripts", "duckdb")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@duckdb", "node-api")); err != nil {
		unavailable(t, "DuckDB checker: @duckdb/node-api not installed in scripts/duckdb (scripts/duckdb.sh install)")
		return nil
	}
	return &Duck{t: t, node: node, script: filepath.Join(dir, "check.mjs")}
}

// FileSummary is what DuckDB read from one Parquet file.
type FileSummary struct {
	Path string `json:"path"`
	Rows int64  `json:"rows"`
	// MinText and MaxText are the summary column's extremes as DuckDB prints them
	// (timestamps as microseconds since the epoch); empty when the file has no rows
	// or no such column.
	MinText   string `json:"min"`
	MaxText   string `json:"max"`
	HasColumn bool   `json:"hasColumn"`
}

// Min parses MinText as an integer (microseconds for a timestamp column).
func (f FileSummary) Min() (int64, error) { return strconv.ParseInt(f.MinText, 10, 64) }

// Max parses MaxText as an integer (microseconds for a timestamp column).
func (f FileSummary) Max() (int64, error) { return strconv.ParseInt(f.MaxText, 10, 64) }

// Summary is DuckDB's view of a set of Parquet files.
type Summary struct {
	Column          string        `json:"column"`
	Files           []FileSummary `json:"files"`
	Rows            int64         `json:"rows"`
	Checksum        uint64        `json:"checksum,string"`
	ChecksumColumns []string      `json:"checksumColumns"`
}

// SummaryOptions choose the min/max column (default "timestamp") and the checksum
// columns (default all, in file order; NoChecksum skips it).
type SummaryOptions struct {
	Column          string
	ChecksumColumns []string
	NoChecksum      bool
}

// Summarize reads files (local paths) with DuckDB: rows and timestamp bounds per file,
// total rows and the row checksum over all columns (compare with RowChecksum).
func (d *Duck) Summarize(files []string) Summary {
	d.t.Helper()
	return d.SummarizeWith(files, SummaryOptions{})
}

// SummarizeWith is Summarize with options.
func (d *Duck) SummarizeWith(files []string, o SummaryOptions) Summary {
	d.t.Helper()
	args := []string{"summarize"}
	if o.Column != "" {
		args = append(args, "--column", o.Column)
	}
	switch {
	case o.NoChecksum:
		args = append(args, "--no-checksum")
	case len(o.ChecksumColumns) > 0:
		args = append(args, "--checksum", strings.Join(o.ChecksumColumns, ","))
	}
	if files == nil {
		files = []string{}
	}
	in, err := json.Marshal(files)
	if err != nil {
		d.t.Fatalf("encode file list: %v", err)
	}
	var s Summary
	if err := json.Unmarshal(d.run(in, args...), &s); err != nil {
		d.t.Fatalf("decode DuckDB summary: %v", err)
	}
	return s
}

// Query runs sql in an in-memory DuckDB and returns its rows. Values follow DuckDB's
// JSON conversion: BIGINT, HUGEINT and DECIMAL arrive as strings, timestamps as text,
// other numbers as json.Number.
func (d *Duck) Query(sql string) []map[string]any {
	d.t.Helper()
	dec := json.NewDecoder(bytes.NewReader(d.run(nil, "query", sql)))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		d.t.Fatalf("decode DuckDB rows: %v", err)
	}
	return rows
}

func (d *Duck) run(stdin []byte, args ...string) []byte {
	d.t.Helper()
	out, err := d.exec(stdin, args...)
	if err != nil {
		d.t.Fatalf("%v", err)
	}
	return out
}

func (d *Duck) exec(stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.node, append([]string{d.script}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("duckdb check.mjs %s: %v: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
