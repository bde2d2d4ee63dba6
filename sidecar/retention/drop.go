package retention

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/retention/pending"
)

// happened is what a run did along the way that its report's counts do not say: the observer
// logs it.
type happened struct {
	drops []dropped
	// lost are the drops that lost to a concurrent change.
	lost []error
	// listsLeft are lists of uncommitted drops that could not be removed (gc will).
	listsLeft []leftList
	// free is what freeing the due pending deletions did.
	free pending.Result
}

// dropped is one committed metadata-only drop.
type dropped struct {
	files, partitions int
	rows, bytes       int64
	snapshotID        int64
	pendingID         string
	partitionsDropped []string
}

type leftList struct {
	path string
	err  error
}

// drop removes the files wholly past retention in one metadata-only replace (no outputs, no data
// read or written), recording them as pending deletion in the same commit.
func (m *removal) drop(ctx context.Context, picks []plan.RetentionPick) error {
	if len(picks) == 0 {
		return nil
	}
	d := dropped{files: len(picks)}
	parts := map[string]bool{}
	paths := make([]string, 0, len(picks))
	old := make([]iceberg.DataFile, 0, len(picks))
	for _, p := range picks {
		pk := Pick{Path: p.File.Path, Partition: p.File.Partition, Action: p.Path.String(), Bytes: p.File.SizeBytes,
			Rows: p.File.Rows, Expired: p.File.Rows, Reason: p.Reason}
		if !m.o.Apply {
			pk.Result = "would drop (dry run)"
			m.rep.count(p.Path.String(), 1, p.File.Rows, p.File.SizeBytes)
		}
		m.rep.Picks = append(m.rep.Picks, pk)
		if p.Path == plan.RetentionPartition {
			parts[p.File.Partition] = true
		}
		paths = append(paths, p.File.Path)
		old = append(old, m.live[p.File.Path].DataFile)
		d.bytes += p.File.SizeBytes
		d.rows += p.File.Rows
	}
	if !m.o.Apply {
		return nil
	}
	d.partitions, d.partitionsDropped = len(parts), slices.Sorted(maps.Keys(parts))
	result, err := m.commitDrop(ctx, old, paths, &d)
	if err == nil {
		for _, p := range picks {
			m.rep.count(p.Path.String(), 1, p.File.Rows, p.File.SizeBytes)
		}
	}
	for i := len(m.rep.Picks) - len(picks); i < len(m.rep.Picks); i++ {
		m.rep.Picks[i].Result = result
	}
	if err != nil {
		return fmt.Errorf("retention drop of %d files of %s: %w", len(old), m.rep.Table, err)
	}
	return nil
}

// commitDrop commits the replace of old (at paths) by nothing with their pending entry and
// returns the picks' result line. A drop lost to a concurrent change is no error: the next run
// replans.
func (m *removal) commitDrop(ctx context.Context, old []iceberg.DataFile, paths []string, d *dropped) (string, error) {
	entry := pending.New(m.Now(), d.bytes)
	d.pendingID = entry.ID
	var list string
	props := iceberg.Properties{tableprops.SumRewriteKind: level.KindRetention.String(), tableprops.SumRetentionFiles: strconv.Itoa(len(old)),
		tableprops.SumRetentionRows: strconv.FormatInt(d.rows, 10), tableprops.SumRetentionPending: entry.ID}
	cr, err := m.Lake.CommitReplace(ctx, m.rep.Table, old, nil, props, func(cur *table.Table, txn *table.Transaction) error {
		entry.After(cur)
		if list != "" { // a retried attempt: the list object is already written
			return pending.StageWritten(txn, entry, list, len(paths))
		}
		var err error
		list, err = pending.Stage(txn, m.wfs, m.src.Table.Location(), entry, paths)
		return err
	})
	switch {
	case err == nil:
		d.snapshotID = cr.Table.CurrentSnapshot().SnapshotID
		m.rep.Snapshots = append(m.rep.Snapshots, d.snapshotID)
		m.rep.happened.drops = append(m.rep.happened.drops, *d)
		return fmt.Sprintf("dropped, snapshot %d", d.snapshotID), nil
	case errors.Is(err, lake.ErrInputsGone) || lake.IsConflict(err):
		m.rep.Conflicts++
		m.removeList(list, cr.MaybeCommitted)
		m.rep.happened.lost = append(m.rep.happened.lost, err)
		return "conflict: " + err.Error(), nil
	default:
		m.removeList(list, cr.MaybeCommitted)
		return "failed: " + err.Error(), err
	}
}

// removeList removes the list object of a drop that did not commit.
func (m *removal) removeList(list string, maybe bool) {
	if list == "" || maybe { // an unknown outcome may have committed the entry: keep its list
		return
	}
	if err := m.wfs.Remove(list); err != nil && !pending.IsNotExist(err) {
		m.rep.happened.listsLeft = append(m.rep.happened.listsLeft, leftList{path: list, err: err})
	}
}

// free frees the storage of t's pending deletions that are due (pending.Free) and shows the
// pending ones in rep.
func (r *Runner) free(ctx context.Context, name string, rep *Report) error {
	res, err := pending.Free(ctx, r.Lake, name, r.Now(), r.Cfg.DeleteDelay)
	rep.happened.free = res
	rep.FreedFiles += res.Files
	rep.FreedBytes += res.Bytes
	if res.Table != nil {
		r.pendingView(res.Table, rep)
	}
	return err
}

// pendingView shows t's pending deletions in rep.
func (r *Runner) pendingView(t *table.Table, rep *Report) {
	ps, _ := pending.List(t.Properties())
	rep.Pending, rep.pendingKnown = nil, true
	for _, p := range ps {
		_, why := p.Due(t, r.Now(), r.Cfg.DeleteDelay)
		rep.Pending = append(rep.Pending, PendingView{ID: p.ID, Files: p.Count, Bytes: p.Bytes, RemovedAt: p.RemovedAt,
			DueAt: p.RemovedAt.Add(r.Cfg.DeleteDelay), Waiting: why})
	}
}
