package e2e

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/objstore"
)

// TestBenchBackends measures, in one run, the drain and a rewrite on the embedded default (SQLite
// catalog, local warehouse) and on S3+PostgreSQL (versitygw, local PostgreSQL) with the same
// walgen input, and the commit rate of 4 and 16 concurrent drainers on one table. The numbers go
// to docs/benchmarks.md ("Backends"). Run with:
//
//	SIGLAKE_BENCH=1 go test ./test/e2e -run TestBenchBackends -v -timeout 30m
func TestBenchBackends(t *testing.T) {
	if os.Getenv("SIGLAKE_BENCH") != "1" {
		t.Skip("benchmark: set SIGLAKE_BENCH=1")
	}
	rows := 400000
	if v := os.Getenv("SIGLAKE_BENCH_ROWS"); v != "" {
		fmt.Sscan(v, &rows)
	}
	// One WAL, copied to each site, so both drain exactly the same segments.
	tmpl := newSite(t)
	gen := tmpl.walgen("pod-bench", rows, 7, "--batch-rows", "2000", "--segment-mb", "4")
	walBytes := dirBytes(t, tmpl.wal)
	t.Logf("input: %d rows in %d segments, %.1f MB of WAL", gen.Rows, gen.Segments, float64(walBytes)/1e6)

	for _, c := range []struct {
		name string
		site *site
	}{
		{"embedded (SQLite + local disk)", newSite(t)},
		{"S3 + PostgreSQL (versitygw + PostgreSQL)", newBackendSite(t, "", "")},
	} {
		s := c.site
		copyDir(t, tmpl.wal, s.wal)
		start := time.Now()
		p := s.start(nil, "--role", "drain", "--commit-batch-target-mb", "8", "--commit-batch-max-age-secs", "0")
		p.waitDrained(20 * time.Minute)
		secs := time.Since(start).Seconds()
		m := p.scrape()
		p.stop()
		if got := s.tableSum("events"); got.Rows != gen.Fingerprint.Rows || got.Sum != gen.Fingerprint.Sum {
			t.Fatalf("%s: table holds %d rows, walgen sealed %d", c.name, got.Rows, gen.Fingerprint.Rows)
		}
		t.Logf("drain %s: %.1f s, %.0f rows/s, %.1f MB/s of WAL, %.0f commits, %.1f MB Parquet; object store: %.0f requests (%.0f PUT, %.0f multipart), %.1f MB written, %.1f MB read",
			c.name, secs, float64(gen.Rows)/secs, float64(walBytes)/1e6/secs, m.sum("siglake_drain_commits_total", ""),
			m.sum("siglake_drain_bytes_total", "")/1e6, m.sum("siglake_objstore_requests_total", ""),
			m.sum("siglake_objstore_requests_total", `op="put"`), m.sum("siglake_objstore_requests_total", `op="multipart"`),
			m.sum("siglake_objstore_written_bytes_total", "")/1e6, m.sum("siglake_objstore_read_bytes_total", "")/1e6)
		benchRewrite(t, c.name, s)
	}

	for _, n := range []int{4, 16} {
		r := concurrentCommitters(t, n, 4000)
		t.Logf("concurrent drainers on one table: %s", r)
	}
}

// benchRewrite merges the live files of the table's largest partition on each merge path (the
// outputs are removed, not committed) and reports time and bytes read against the inputs' size;
// on S3 the bytes are the object store's own count (siglake_objstore_*).
func benchRewrite(t *testing.T, name string, s *site) {
	ctx := context.Background()
	tbl, files := s.table("events")
	byPart := map[string][]lake.File{}
	for _, f := range files {
		byPart[f.Partition] = append(byPart[f.Partition], f)
	}
	var part string
	for p, fs := range byPart {
		if len(fs) > len(byPart[part]) {
			part = p
		}
	}
	bin := byPart[part]
	sort.Slice(bin, func(i, j int) bool { return bin[i].Size > bin[j].Size })
	if len(bin) > merge.DefaultMaxFanIn {
		bin = bin[:merge.DefaultMaxFanIn]
	}
	var inputs []merge.Input
	var inBytes, inRows int64
	for _, f := range bin {
		inputs = append(inputs, merge.Input{Path: f.Path, Size: f.Size, Rows: f.Rows, Generation: f.Generation})
		inBytes += f.Size
		inRows += f.Rows
	}
	sc, err := lake.ArrowSchema(tbl)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs := fsys.(icebergio.WriteFileIO)
	for _, path := range []merge.PathKind{merge.PathInMemory, merge.PathKWay, merge.PathPageBounded} {
		before := objstore.CostOf("events")
		start := time.Now()
		res, err := merge.Rewrite(ctx, wfs, inputs, sc, func(int) string { return lake.DataDir(tbl, part) + "/" + merge.DataFileName(1) },
			merge.RewriteOptions{WriterOptions: merge.WriterOptions{TimestampColumn: lake.TimestampColumn}, ForcePath: path})
		if err != nil {
			t.Fatalf("%s rewrite on %s: %v", path, name, err)
		}
		secs := time.Since(start).Seconds()
		cost := objstore.CostOf("events").Sub(before)
		var outRows int64
		for _, o := range res.Outputs {
			outRows += o.Rows
			_ = fsys.Remove(o.Path)
		}
		if outRows != inRows {
			t.Fatalf("%s rewrite: %d rows out of %d in", path, outRows, inRows)
		}
		tot := cost.Total()
		t.Logf("rewrite %s, %s: %d files, %d rows, %.1f MB in -> %.1f MB out in %.2f s (%.1f MB/s of input); merge read %.2fx the input; object store: %d GET + %d ranged GET, read %.2fx the input, %d requests in all",
			name, path, len(inputs), inRows, float64(inBytes)/1e6, float64(res.BytesWritten)/1e6, secs, float64(inBytes)/1e6/secs,
			float64(res.BytesRead)/float64(inBytes), cost[objstore.OpGet].Requests, cost[objstore.OpRangedGet].Requests,
			float64(tot.BytesRead)/float64(inBytes), tot.Requests)
	}
}

func dirBytes(t *testing.T, dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// copyDir copies a WAL directory (segments and the STREAM file) into dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.Create(target)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}
