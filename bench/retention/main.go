// Command retention measures retention (docs/benchmarks.md "Retention"):
//
//	retention drop -dir DIR [-days 40] [-files-per-day 250] [-keep 10]
//	    a table of days x files-per-day small live files; one retention run with a period of
//	    `keep` days drops the older days: its time, catalog calls and object-store requests.
//	    With SIGLAKE_TEST_POSTGRES_DSN and SIGLAKE_TEST_S3_* set it runs on PostgreSQL + S3.
//	retention rewrite -dir DIR -mode retention|kway [-rows 2000000]
//	    one day in one data file (made once); retention with a rule that expires the day's debug
//	    rows rewrites it without them, or the k-way merge rewrites all of it: seconds and MB/s
//	    (run it under /usr/bin/time -v for the peak RSS).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/objstore"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

const day = 24 * time.Hour

// base is the start of the benchmark's first day.
var base = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: retention drop|rewrite -dir DIR ...")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "work directory")
	days := fs.Int("days", 40, "drop: days of data")
	perDay := fs.Int("files-per-day", 250, "drop: live files per day")
	keep := fs.Int("keep", 10, "drop: the retention period in days")
	mode := fs.String("mode", "retention", "rewrite: retention or kway")
	rows := fs.Int("rows", 2_000_000, "rewrite: rows of the day's file")
	_ = fs.Parse(os.Args[2:])
	var err error
	switch os.Args[1] {
	case "drop":
		err = drop(*dir, *days, *perDay, *keep)
	case "rewrite":
		err = rewriteOne(*dir, *mode, *rows)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// counting counts a catalog's table loads and commits.
type counting struct {
	catalog.Catalog
	loads, commits atomic.Int64
}

func (c *counting) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	c.loads.Add(1)
	t, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), t.FS, c), nil
}

func (c *counting) CommitTable(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	c.commits.Add(1)
	return c.Catalog.CommitTable(ctx, id, reqs, ups)
}

func openLake(ctx context.Context, dir string) (*lake.Lake, string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	ns := "bench_" + hex.EncodeToString(b[:])
	cfg := lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse"), Namespace: ns}
	backend := "sqlite + local"
	if dsn, ep := os.Getenv("SIGLAKE_TEST_POSTGRES_DSN"), os.Getenv("SIGLAKE_TEST_S3_ENDPOINT"); dsn != "" && ep != "" {
		cfg.Catalog, cfg.Warehouse = dsn, "s3://"+os.Getenv("SIGLAKE_TEST_S3_BUCKET")+"/bench/"+ns
		cfg.S3Endpoint, cfg.S3Region, cfg.S3PathStyle = ep, os.Getenv("SIGLAKE_TEST_S3_REGION"), true
		cfg.S3AccessKey, cfg.S3SecretKey = os.Getenv("SIGLAKE_TEST_S3_ACCESS_KEY"), os.Getenv("SIGLAKE_TEST_S3_SECRET_KEY")
		backend = "PostgreSQL + S3 (versitygw)"
	}
	l, err := lake.Open(ctx, cfg)
	return l, backend, err
}

func writeFS(ctx context.Context, t *table.Table) (icebergio.WriteFileIO, error) {
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, err
	}
	return fsys.(icebergio.WriteFileIO), nil
}

func metadata(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }

