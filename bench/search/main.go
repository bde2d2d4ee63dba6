// Command search measures what `siglake search` reads for the typical queries (docs/search.md):
// bytes read over bytes of the rows returned, and requests, on a table before compaction, after
// compaction and with the search metadata ignored, with DuckDB beside it answering the same
// queries over the same live files (plain read_parquet with filters). Results: docs/benchmarks.md.
//
//	go run ./bench/search -dir "$(mktemp -d)" [-rows 2000000] [-runs 5]
//
// The work directory is emptied first.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/demo"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/search"
	"github.com/siglake/siglake/sidecar/search/output"
	"github.com/siglake/siglake/sidecar/walgen"
)

func main() {
	dir := flag.String("dir", "", "work directory (WAL and lakes are generated once and reused)")
	rows := flag.Int64("rows", 2_000_000, "rows of the events table")
	runs := flag.Int("runs", 5, "runs of each query; the median is reported")
	duckDir := flag.String("duckdb", "scripts/duckdb", "directory whose node_modules holds @duckdb/node-api")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "usage: search -dir DIR [-rows N] [-runs N]")
		os.Exit(2)
	}
	if err := run(context.Background(), *dir, *rows, *runs, *duckDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// start is the first row's time: 2,000,000 rows 40 ms apart end within the same day.
var start = time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)

const step = 40 * time.Millisecond

// run builds one lake and measures it in three states, one after the other: as the drain left
// it, after compaction, and with Puffin index sidecars. (A copied lake would not do: the SQLite
// catalog holds absolute metadata paths, so a copy's commits land in the original's directory.)
func run(ctx context.Context, dir string, rows int64, runs int, duckDir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	lakeDir, wal := filepath.Join(dir, "lake"), filepath.Join(dir, "wal")
	for _, d := range []string{lakeDir, wal} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	cfg, err := benchConfig(lakeDir, wal)
	if err != nil {
		return err
	}
	if err := ingest(ctx, cfg, wal, rows); err != nil {
		return err
	}
	fmt.Printf("%d events rows, %s apart from %s; %d runs each, medians; 2 cores shared with other work\n\n", rows, step, start.Format(time.RFC3339), runs)
	fmt.Println("| table | query | rows | search: files read / live | row groups read / considered | bytes read | requests | read amplification | time | metadata ignored: bytes read | requests | read amplification | time | DuckDB: bytes read | read calls | time |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, st := range []struct {
		name    string
		prepare func() error
	}{
		{"before compaction", func() error { return nil }},
		{"after compaction", func() error { return compact(ctx, cfg) }},
		{"after compaction + Puffin indexes", func() error { return rebuildIndexes(ctx, cfg) }},
	} {
		if err := st.prepare(); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		if err := measure(ctx, st.name, cfg, runs, duckDir); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}

func benchConfig(lakeDir, wal string) (config.Config, error) {
	return config.Load([]string{"--wal-dir", wal, "--catalog", "sqlite:" + filepath.Join(lakeDir, "catalog.db"),
		"--warehouse", filepath.Join(lakeDir, "warehouse")}, func(string) string { return "" })
}

// ingest writes the rows to the WAL and drains them with the real drain.
func ingest(ctx context.Context, cfg config.Config, wal string, rows int64) error {
	fmt.Fprintf(os.Stderr, "writing %d rows to the WAL\n", rows)
	if _, err := walgen.Run(ctx, walgen.RunOptions{WALDir: wal, Stream: "pod-0", Tables: []string{walgen.EventsTable}, Rows: rows,
		BatchRows: 2000, SegmentSize: 4 << 20, RollAge: time.Hour, Start: start, Step: step,
		Gen: walgen.Options{Seed: 1, LateFraction: 0.02, MaxLateness: 5 * time.Minute}}, nil); err != nil {
		return fmt.Errorf("walgen: %w", err)
	}
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	d := &drain.Drain{Cfg: sidecar.DrainConfig(cfg), Lake: l, Metrics: sidecar.NewMetrics().Drain, Log: zap.NewNop(), Now: time.Now,
		Publish: sidecar.NewStatus("bench", config.RoleAll, "bench", time.Now()), Mem: memory.DefaultAllocator, Retry: lake.DefaultRetry}
	fmt.Fprintln(os.Stderr, "draining")
	for {
		segs, err := localwal.Scan(wal)
		if err != nil {
			return err
		}
		if len(segs) == 0 {
			return nil
		}
		if _, err := d.Cycle(ctx, true); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
	}
}

// compact names trace_id in the table's index specification and runs maintenance passes until
// the planner rests.
func compact(ctx context.Context, cfg config.Config) error {
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return err
	}
	defer l.Close()
	if err := l.UpdateProperties(ctx, walgen.EventsTable, func(iceberg.Properties) (iceberg.Properties, []string) {
		return iceberg.Properties{lake.IndexColumnsProperty: "trace_id"}, nil
	}); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "compacting")
	return demo.Compact(ctx, os.Stderr, cfg, zap.NewNop())
}

