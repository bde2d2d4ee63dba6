package lake

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/test/testenv"
)

// TestOpenWaitsOutAFullCatalog: on the real PostgreSQL, a database allowing one connection has
// it taken (another client); Open is refused with too_many_connections (53300), waits and tries
// again, each wait reported to Config.WatchFull as op "open", and opens once the other goes.
func TestOpenWaitsOutAFullCatalog(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The limit is set from the server's default database, so this connection is not one of them.
	admin, err := sql.Open(testenv.PostgresDriver, testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "ALTER DATABASE "+u.Path[1:]+" CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	other, err := sql.Open(testenv.PostgresDriver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	held, err := other.Conn(ctx)
	if err != nil {
		t.Fatalf("the database's one connection: %v", err)
	}
	var mu sync.Mutex
	var ops []string
	waited := make(chan struct{}, 1)
	cfg := Config{Catalog: dsn, Warehouse: filepath.Join(t.TempDir(), "wh"), Namespace: "siglake",
		WatchFull: func(e FullEvent) {
			mu.Lock()
			ops = append(ops, e.Op)
			mu.Unlock()
			select {
			case waited <- struct{}{}:
			default:
			}
		}}
	opened := make(chan error, 1)
	go func() {
		l, err := Open(ctx, cfg)
		if err == nil {
			l.Close()
		}
		opened <- err
	}()
	select {
	case <-waited:
	case err := <-opened:
		t.Fatalf("Open returned %v before waiting for the held connection", err)
	case <-ctx.Done():
		t.Fatal("Open never waited for the full catalog")
	}
	_ = held.Close()
	_ = other.Close()
	if err := <-opened; err != nil {
		t.Fatalf("Open after the connection went: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, op := range ops {
		if op != "open" {
			t.Fatalf("waits reported as %v, want every one as open", ops)
		}
	}
}
