package testenv

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql" // registers catalog type "sql"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/test/restcat"
)

// PostgresCatalogProps are the iceberg-go catalog.Load properties of an Iceberg SQL
// catalog kept in the PostgreSQL database dsn, with its warehouse on the test S3
// server (warehouse is an s3:// location, e.g. S3Env.Warehouse). The S3 keys are
// passed on to the FileIO of every table the catalog loads.
func PostgresCatalogProps(dsn string, s3 S3Env, warehouse string) iceberg.Properties {
	p := iceberg.Properties{
		"type":            "sql",
		"uri":             dsn,
		sqlcat.DriverKey:  PostgresDriver, // "sql.driver": database/sql driver (lib/pq)
		sqlcat.DialectKey: string(sqlcat.Postgres),
		"warehouse":       warehouse,
	}
	for k, v := range s3.Props() {
		p[k] = v
	}
	return p
}

// Backends is an Iceberg catalog (SQL on PostgreSQL, or REST) with its warehouse on S3.
type Backends struct {
	Catalog   catalog.Catalog
	Props     iceberg.Properties // what Catalog was loaded with; load it again with these
	DSN       string             // the test's own PostgreSQL database (PostgresCatalog)
	REST      *restcat.Server    // the REST catalog server (RESTCatalog)
	S3        S3Env
	Warehouse string // s3://bucket/tests/<test>-<random>
}

// PostgresCatalog opens an Iceberg SQL catalog named "siglake" in a fresh PostgreSQL
// database (dropped when the test ends) with a fresh S3 warehouse prefix.
func PostgresCatalog(t testing.TB) Backends {
	t.Helper()
	b := Backends{S3: S3(t), DSN: PostgresDB(t)}
	b.Warehouse = b.S3.Warehouse(t)
	b.Props = PostgresCatalogProps(b.DSN, b.S3, b.Warehouse)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat, err := catalog.Load(ctx, "siglake", b.Props)
	if err != nil {
		t.Fatalf("open SQL catalog on %s: %v", redact(b.DSN), err)
	}
	if c, ok := cat.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	b.Catalog = cat
	return b
}

// TableFiles returns the local paths of the live data files of tbl's current snapshot,
// for DuckDB: s3:// locations through s3.LocalPath (pass the S3Env of the warehouse),
// file:// and plain paths as they are (pass S3Env{} for a local warehouse).
func TableFiles(t testing.TB, tbl *table.Table, s3 S3Env) []string {
	t.Helper()
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatalf("list data files of %v: %v", tbl.Identifier(), err)
	}
	// Once per data file: scan planning splits a file above read.split.target-size into row-group
	// ranges. lake.PlanDataFiles' rule, not the function: testenv must not import lake, whose
	// package imports merge, whose tests import testenv.
	files := make([]string, 0, len(tasks))
	seen := make(map[string]bool, len(tasks))
	for _, task := range tasks {
		loc := task.File.FilePath()
		if seen[loc] {
			continue
		}
		seen[loc] = true
		switch {
		case strings.HasPrefix(loc, "s3://"), strings.HasPrefix(loc, "s3a://"):
			p, err := s3.LocalPath(strings.Replace(loc, "s3a://", "s3://", 1))
			if err != nil {
				t.Fatalf("data file %s: %v", loc, err)
			}
			files = append(files, p)
		case strings.HasPrefix(loc, "file://"):
			files = append(files, strings.TrimPrefix(loc, "file://"))
		case strings.Contains(loc, "://"):
			t.Fatalf("data file %s: no local path for this scheme", loc)
		default:
			files = append(files, loc)
		}
	}
	return files
}