// rebuildIndexes gives the live files the Puffin index sidecars of trace_id and service that
// SIGLAKE_INDEX_REBUILD would register after the rewrite (a streamed rewrite writes no footer
// index).
func rebuildIndexes(ctx context.Context, cfg config.Config) error {
	l, t, live, err := openEvents(ctx, cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	var paths []string
	for _, f := range live {
		paths = append(paths, f.Path)
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "building Puffin index sidecars")
	rb := &puffinidx.Rebuilder{Metrics: puffinidx.NewMetrics(nil), Log: zap.NewNop(), Mem: memory.DefaultAllocator}
	res, err := rb.Run(ctx, t, fsys.(icebergio.WriteFileIO), t.CurrentSnapshot().SnapshotID, paths, []string{"trace_id", "service"})
	if err == nil && res.Failures > 0 {
		err = fmt.Errorf("%d files failed to index", res.Failures)
	}
	return err
}

// openEvents opens the lake and its events table with the live files.
func openEvents(ctx context.Context, cfg config.Config) (*lake.Lake, *table.Table, []lake.File, error) {
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		return nil, nil, nil, err
	}
	t, err := l.LoadTable(ctx, walgen.EventsTable)
	var live []lake.File
	if err == nil {
		live, err = lake.LiveFiles(ctx, t)
	}
	if err != nil {
		l.Close()
		return nil, nil, nil, err
	}
	return l, t, live, nil
}

// query is one typical query for search and for DuckDB.
type query struct {
	name  string
	q     search.Query
	where string // DuckDB's WHERE over read_parquet
}

// queries picks the typical queries' values from the table (a trace id and a rare substring of
// rows inside their ranges).
func queries(ctx context.Context, t *table.Table, end time.Time) ([]query, error) {
	day := end.Truncate(24 * time.Hour)
	hour := end.Add(-time.Hour)
	five := end.Add(-5 * time.Minute)
	rfc := func(t time.Time) string { return t.Format(time.RFC3339Nano) }
	us := func(t time.Time) int64 { return t.UnixMicro() }
	// A trace id from the middle of the day, a URL path with an id from the middle of the hour.
	trace, err := valueAt(ctx, t, day.Add(12*time.Hour), "trace_id")
	if err != nil {
		return nil, err
	}
	raw, err := valueAt(ctx, t, hour.Add(30*time.Minute), "raw")
	if err != nil {
		return nil, err
	}
	sub := regexp.MustCompile(`/[a-z0-9/.]+/[0-9]+ `).FindString(raw)
	if sub == "" {
		return nil, fmt.Errorf("no path with an id in %q", raw)
	}
	dayWhere := fmt.Sprintf("epoch_us(timestamp) >= %d AND epoch_us(timestamp) < %d", us(day), us(day.Add(24*time.Hour)))
	return []query{
		{"last 5 minutes, newest 100", search.Query{From: rfc(five), Desc: true, Limit: 100}, fmt.Sprintf("epoch_us(timestamp) >= %d", us(five))},
		{"a trace id over a day", search.Query{From: rfc(day), To: rfc(day.Add(24 * time.Hour)), Where: []rows.Condition{{Column: "trace_id", Values: []string{trace}}}},
			dayWhere + " AND trace_id = " + sqlString(trace)},
		{"a substring over an hour", search.Query{From: rfc(hour), Contains: &sub}, fmt.Sprintf("epoch_us(timestamp) >= %d AND contains(raw, %s)", us(hour), sqlString(sub))},
		{"a service over a day, first 1000", search.Query{From: rfc(day), To: rfc(day.Add(24 * time.Hour)), Limit: 1000,
			Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}}, dayWhere + " AND service = 'billing'"},
	}, nil
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// valueAt returns column's first non-null value at or after at, through search itself.
func valueAt(ctx context.Context, t *table.Table, at time.Time, column string) (string, error) {
	var v string
	_, err := search.Run(ctx, t, search.Query{From: at.Format(time.RFC3339Nano), Limit: 200, Columns: []string{column}}, search.Options{},
		func(rec arrow.RecordBatch, i int) (int64, error) {
			c := rec.Column(rec.Schema().FieldIndices(column)[0]).(*array.String)
			if v == "" && !c.IsNull(i) {
				v = c.Value(i)
			}
			return 0, nil
		})
	if err == nil && v == "" {
		err = fmt.Errorf("no %s value after %s", column, at)
	}
	return v, err
}

