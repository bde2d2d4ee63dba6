package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// TestDemo keeps the README's first command true: the demo runs on the embedded default, drains,
// compacts and finds every sealed row in its table exactly once, and prints its DuckDB commands.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := Run(context.Background(), Options{Dir: t.TempDir(), Duration: 4 * time.Second, Rate: 5000}, &out, zap.NewNop())
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"EXACTLY ONCE", "running maintenance passes", "siglake inspect events", "siglake tail events --follow --buffer 127.0.0.1:", "rows after folding"} {
		if !strings.Contains(s, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, s)
		}
	}
	for _, name := range []string{walgen.EventsTable, "audit"} {
		if row := summaryRow(s, name); !strings.HasSuffix(row, " true") {
			t.Fatalf("table %s: summary row %q, want EXACTLY ONCE true:\n%s", name, row, s)
		}
	}
	printedDuckDBScript(t, s, "iceberg_scan(")
	printedDuckDBScript(t, s, "read_parquet(getvariable(")
}

// summaryRow is the demo summary's line for table (empty when there is none).
func summaryRow(out, table string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == table {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// TestDemoDuckDBHintCountsLiveRows runs the read_parquet command the demo's summary prints
// through DuckDB, on a demo-like table that a rewrite has compacted: it counts the table's rows,
// where the glob over the warehouse that the demo printed before counts the replaced files too.
func TestDemoDuckDBHintCountsLiveRows(t *testing.T) {
	dir := t.TempDir()
	cfg, err := demoConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CommitBatchTargetBytes = 0 // one commit, one file per segment
	ctx := context.Background()
	// Ten sealed segments of overlapping rows, as an ingest pod would leave them.
	w, err := walwriter.New(cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: 3, LateFraction: 0.05, MaxLateness: time.Minute})
	var want rowsum.Sum
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for i := 0; i < 10; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*500)*time.Millisecond), 500, time.Millisecond)
		if err := want.Add(rec, walgen.Columns...); err != nil {
			t.Fatal(err)
		}
		if err := w.Append(walgen.EventsTable, rec); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := &drain.Drain{Cfg: sidecar.DrainConfig(cfg), Lake: l, Metrics: sidecar.NewMetrics().Drain,
		Log: zap.NewNop(), Now: time.Now, Mem: memory.DefaultAllocator, Retry: lake.DefaultRetry}
	if _, err := d.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Compact(ctx, &out, cfg, zap.NewNop()); err != nil {
		t.Fatal(err)
	}
	if err := demoSummary(ctx, &out, cfg, dir, []string{walgen.EventsTable}, map[string]*rowsum.Sum{walgen.EventsTable: &want}, map[string]int{}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	testDemoDuckDBHint(t, cfg, out.String())
}

