package testenv

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	_ "github.com/apache/iceberg-go/catalog/rest" // registers catalog type "rest"

	"github.com/siglake/siglake/test/restcat"
)

// REST starts an Iceberg REST catalog server (test/restcat) for this test on 127.0.0.1, with
// its tables under warehouse (s3:// on the test S3 server s3, or file://; pass S3Env{} then). It
// runs inside the test process, so unlike PostgreSQL and versitygw no script starts it, and it
// stops when the test ends. Its URL with the rest+ prefix is siglake's --catalog.
func REST(t testing.TB, warehouse string, s3 S3Env) *restcat.Server {
	t.Helper()
	cfg := restcat.Config{Warehouse: warehouse, Dir: t.TempDir()}
	if s3.Endpoint != "" {
		cfg.IO = iceberg.Properties{}
		for k, v := range s3.Props() {
			cfg.IO[k] = v
		}
	}
	srv, err := restcat.Start(cfg)
	if err != nil {
		t.Fatalf("start the REST catalog server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// RESTCatalogProps are the iceberg-go catalog.Load properties of a REST client on the server at
// uri (http://127.0.0.1:PORT) whose tables live on the test S3 server: the S3 keys go to the
// FileIO of every table it loads (the server vends no credentials).
func RESTCatalogProps(uri string, s3 S3Env, warehouse string) iceberg.Properties {
	p := iceberg.Properties{"type": "rest", "uri": uri, "warehouse": warehouse}
	for k, v := range s3.Props() {
		p[k] = v
	}
	return p
}

// RESTCatalog is PostgresCatalog on REST: a REST catalog server with a fresh S3 warehouse, and
// iceberg-go's REST client on it. Backends.REST is the server (its faults, its request counts).
func RESTCatalog(t testing.TB) Backends {
	t.Helper()
	b := Backends{S3: S3(t)}
	b.Warehouse = b.S3.Warehouse(t)
	b.REST = REST(t, b.Warehouse, b.S3)
	b.Props = RESTCatalogProps(b.REST.URL, b.S3, b.Warehouse)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cat, err := catalog.Load(ctx, "siglake", b.Props)
	if err != nil {
		t.Fatalf("open REST catalog at %s: %v", b.REST.URL, err)
	}
	if c, ok := cat.(io.Closer); ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	b.Catalog = cat
	return b
}