type duckResult struct {
	Seconds   float64 `json:"seconds"`
	Rows      int     `json:"rows"`
	ReadBytes int64   `json:"read_bytes"`
	ReadCalls int64   `json:"read_calls"`
}

func measure(ctx context.Context, name string, cfg config.Config, runs int, duckDir string) error {
	l, t, live, err := openEvents(ctx, cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	var files []string
	var end int64
	for _, f := range live {
		files = append(files, strings.TrimPrefix(f.Path, "file://"))
		end = max(end, f.MaxTime)
	}
	sort.Strings(files)
	qs, err := queries(ctx, t, time.UnixMicro(end).UTC().Add(time.Microsecond))
	if err != nil {
		return err
	}
	list := make([]string, len(files))
	for i, f := range files {
		list[i] = sqlString(f)
	}
	for _, q := range qs {
		cols, err := search.Columns(t, q.q, search.Options{})
		if err != nil {
			return err
		}
		var exs [2]*search.Explain
		var secs [2]float64
		for v, skip := range []bool{false, true} {
			var times []float64
			for r := 0; r < runs; r++ {
				w, _ := output.NewWriter(io.Discard, "csv", cols)
				t0 := time.Now()
				ex, err := search.Run(ctx, t, q.q, search.Options{SkipMetadata: skip}, w.Row)
				if err != nil {
					return fmt.Errorf("%s: %w", q.name, err)
				}
				times = append(times, time.Since(t0).Seconds())
				exs[v] = ex
			}
			secs[v] = median(times)
		}
		if exs[0].RowsReturned != exs[1].RowsReturned {
			return fmt.Errorf("%s: %d rows with metadata, %d without", q.name, exs[0].RowsReturned, exs[1].RowsReturned)
		}
		dir, limit := "", ""
		if q.q.Desc {
			dir = " DESC"
		}
		if q.q.Limit > 0 {
			limit = fmt.Sprintf(" LIMIT %d", q.q.Limit)
		}
		sql := fmt.Sprintf("SELECT * FROM read_parquet([%s], filename = true, file_row_number = true) WHERE %s ORDER BY timestamp%s, filename%s, file_row_number%s%s",
			strings.Join(list, ","), q.where, dir, dir, dir, limit)
		var duck []duckResult
		for r := 0; r < runs; r++ {
			out, err := exec.Command("node", "bench/search/duckdb_query.mjs", duckDir, sql).Output()
			if err != nil {
				return fmt.Errorf("%s: DuckDB: %w", q.name, err)
			}
			var d duckResult
			if err := json.Unmarshal(out, &d); err != nil {
				return fmt.Errorf("%s: DuckDB output %q: %w", q.name, out, err)
			}
			duck = append(duck, d)
		}
		sort.Slice(duck, func(i, j int) bool { return duck[i].Seconds < duck[j].Seconds })
		d := duck[len(duck)/2]
		if int64(d.Rows) != exs[0].RowsReturned {
			return fmt.Errorf("%s: search returned %d rows, DuckDB %d", q.name, exs[0].RowsReturned, d.Rows)
		}
		e, b := exs[0], exs[1]
		fmt.Printf("| %s | %s | %d | %d / %d | %d / %d | %s | %d | %.0f | %.3f s | %s | %d | %.0f | %.3f s | %s | %d | %.3f s |\n",
			name, q.name, e.RowsReturned, e.Files.Read, e.Files.Considered, e.RowGroups.Read, e.RowGroups.Considered,
			mib(e.BytesRead()), e.Requests(), e.Amplification(), secs[0],
			mib(b.BytesRead()), b.Requests(), b.Amplification(), secs[1], mib(d.ReadBytes), d.ReadCalls, d.Seconds)
	}
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }

func median(v []float64) float64 {
	sort.Float64s(v)
	return v[len(v)/2]
}
