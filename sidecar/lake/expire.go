package lake

import (
	"context"

	"github.com/apache/iceberg-go/table"
)

// ExpireSnapshots drops all but the latest retain snapshots of a table. It removes metadata
// references only: data files go to orphan collection (spec "Snapshot expiry trade-off"), so a
// query still reading an expired snapshot is never cut off. Stream marks live in table
// properties and are untouched.
func (l *Lake) ExpireSnapshots(ctx context.Context, name string, retain int) error {
	defer l.lockTable(name)()
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	if len(t.Metadata().Snapshots()) <= retain {
		return nil
	}
	txn := t.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithRetainLast(retain), table.WithOlderThan(0), table.WithPostCommit(false)); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	return err
}
