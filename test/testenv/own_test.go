package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"testing"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

func TestOwnPostgresOutage(t *testing.T) {
	Postgres(t) // skip (or fail under CI) like every PostgreSQL test when there is none
	srv, dsn := OwnPostgres(t)
	if dsn == "" || dsn == Postgres(t) {
		t.Fatalf("private DSN %q", redact(dsn))
	}
	db, err := sql.Open(PostgresDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (v int); INSERT INTO t VALUES (7)"); err != nil {
		t.Fatal(err)
	}

	srv.Stop(t)
	if err := pingPostgres(dsn); err == nil {
		t.Fatal("ping succeeded while the server was stopped")
	}
	srv.Start(t)

	var v int
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.QueryRowContext(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 7 {
		t.Fatalf("after restart, same DSN and pool: v=%d, err=%v", v, err)
	}
}

func TestOwnS3Outage(t *testing.T) {
	S3(t)
	srv, s3 := OwnS3(t)
	fio := s3.FileIO(t).(icebergio.WriteFileIO)
	loc := "s3://" + s3.Bucket + "/outage/a.bin"
	if err := fio.WriteFile(loc, []byte("before")); err != nil {
		t.Fatal(err)
	}

	srv.Stop(t)
	if err := fio.WriteFile("s3://"+s3.Bucket+"/outage/b.bin", []byte("during")); err == nil {
		t.Fatal("write succeeded while the server was stopped")
	}
	srv.Start(t)

	f, err := fio.Open(loc)
	if err != nil {
		t.Fatalf("open after restart: %v", err)
	}
	defer f.Close()
	if b, err := io.ReadAll(f); err != nil || !bytes.Equal(b, []byte("before")) {
		t.Fatalf("read after restart: %q, %v", b, err)
	}
}
