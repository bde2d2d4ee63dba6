package lake

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// TestCatalogIDPerCatalog: one catalog file opened twice (two processes on a shared catalog) has
// one identity; two catalog files (two pods' private embedded catalogs) have two; a restart
// keeps it.
func TestCatalogIDPerCatalog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(name string) *Lake {
		l, err := Open(ctx, Config{Catalog: "sqlite:" + filepath.Join(dir, name+".db"), Warehouse: filepath.Join(dir, "wh"), Namespace: "siglake"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	id := func(l *Lake) string {
		s, err := l.CatalogID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(s) != 24 {
			t.Fatalf("catalog id %q: want 24 hex digits", s)
		}
		return s
	}
	// Concurrent first starts on one catalog agree (the identity is written by the create).
	var wg sync.WaitGroup
	ls := make([]*Lake, 3)
	for i := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := Open(ctx, Config{Catalog: "sqlite:" + filepath.Join(dir, "shared.db"), Warehouse: filepath.Join(dir, "wh"), Namespace: "siglake"})
			if err != nil {
				t.Error(err)
				return
			}
			ls[i] = l
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	shared := id(ls[0])
	for _, l := range ls {
		if got := id(l); got != shared {
			t.Fatalf("one catalog, two identities: %s and %s", shared, got)
		}
		l.Close()
	}
	if again := id(open("shared")); again != shared {
		t.Fatalf("identity changed across a restart: %s then %s", shared, again)
	}
	if other := id(open("private")); other == shared {
		t.Fatalf("two catalogs share identity %s", other)
	}
}

// TestCatalogIDForOlderNamespace: a namespace created before identities existed (no property)
// gets one on first read, and keeps it.
func TestCatalogIDForOlderNamespace(t *testing.T) {
	ctx := context.Background()
	l := openTestLake(t)
	if err := l.cat.CreateNamespace(ctx, table.Identifier{"older"}, nil); err != nil { // as siglake did before
		t.Fatal(err)
	}
	l.ns = table.Identifier{"older"}
	a, err := l.CatalogID(ctx)
	if err != nil || a == "" {
		t.Fatalf("identity %q, %v", a, err)
	}
	b, err := l.CatalogID(ctx)
	if err != nil || b != a {
		t.Fatalf("second read %q (%v), want %q", b, err, a)
	}
	if k := LeaseKey(l.Namespace(), "events"); k != "older.events" {
		t.Fatalf("lease key %q", k)
	}
}
