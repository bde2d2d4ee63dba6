package merge

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"
)

// TestIcebergScannerReadsOutputs: outputs registered with
// table.DataFileFromMetadata are read back by iceberg-go's own scanner, with
// the same rows, from an embedded SQLite catalog and local warehouse.
func TestIcebergScannerReadsOutputs(t *testing.T) {
	ctx := context.Background()
	cat, dir := sqliteCatalog(t)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "logs"}, testIceSchema(), catalog.WithLocation("file://"+filepath.Join(dir, "wh", "logs")))
	if err != nil {
		t.Fatal(err)
	}
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(5, 55))
	var inputs []Input
	var want []string
	for i := 0; i < 3; i++ {
		// The last input lies after the others: the splice copies it.
		rec := randRecord(r, sc, 2000, 1_700_000_000_000_000+int64(i/2)*20_000, 3, true, i > 0)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 0, 500))
		want = append(want, rowStrings(t, rec, sc)...)
		rec.Release()
	}
	var dfs []iceberg.DataFile
	for _, path := range allPaths {
		res, err := Rewrite(ctx, localFS, inputs, sc, pathGen(filepath.Join(dir, "wh", "logs", "data", string(path)), 1),
			RewriteOptions{ForcePath: path, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 700, TargetFileBytes: 50_000}})
		if err != nil {
			t.Fatal(err)
		}
		if path == PathSplice && res.SplicedBytes == 0 {
			t.Fatal("the splice copied nothing")
		}
		for _, o := range res.Outputs {
			df, err := table.DataFileFromMetadata(table.DataFileArgs{
				Schema: tbl.Schema(), Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: o.Meta,
				FilePath: o.Path, FileSize: o.Size, Content: iceberg.EntryContentData, FormatVersion: tbl.Metadata().Version(),
			})
			if err != nil {
				t.Fatal(err)
			}
			dfs = append(dfs, df)
		}
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, dfs, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, it, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, rowStrings(t, rec, sc)...)
		rec.Release()
	}
	// Every path's outputs were added, so each input row appears three times.
	var want3 []string
	for range allPaths {
		want3 = append(want3, want...)
	}
	slices.Sort(got)
	slices.Sort(want3)
	if !slices.Equal(got, want3) {
		t.Fatalf("iceberg-go scan returned %d rows, want %d (or different rows)", len(got), len(want3))
	}
	// A filtered scan prunes by the statistics the files carry.
	_, it, err = tbl.Scan(table.WithRowFilter(iceberg.EqualTo(iceberg.Reference("service"), "api"))).ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		svc := rec.Column(1).(*array.String)
		for i := 0; i < svc.Len(); i++ {
			if svc.Value(i) != "api" {
				t.Fatalf("filtered scan returned service %q", svc.Value(i))
			}
		}
		n += int(rec.NumRows())
		rec.Release()
	}
	if n == 0 {
		t.Fatal("filtered scan returned no rows")
	}
}

// sqliteCatalog is an embedded SQLite catalog with namespace "ns" and a local warehouse under the
// returned directory's "wh", closed with the test.
func sqliteCatalog(t *testing.T) (*sqlcat.Catalog, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("test", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "wh")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	return cat, dir
}