func drop(dir string, days, perDay, keep int) error {
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	l, backend, err := openLake(ctx, dir)
	if err != nil {
		return err
	}
	defer l.Close()
	t, err := l.EnsureTable(ctx, "events", walgen.EventsSchema)
	if err != nil {
		return err
	}
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return err
	}
	g := walgen.New(walgen.Options{Seed: 1})
	start := time.Now()
	for d := 0; d < days; d++ {
		wfs, err := writeFS(ctx, t)
		if err != nil {
			return err
		}
		var outs []merge.Output
		for f := 0; f < perDay; f++ {
			at := base.Add(time.Duration(d)*day + time.Duration(f)*(day/time.Duration(perDay)))
			rec := g.Batch(memory.DefaultAllocator, at, 20, time.Second)
			c, err := input.Conform(rec, sc, memory.DefaultAllocator)
			rec.Release()
			if err != nil {
				return err
			}
			o, err := writer.WriteSorted(ctx, wfs, func(int) string {
				return lake.DataDir(t, at.Format("2006-01-02")) + "/" + merge.DataFileName(0)
			}, sc, []arrow.RecordBatch{c}, merge.WriterOptions{TimestampColumn: lake.TimestampColumn, Metadata: metadata(t)})
			c.Release()
			if err != nil {
				return err
			}
			outs = append(outs, o...)
		}
		files, err := lake.DataFiles(t, outs)
		if err != nil {
			return err
		}
		txn := t.NewTransaction()
		if err := txn.AddDataFiles(ctx, files, nil, table.WithoutDuplicateCheck()); err != nil {
			return err
		}
		if t, err = txn.Commit(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "built %d live files over %d days in %s\n", days*perDay, days, time.Since(start).Round(time.Second))
	if _, err := retention.Set(ctx, l, "events", retention.Policy{Period: fmt.Sprintf("%dd", keep)}); err != nil {
		return err
	}
	cc := &counting{}
	l.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { cc.Catalog = c; return cc })
	now := base.Add(time.Duration(days) * day) // the cutoff is the end of day days-keep
	r := &retention.Runner{Cfg: retention.Config{DeleteDelay: 2 * time.Hour, MaxFiles: 8, MaxBytes: 1 << 30, Metadata: metadata},
		Lake: l, Metrics: retention.NewMetrics(prometheus.NewRegistry()), Now: func() time.Time { return now },
		Rewriter: filtered.Rewriter{Executor: &rewrite.Executor{Lake: l, Now: time.Now}, RewriteMetrics: rewrite.NewMetrics(prometheus.NewRegistry()), Log: zap.NewNop()}}
	cost0 := objstore.CostOf("events")
	t0 := time.Now()
	rep, err := r.Run(ctx, "events", retention.Options{Apply: true})
	took := time.Since(t0)
	if err != nil {
		return err
	}
	cost := objstore.CostOf("events").Sub(cost0)
	p := rep.Paths["partition"]
	if p == nil {
		return fmt.Errorf("nothing dropped: %+v", rep)
	}
	return json.NewEncoder(os.Stdout).Encode(map[string]any{
		"backend": backend, "live_files": days * perDay, "partitions_dropped": p.Files / perDay, "files_dropped": p.Files,
		"rows_dropped": p.Rows, "snapshots": len(rep.Snapshots), "run_seconds": took.Seconds(),
		"catalog_loads": cc.loads.Load(), "catalog_commits": cc.commits.Load(), "objstore": cost,
	})
}

const prepared = "prepared.json"

// prepare writes one day of rows into one data file of a fresh table in dir (namespace bench).
func prepare(dir string, rows int) error {
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	l, err := lake.Open(ctx, lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse"), Namespace: "bench"})
	if err != nil {
		return err
	}
	defer l.Close()
	t, err := l.EnsureTable(ctx, "events", walgen.EventsSchema)
	if err != nil {
		return err
	}
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return err
	}
	g := walgen.New(walgen.Options{Seed: 1})
	step := day / time.Duration(rows)
	var recs []arrow.RecordBatch
	for i := 0; i < rows; i += 10000 {
		rec := g.Batch(memory.DefaultAllocator, base.Add(time.Duration(i)*step), min(10000, rows-i), step)
		c, err := input.Conform(rec, sc, memory.DefaultAllocator)
		rec.Release()
		if err != nil {
			return err
		}
		recs = append(recs, c)
	}
	wfs, err := writeFS(ctx, t)
	if err != nil {
		return err
	}
	outs, err := writer.WriteSorted(ctx, wfs, func(int) string {
		return lake.DataDir(t, base.Format("2006-01-02")) + "/" + merge.DataFileName(0)
	}, sc, recs, merge.WriterOptions{TimestampColumn: lake.TimestampColumn, TargetFileBytes: 1 << 40, Metadata: metadata(t)})
	if err != nil {
		return err
	}
	files, err := lake.DataFiles(t, outs)
	if err != nil {
		return err
	}
	txn := t.NewTransaction()
	if err := txn.AddDataFiles(ctx, files, nil); err != nil {
		return err
	}
	if _, err := txn.Commit(ctx); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"rows": rows, "files": len(outs), "bytes": outs[0].Size})
	return os.WriteFile(filepath.Join(dir, prepared), b, 0o644)
}

