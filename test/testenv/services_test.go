package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

func TestPostgresDatabase(t *testing.T) {
	dsn := PostgresDB(t)
	if dsn == Postgres(t) {
		t.Fatal("PostgresDB returned the shared database")
	}
	db, err := sql.Open(PostgresDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE marks (stream text PRIMARY KEY, seq bigint NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO marks VALUES ($1, $2)", "wal-é", 42); err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := db.QueryRowContext(ctx, "SELECT seq FROM marks WHERE stream = $1", "wal-é").Scan(&seq); err != nil || seq != 42 {
		t.Fatalf("read back: %d, %v", seq, err)
	}
}

func TestS3FileIO(t *testing.T) {
	s3 := S3(t)
	fio := s3.FileIO(t)
	wfio, ok := fio.(icebergio.WriteFileIO)
	if !ok {
		t.Fatalf("S3 FileIO %T cannot write", fio)
	}
	key := s3.Prefix(t) + "/data/obj-é.bin"
	loc := "s3://" + s3.Bucket + "/" + key
	payload := bytes.Repeat([]byte("siglake\x00\xff"), 100_000) // ~900 KB: more than one read buffer
	if err := wfio.WriteFile(loc, payload); err != nil {
		t.Fatalf("write %s: %v", loc, err)
	}

	f, err := fio.Open(loc)
	if err != nil {
		t.Fatalf("open %s: %v", loc, err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read back %d bytes (err %v), want %d identical bytes", len(got), err, len(payload))
	}
	// Ranged read, as Parquet footers are read.
	f, err = fio.Open(loc)
	if err != nil {
		t.Fatal(err)
	}
	tail := make([]byte, 16)
	if _, err := f.ReadAt(tail, int64(len(payload)-16)); err != nil || !bytes.Equal(tail, payload[len(payload)-16:]) {
		t.Fatalf("ranged read: %q, %v", tail, err)
	}
	f.Close()

	// The object is a plain file under the server's POSIX root.
	local, err := s3.LocalPath(loc)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(local); err != nil || !bytes.Equal(b, payload) {
		t.Fatalf("POSIX root copy %s: %d bytes, %v", local, len(b), err)
	}

	if err := fio.Remove(loc); err != nil {
		t.Fatalf("remove %s: %v", loc, err)
	}
	if _, err := fio.Open(loc); err == nil || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open after remove: %v, want not-exist", err)
	}
	if _, err := os.Stat(local); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("POSIX root file after remove: %v", err)
	}
}

func TestLocalPath(t *testing.T) {
	e := S3Env{Bucket: "b", Root: "/srv/root"}
	for in, want := range map[string]string{
		"s3://b/x/y.parquet":      "/srv/root/b/x/y.parquet",
		"s3://other/k":            "/srv/root/other/k",
		"plain/key":               "/srv/root/b/plain/key",
		"s3://b/a//b/./c.parquet": "/srv/root/b/a/b/c.parquet",
	} {
		if got, err := e.LocalPath(in); err != nil || got != want {
			t.Errorf("LocalPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"s3://b", "s3://b/", "s3://b/../etc/passwd"} {
		if got, err := e.LocalPath(bad); err == nil {
			t.Errorf("LocalPath(%q) = %q, want an error", bad, got)
		}
	}
}

// TestPostgresCatalogOnS3 proves the production backends together: an Iceberg SQL
// catalog on PostgreSQL, data files on S3, and DuckDB reading what was committed.
func TestPostgresCatalogOnS3(t *testing.T) { catalogOnS3(t, PostgresCatalog(t)) }

// TestRESTCatalogOnS3 is the same through the REST catalog server (test/restcat) and iceberg-go's
// REST client: the server writes the metadata to S3, the client the data files.
func TestRESTCatalogOnS3(t *testing.T) {
	be := RESTCatalog(t)
	catalogOnS3(t, be)
	if n := be.REST.Requests()["updateTable"]; n != 1 {
		t.Fatalf("the REST server saw %d commits, want the one append", n)
	}
}

func catalogOnS3(t *testing.T, be Backends) {
	cat, s3, wh := be.Catalog, be.S3, be.Warehouse
	duck := DuckDB(t)
	ctx := context.Background()
	ns := table.Identifier{"logs"}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: "msg", Type: iceberg.PrimitiveTypes.String},
	)
	ident := table.Identifier{"logs", "events"}
	if _, err := cat.CreateTable(ctx, ident, schema); err != nil {
		t.Fatalf("create table: %v", err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("load table: %v", err)
	}
	if !strings.HasPrefix(tbl.MetadataLocation(), wh+"/") {
		t.Fatalf("metadata at %s, want under %s", tbl.MetadataLocation(), wh)
	}

	arrowSchema, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema)
	defer b.Release()
	r := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 1000; i++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_735_689_600_000_000 + r.Int64N(86_400_000_000)))
		b.Field(1).(*array.Int64Builder).Append(int64(i))
		if i%10 == 0 {
			b.Field(2).AppendNull()
		} else {
			b.Field(2).(*array.StringBuilder).Append("línea " + string(rune('a'+i%26)))
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	want, err := RowChecksum([]arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	at := array.NewTableFromRecords(arrowSchema, []arrow.RecordBatch{rec})
	defer at.Release()

	tx := tbl.NewTransaction()
	if err := tx.AppendTable(ctx, at, 400, nil); err != nil {
		t.Fatalf("append: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// A second catalog handle on the same database sees the commit.
	again, err := catalog.Load(ctx, "siglake", be.Props)
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := again.(io.Closer); ok {
		defer c.Close()
	}
	tbl2, err := again.LoadTable(ctx, ident)
	if err != nil {
		t.Fatalf("reload table: %v", err)
	}
	if tbl2.CurrentSnapshot() == nil {
		t.Fatal("no snapshot after commit")
	}
	files := TableFiles(t, tbl2, s3)
	if len(files) == 0 {
		t.Fatal("the committed snapshot lists no data files")
	}
	s := duck.Summarize(files)
	if s.Rows != 1000 || s.Checksum != want {
		t.Fatalf("DuckDB over %d committed files: %d rows, checksum %d; want 1000 rows, checksum %d", len(files), s.Rows, s.Checksum, want)
	}
}
