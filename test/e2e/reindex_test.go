package e2e

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/puffinidx"
)

// TestIndexRebuildByRunningCompactor: with SIGLAKE_INDEX_REBUILD on and a merge budget small
// enough to stream every rewrite (no footer inverted index), the real binary's maintenance
// registers Puffin sidecars for the rewrite outputs, and every service value of a rewritten
// file is found at exactly its rows through them.
func TestIndexRebuildByRunningCompactor(t *testing.T) { indexRebuild(t, newSite(t)) }

// indexRebuild is TestIndexRebuildByRunningCompactor on any site.
func indexRebuild(t *testing.T, s *site) {
	w := s.walgen("pod-0", 20000, 11)
	// Drain first without rewrites (one small file per segment), then name the index column.
	d := s.start(nil, "--recluster-interval-secs", "0")
	d.waitDrained(60 * time.Second)
	d.stop()
	tbl, _ := s.table("events")
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{lake.IndexColumnsProperty: "service"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}

	s.extraEnv = append(s.extraEnv, "SIGLAKE_INDEX_REBUILD=on", "SIGLAKE_MERGE_MEMORY_BYTES=1048576")
	r := s.start(nil, "--recluster-interval-secs", "1")
	waitFor(t, 90*time.Second, "a rewrite's outputs to get index sidecars", func() bool {
		return r.scrape().sum("siglake_index_rebuild_files_total", `table="events"`) >= 1
	})
	r.stop()

	if got := s.tableSum("events"); got != w.Fingerprint {
		t.Fatalf("table holds %+v, want the sealed rows %+v", got, w.Fingerprint)
	}
	tbl, files := s.table("events")
	reg, err := puffinidx.Parse(tbl.Properties())
	if err != nil || len(reg) == 0 {
		t.Fatalf("registrations %v (%v)", reg, err)
	}
	checked := 0
	for _, f := range files {
		if _, ok := reg[f.Path]; !ok {
			continue
		}
		ix, src, err := puffinidx.Index(context.Background(), tbl, f.Path, "service")
		if err != nil || src != puffinidx.FromPuffin {
			t.Fatalf("%s: index from %s (%v), want the Puffin sidecar", f.Path, src, err)
		}
		// Every row's service value, read back from the data file, is found at its row.
		want := map[string][]uint32{}
		for i, v := range readColumn(t, s, f.Path, "service") {
			if v != nil {
				want[*v] = append(want[*v], uint32(i))
			}
		}
		for v, rows := range want {
			if got := ix.Lookup(v); !slices.Equal(got, rows) {
				t.Fatalf("%s: service %q at rows %v through the sidecar, want %v", f.Path, v, head(got), head(rows))
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no live file has a registration")
	}
}

func head(v []uint32) []uint32 { return v[:min(len(v), 5)] }

// readColumn reads one string column of a data file of the site, in file order.
func readColumn(t *testing.T, s *site, path, column string) []*string {
	t.Helper()
	pf, err := file.OpenParquetFile(s.localPath(path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 8192}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var out []*string
	for rr.Next() {
		rec := rr.RecordBatch()
		col := rec.Column(rec.Schema().FieldIndices(column)[0]).(*array.String)
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				out = append(out, nil)
			} else {
				v := col.Value(i)
				out = append(out, &v)
			}
		}
	}
	if err := rr.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return out
}