// rewriteOne rewrites the prepared day's file: retention without its debug rows, or the
// k-way merge of all of it (what a level rewrite of the same bytes costs).
func rewriteOne(dir, mode string, n int) error {
	if _, err := os.Stat(filepath.Join(dir, prepared)); err != nil {
		return prepare(dir, n)
	}
	ctx := context.Background()
	l, err := lake.Open(ctx, lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse"), Namespace: "bench"})
	if err != nil {
		return err
	}
	defer l.Close()
	t, err := l.LoadTable(ctx, "events")
	if err != nil {
		return err
	}
	live, err := lake.LiveFiles(ctx, t)
	if err != nil || len(live) != 1 {
		return fmt.Errorf("want one live file, have %d (%v): restore the prepared copy", len(live), err)
	}
	f := live[0]
	reg := prometheus.NewRegistry()
	start := time.Now()
	var path string
	var written int64
	switch mode {
	case "retention":
		// A rule drops the day's debug rows (a tenth of walgen's), spread through the file, as a
		// `severity=debug:1d` rule does on a table kept longer.
		if _, err := retention.Set(ctx, l, "events", retention.Policy{Period: "0",
			Rules: []retention.Rule{{Where: []rows.Condition{{Column: "severity", Values: []string{"debug"}}}, Period: "1d"}}}); err != nil {
			return err
		}
		now := base.Add(60 * time.Hour) // the rule's cutoff is the end of the day
		r := &retention.Runner{Cfg: retention.Config{DeleteDelay: 2 * time.Hour, MaxFiles: 8, MaxBytes: 1 << 40, Metadata: metadata},
			Lake: l, Metrics: retention.NewMetrics(reg), Now: func() time.Time { return now },
			Rewriter: filtered.Rewriter{Executor: &rewrite.Executor{Lake: l, Now: time.Now}, RewriteMetrics: rewrite.NewMetrics(reg), Log: zap.NewNop()}}
		start = time.Now()
		rep, err := r.Run(ctx, "events", retention.Options{Apply: true})
		if err != nil {
			return err
		}
		if c := rep.Paths["rewrite"]; c == nil || c.Files != 1 {
			return fmt.Errorf("retention did not rewrite the file: %+v", rep.Picks)
		}
		path = "retention (" + rep.Picks[0].Result + ")"
	case "kway":
		sc, err := lake.ArrowSchema(t)
		if err != nil {
			return err
		}
		wfs, err := writeFS(ctx, t)
		if err != nil {
			return err
		}
		res, err := merge.Rewrite(ctx, wfs, []merge.Input{{Path: f.Path, Size: f.Size, Rows: f.Rows, Generation: f.Generation}}, sc,
			func(int) string { return f.Path[:strings.LastIndex(f.Path, "/")] + "/" + merge.DataFileName(1) },
			merge.RewriteOptions{WriterOptions: merge.WriterOptions{TimestampColumn: lake.TimestampColumn, TargetFileBytes: 1 << 40, Metadata: metadata(t)},
				ForcePath: merge.PathKWay})
		if err != nil {
			return err
		}
		path, written = string(res.Path), res.BytesWritten
	default:
		return fmt.Errorf("-mode %q: accepted: retention, kway", mode)
	}
	took := time.Since(start)
	return json.NewEncoder(os.Stdout).Encode(map[string]any{"mode": mode, "path": path, "input_bytes": f.Size, "input_rows": f.Rows,
		"written_bytes": written, "seconds": took.Seconds(), "mb_per_s": float64(f.Size) / (1 << 20) / took.Seconds()})
}
