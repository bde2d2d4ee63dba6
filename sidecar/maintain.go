package sidecar

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/lake"
)

// maintain runs table maintenance on the tables this process owns until stop is done.
func (p *Process) maintain(stop, work context.Context, l *lake.Lake) {
	if p.Cfg.SnapshotExpireInterval == 0 {
		p.Log.Info("snapshot expiry disabled (snapshotExpire.intervalSecs / SIGLAKE_SNAPSHOT_EXPIRE_INTERVAL_SECS = 0)")
		<-stop.Done()
		return
	}
	t := time.NewTicker(p.Cfg.SnapshotExpireInterval)
	defer t.Stop()
	for {
		select {
		case <-stop.Done():
			return
		case <-t.C:
		}
		tables, err := l.ListTables(work)
		if err != nil {
			p.Status.AddError(p.Now(), "maintenance", "", err)
			continue
		}
		for _, name := range tables {
			if stop.Err() != nil {
				return
			}
			if err := ExpireSnapshots(work, l, name, p.Cfg.SnapshotRetain); err != nil {
				p.Status.AddError(p.Now(), "expire", name, err)
				p.Log.Warn("snapshot expiry failed", zap.String("table", name), zap.Error(err))
			}
		}
	}
}

// ExpireSnapshots drops all but the latest retain snapshots of a table. It removes metadata
// references only: data files go to orphan collection (spec "Snapshot expiry trade-off"), so a
// query still reading an expired snapshot is never cut off. Stream marks live in table
// properties and are untouched.
func ExpireSnapshots(ctx context.Context, l *lake.Lake, name string, retain int) error {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	n := 0
	for range t.Metadata().Snapshots() {
		n++
	}
	if n <= retain {
		return nil
	}
	txn := t.NewTransaction()
	if err := txn.ExpireSnapshots(table.WithRetainLast(retain), table.WithOlderThan(0), table.WithPostCommit(false)); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	return err
}
