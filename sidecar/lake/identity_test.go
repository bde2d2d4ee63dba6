package lake

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
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
	// Processes that start together on one catalog agree: the identity is created by one atomic
	// create that only one of them wins.
	ls := []*Lake{open("shared"), open("shared"), open("shared")}
	ids := make([]string, len(ls))
	var wg sync.WaitGroup
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := l.CatalogID(ctx)
			if err != nil {
				t.Error(err)
			}
			ids[i] = s
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	shared := id(ls[0])
	for _, got := range ids {
		if got != shared {
			t.Fatalf("one catalog, several identities: %v", ids)
		}
	}
	if again := id(open("shared")); again != shared {
		t.Fatalf("identity changed across a restart: %s then %s", shared, again)
	}
	if other := id(open("private")); other == shared {
		t.Fatalf("two catalogs share identity %s", other)
	}
}

// TestCatalogIDRecreatedAndBroken: an identity namespace dropped by hand is created again (a new
// identity: the members re-form their candidate sets around it); one that exists without the
// property is an error that says what to do, never a silent second identity.
func TestCatalogIDRecreatedAndBroken(t *testing.T) {
	ctx := context.Background()
	l := openTestLake(t)
	a, err := l.CatalogID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{IdentityNamespace("siglake")}
	if err := l.cat.DropNamespace(ctx, ns); err != nil {
		t.Fatal(err)
	}
	b, err := l.CatalogID(ctx)
	if err != nil || b == "" || b == a {
		t.Fatalf("after the drop: identity %q (%v), want a new one", b, err)
	}
	if _, err := l.cat.UpdateNamespaceProperties(ctx, ns, nil, iceberg.Properties{"other": "x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.cat.UpdateNamespaceProperties(ctx, ns, []string{catalogIDProperty}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CatalogID(ctx); err == nil || !strings.Contains(err.Error(), "drop the namespace") {
		t.Fatalf("identity namespace without the property: %v", err)
	}
	if k := LeaseKey(l.Namespace(), "events"); k != "siglake.events" {
		t.Fatalf("lease key %q", k)
	}
}