// testDemoDuckDBHint runs the printed read_parquet command through DuckDB and checks it counts
// the events table's rows, where a glob over the warehouse counts the replaced files too.
func testDemoDuckDBHint(t *testing.T, cfg config.Config, out string) {
	iceberg, parquet := printedDuckDBScript(t, out, "iceberg_scan("), printedDuckDBScript(t, out, "read_parquet(getvariable(")
	ctx := context.Background()
	l, err := lake.Open(ctx, config.LakeConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tbl, err := l.LoadTable(ctx, walgen.EventsTable)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := rowsum.Table(ctx, tbl, walgen.Columns...)
	if err != nil {
		t.Fatal(err)
	}
	live, err := lake.LiveFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	// The iceberg variant names the current metadata file (the iceberg extension is not installed
	// here, so DuckDB does not run it).
	meta := localPath(tbl.MetadataLocation())
	if !strings.Contains(iceberg, sqlString(meta)) {
		t.Errorf("iceberg hint %q does not name the current metadata file %s", iceberg, meta)
	}
	if _, err := os.Stat(meta); err != nil {
		t.Errorf("current metadata file: %v", err)
	}

	duck := testenv.DuckDB(t)
	count := func(script string) uint64 {
		t.Helper()
		rows := duck.Query(script)
		if len(rows) != 1 || len(rows[0]) != 1 {
			t.Fatalf("%s: rows %v, want one count", script, rows)
		}
		for _, v := range rows[0] {
			n, err := strconv.ParseUint(fmt.Sprint(v), 10, 64)
			if err != nil {
				t.Fatalf("%s: count %v: %v", script, v, err)
			}
			return n
		}
		return 0
	}
	got := count(parquet)
	if int64(got) != sum.Rows {
		t.Errorf("the printed read_parquet command counts %d rows, the table holds %d (%d live files)", got, sum.Rows, len(live))
	}
	// The hint it replaces read every Parquet file under the table's data directory, including the
	// inputs of committed rewrites; the demo's maintenance passes leave some, so it counts more.
	files, _ := filepath.Glob(filepath.Join(cfg.Warehouse, "siglake.db", "events", "data", "*", "*.parquet"))
	old := count(fmt.Sprintf("SELECT count(*) FROM read_parquet(%s)", sqlString(filepath.Join(cfg.Warehouse, "siglake.db/events/data/*/*.parquet"))))
	if len(files) <= len(live) || int64(old) <= sum.Rows {
		t.Errorf("no replaced files (%d on disk, %d live; the glob counts %d rows, the table %d): the demo committed no rewrite of events", len(files), len(live), old, sum.Rows)
	}
	t.Logf("events: %d rows in %d live files; the old glob read %d rows from %d files", sum.Rows, len(live), old, len(files))
}

// printedDuckDBScript returns the script of the printed `duckdb -c "..."` line that contains marker.
func printedDuckDBScript(t *testing.T, out, marker string) string {
	t.Helper()
	unquote := strings.NewReplacer(`\\`, `\`, `\"`, `"`, `\$`, "$", "\\`", "`")
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, `duckdb -c "`); ok && strings.HasSuffix(rest, `"`) && strings.Contains(rest, marker) {
			return unquote.Replace(strings.TrimSuffix(rest, `"`))
		}
	}
	t.Fatalf("the demo prints no duckdb command with %q:\n%s", marker, out)
	return ""
}

// TestDemoKeepRunning: with KeepRunning the demo leaves a sidecar up on its lake after the
// summary, with its address printed and recorded for `siglake status --dir`, serving /metrics
// and /debug/status; cancelling stops it and removes the record. The timestamps of the rows
// the demo wrote are at or before the time they were written.
func TestDemoKeepRunning(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	began := time.Now()
	go func() {
		done <- Run(ctx, Options{Dir: dir, Duration: 2 * time.Second, Rate: 2000, KeepRunning: true, Version: "v-test", Revision: "abc"}, &out, zap.NewNop())
	}()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(out.String(), "Ctrl-C stops it") {
		select {
		case err := <-done:
			t.Fatalf("the demo returned before keeping a sidecar: %v\n%s", err, out.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no running sidecar after 90 s:\n%s", out.String())
		}
	}
	addr, err := RunningAddr(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "HTTP on "+addr) {
		t.Errorf("the recorded address %s is not the one printed:\n%s", addr, out.String())
	}
	body := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{`siglake_build_info{goversion="`, `revision="abc",version="v-test"} 1`, "siglake_drain_errors_total{stage=\"commit\"} 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics of the kept sidecar lacks %q", want)
		}
	}
	if st := httpGet(t, "http://"+addr+"/debug/status"); !strings.Contains(st, `"version": "v-test"`) {
		t.Errorf("/debug/status: %s", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("demo after cancel: %v", err)
	}
	if _, err := RunningAddr(dir); err == nil || !strings.Contains(err.Error(), "--keep-running") {
		t.Errorf("after the sidecar stopped: RunningAddr %v, want an error naming --keep-running", err)
	}

	// No row the demo wrote is from the future.
	cfg, err := demoConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lake.Open(context.Background(), config.LakeConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, name := range []string{walgen.EventsTable, "audit"} {
		tbl, err := l.LoadTable(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		files, err := lake.LiveFiles(context.Background(), tbl)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if maxT := time.UnixMicro(f.MaxTime); maxT.After(began.Add(10 * time.Second)) {
				t.Errorf("table %s file %s holds a row at %v, after the demo's load ended", name, f.Path, maxT)
			}
		}
	}
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// syncBuffer is a bytes.Buffer the demo writes to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
