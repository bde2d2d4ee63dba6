package lake

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
)

func openTestLake(t *testing.T) *Lake {
	t.Helper()
	dir := t.TempDir()
	l, err := Open(context.Background(), Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"),
		Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// TestCommitPropertiesCASRejectsStaleState: two writers read the same claims table; the second
// commit must fail with ErrCASConflict and leave the first one's property in place. Without the
// empty snapshot and the main-branch requirement both would succeed (last write wins).
func TestCommitPropertiesCASRejectsStaleState(t *testing.T) {
	ctx := context.Background()
	l := openTestLake(t)
	t0, err := l.EnsureClaimsTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := l.EnsureClaimsTable(ctx) // a second reader of the same state
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CommitPropertiesCAS(ctx, t0, iceberg.Properties{"k": "a"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	_, err = CommitPropertiesCAS(ctx, stale, iceberg.Properties{"k": "b"}, nil, nil)
	if !errors.Is(err, ErrCASConflict) {
		t.Fatalf("stale commit: err = %v, want ErrCASConflict", err)
	}
	cur, ok, err := l.LoadClaimsTable(ctx)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := cur.Properties()["k"]; got != "a" {
		t.Fatalf("k = %q after the stale commit, want the first writer's a", got)
	}
	// From the fresh state the same change commits, and removal works.
	cur, err = CommitPropertiesCAS(ctx, cur, iceberg.Properties{"k": "b"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cur, err = CommitPropertiesCAS(ctx, cur, nil, []string{"k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cur.Properties()["k"]; ok {
		t.Fatal("k still set after removal")
	}
	// Trimming snapshots keeps the latest and does not make a commit from the same state fail.
	if err := TrimSnapshots(ctx, cur, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := CommitPropertiesCAS(ctx, cur, iceberg.Properties{"k": "c"}, nil, nil); err != nil {
		t.Fatalf("commit after a trim from the pre-trim state: %v", err)
	}
	// The claims table is not one of the lake's log tables.
	names, err := l.ListTables(ctx)
	if err != nil || len(names) != 0 {
		t.Fatalf("ListTables = %v, %v; want no log tables", names, err)
	}
}
