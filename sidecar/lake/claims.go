package lake

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// Drain claims (docs/claims.md) live in the properties of one bookkeeping table, kept out of the
// data namespace so readers listing the log tables, maintenance and gc never see it.
const (
	claimsNamespaceSuffix = "_claims"
	claimsTableName       = "streams"
)

// ErrCASConflict means a compare-and-swap commit lost: another commit reached the table after the
// metadata the caller read. Nothing was committed; reload and decide again.
var ErrCASConflict = errors.New("the table changed since it was read")

// claimsIdent is the identifier of the claims table of this lake.
func (l *Lake) claimsIdent() table.Identifier {
	return table.Identifier{l.ns[0] + claimsNamespaceSuffix, claimsTableName}
}

// EnsureClaimsTable loads the claims table, creating it (and its namespace) on first use.
func (l *Lake) EnsureClaimsTable(ctx context.Context) (*table.Table, error) {
	id := l.claimsIdent()
	ns := table.Identifier{id[0]}
	for attempt := 0; ; attempt++ {
		t, err := l.cat.LoadTable(ctx, id)
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, catalog.ErrNoSuchTable) && !errors.Is(err, catalog.ErrNoSuchNamespace) {
			return nil, fmt.Errorf("load claims table %s.%s: %w", id[0], id[1], err)
		}
		if err := l.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("create claims namespace %s: %w", id[0], err)
		}
		// The table holds no rows; the one column only makes it a valid Iceberg table.
		sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "stream", Type: iceberg.PrimitiveTypes.String})
		t, err = l.cat.CreateTable(ctx, id, sc, catalog.WithProperties(iceberg.Properties{
			"format-version":     "2",
			tableprops.CreatedBy: "siglake",
			// Every claim commit writes a metadata file; keep only the recent ones.
			table.MetadataDeleteAfterCommitEnabledKey: "true",
			table.MetadataPreviousVersionsMaxKey:      "10",
		}))
		if errors.Is(err, catalog.ErrTableAlreadyExists) && attempt < 3 {
			continue // another process created it first
		}
		if err != nil {
			return nil, fmt.Errorf("create claims table %s.%s: %w", id[0], id[1], err)
		}
		return t, nil
	}
}

// LoadClaimsTable loads the claims table; ok is false when no process has created it yet.
func (l *Lake) LoadClaimsTable(ctx context.Context) (t *table.Table, ok bool, err error) {
	t, err = l.cat.LoadTable(ctx, l.claimsIdent())
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("load claims table: %w", err)
	}
	return t, true, nil
}

// CommitPropertiesCAS sets and removes properties of t in one commit that succeeds only if t is
// still the table's current state.
//
// A properties-only commit is NOT a compare-and-swap: the SQL catalog applies the updates to the
// metadata it loads at commit time (its CAS is on the metadata location it just read), and a REST
// server does the same, so two writers that read the same state would both succeed and the later
// one would silently overwrite the earlier. The only thing a commit can require is a fixed
// snapshot of a branch, so every call also appends an empty snapshot and requires main to still
// be the snapshot t was read at: two commits from the same state cannot both move main.
func CommitPropertiesCAS(ctx context.Context, t *table.Table, set iceberg.Properties, remove []string, summary iceberg.Properties) (*table.Table, error) {
	txn := t.NewTransaction()
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, err
	}
	if err := txn.AddFiles(ctx, nil, summary, true); err != nil {
		return nil, fmt.Errorf("stage empty snapshot: %w", err)
	}
	if err := txn.SetProperties(set); err != nil {
		return nil, fmt.Errorf("stage properties: %w", err)
	}
	if len(remove) > 0 {
		if err := txn.RemoveProperties(remove); err != nil {
			return nil, fmt.Errorf("stage property removal: %w", err)
		}
	}
	nt, err := txn.Commit(ctx)
	if err != nil {
		if IsConflict(err) {
			return nil, fmt.Errorf("%w: %w", ErrCASConflict, err)
		}
		return nil, err
	}
	return nt, nil
}

// TrimSnapshots drops all but the latest keep snapshots of a bookkeeping table (the claims
// table gains one empty snapshot per commit) and deletes the manifest lists only they used.
// It does not move main, so it never makes a concurrent CommitPropertiesCAS fail.
func TrimSnapshots(ctx context.Context, t *table.Table, keep int) error {
	if len(t.Metadata().Snapshots()) <= keep {
		return nil
	}
	txn := t.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithRetainLast(keep), table.WithOlderThan(0)); err != nil {
		return err
	}
	_, err := txn.Commit(ctx)
	return err
}
