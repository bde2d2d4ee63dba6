package retention

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/plan"
)

// happened is what a run did along the way that its report's counts do not say: the observer
// logs it.
type happened struct {
	drops []dropped
	// lost are the drops that lost to a concurrent change.
	lost []error
	// listsLeft are lists of uncommitted drops that could not be removed (gc will).
	listsLeft []leftList
	// badPending are table properties that are not pending deletions (left alone).
	badPending []error
	freed      []freed
	// unfreed are the due pending deletions whose objects could not all be deleted.
	unfreed []unfreed
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

// freed is a pending deletion whose objects are gone; retried when an earlier run had marked it.
type freed struct {
	p       Pending
	retried bool
}

type unfreed struct {
	id  string
	err error
}

func newID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
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
	now := m.Now()
	pending := Pending{ID: newID(now), Bytes: d.bytes, RemovedAt: now}
	d.pendingID = pending.ID
	var list string
	props := iceberg.Properties{"siglake.rewrite.kind": plan.KindRetention.String(), "siglake.retention.dropped-files": strconv.Itoa(len(old)),
		"siglake.retention.dropped-rows": strconv.FormatInt(d.rows, 10), "siglake.retention.pending": pending.ID}
	cr, err := m.Lake.CommitReplace(ctx, m.rep.Table, old, nil, props, func(cur *table.Table, txn *table.Transaction) error {
		pending.after(cur)
		if list != "" { // a retried attempt: the list object is already written
			return stageWritten(txn, pending, list, len(paths))
		}
		var err error
		list, err = stagePending(txn, m.wfs, m.src.Table.Location(), pending, paths)
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

// stageWritten stages p again with its already written list object.
func stageWritten(txn *table.Transaction, p Pending, list string, n int) error {
	p.Version, p.List, p.Count = Version, list, n
	v, err := jsonString(p)
	if err != nil {
		return err
	}
	return txn.SetProperties(iceberg.Properties{PendingPrefix + p.ID: v})
}

// removeList removes the list object of a drop that did not commit.
func (m *removal) removeList(list string, maybe bool) {
	if list == "" || maybe { // an unknown outcome may have committed the entry: keep its list
		return
	}
	if err := m.wfs.Remove(list); err != nil && !isNotExist(err) {
		m.rep.happened.listsLeft = append(m.rep.happened.listsLeft, leftList{path: list, err: err})
	}
}

// free deletes the objects of pending deletions that are due, then removes their entries. Before
// deleting, one commit marks the due entries as being deleted, so an entry's objects and bytes
// count in the freed metrics once: a process that dies halfway leaves the marked entry, and the
// next owner deletes again (an object already gone is fine) without counting it again.
func (r *Runner) free(ctx context.Context, name string, rep *Report) error {
	t, err := r.Lake.LoadTable(ctx, name)
	if err != nil {
		return err
	}
	due, err := r.markDue(ctx, &t, rep)
	if err != nil || len(due) == 0 {
		return err
	}
	done, err := r.deleteDue(ctx, t, due, rep)
	if err != nil {
		return err
	}
	if len(done) > 0 {
		if err := r.Lake.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
			return nil, slices.DeleteFunc(done, func(k string) bool { _, ok := cur[k]; return !ok })
		}); err != nil {
			return fmt.Errorf("remove freed retention entries of %s (their objects are gone; the next run removes the entries): %w", name, err)
		}
		if t, err = r.Lake.LoadTable(ctx, name); err != nil {
			return err
		}
	}
	r.pendingView(t, rep)
	return nil
}

// markDue returns the pending deletions of *t that are due, after marking those not marked yet
// as being deleted (*t is then reloaded). With none due (or a stop) it shows the pending ones.
func (r *Runner) markDue(ctx context.Context, t **table.Table, rep *Report) ([]Pending, error) {
	ps, errs := PendingOf((*t).Properties())
	rep.happened.badPending = append(rep.happened.badPending, errs...)
	now := r.Now()
	var due []Pending
	marked := iceberg.Properties{}
	for _, p := range ps {
		if ok, _ := p.Due(*t, now, r.Cfg.DeleteDelay); !ok {
			continue
		}
		due = append(due, p)
		if !p.Deleting {
			p.Deleting = true
			v, err := jsonString(p)
			if err != nil {
				return nil, err
			}
			marked[PendingPrefix+p.ID] = v
		}
	}
	if len(due) == 0 || ctx.Err() != nil {
		r.pendingView(*t, rep)
		return nil, nil
	}
	if len(marked) == 0 {
		return due, nil
	}
	name := rep.Table
	if err := r.Lake.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
		set := iceberg.Properties{}
		for k, v := range marked {
			if _, ok := cur[k]; ok { // not finished by another owner meanwhile
				set[k] = v
			}
		}
		return set, nil
	}); err != nil {
		return nil, err
	}
	var err error
	*t, err = r.Lake.LoadTable(ctx, name)
	return due, err
}

// deleteDue deletes the objects of the due pending deletions still in t and returns the keys of
// those whose objects are all gone.
func (r *Runner) deleteDue(ctx context.Context, t *table.Table, due []Pending, rep *Report) ([]string, error) {
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, err
	}
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return nil, err
	}
	live := make(map[string]bool, len(files))
	for _, f := range files {
		live[f.Path] = true
	}
	var done []string
	for _, p := range due {
		if _, ok := t.Properties()[PendingPrefix+p.ID]; !ok {
			continue
		}
		failed, err := deleteObjects(fsys, p, live)
		if err != nil {
			return nil, err
		}
		if failed != nil {
			rep.happened.unfreed = append(rep.happened.unfreed, unfreed{id: p.ID, err: failed})
			continue
		}
		if !p.Deleting { // marked by this run: count it once
			rep.FreedFiles += p.Count
			rep.FreedBytes += p.Bytes
		}
		done = append(done, PendingPrefix+p.ID)
		rep.happened.freed = append(rep.happened.freed, freed{p: p, retried: p.Deleting})
	}
	return done, nil
}

// deleteObjects deletes p's objects, never a live file whatever a list says (a hand-edited
// property): failed says why some are left; err that p's list cannot be read.
func deleteObjects(fsys icebergio.IO, p Pending, live map[string]bool) (failed, err error) {
	paths, _, err := p.paths(fsys)
	if err != nil {
		return nil, err
	}
	for _, path := range paths {
		if live[path] {
			failed = fmt.Errorf("pending deletion %s lists %s, which is live: not deleting it", p.ID, path)
			continue
		}
		if err := fsys.Remove(path); err != nil && !isNotExist(err) {
			failed = fmt.Errorf("delete %s of pending deletion %s: %w", path, p.ID, err)
		}
	}
	if failed == nil && p.List != "" {
		if err := fsys.Remove(p.List); err != nil && !isNotExist(err) {
			failed = fmt.Errorf("delete the pending deletion list %s: %w", p.List, err)
		}
	}
	return failed, nil
}

// pendingView shows t's pending deletions in rep.
func (r *Runner) pendingView(t *table.Table, rep *Report) {
	ps, _ := PendingOf(t.Properties())
	rep.Pending, rep.pendingKnown = nil, true
	for _, p := range ps {
		_, why := p.Due(t, r.Now(), r.Cfg.DeleteDelay)
		rep.Pending = append(rep.Pending, PendingView{ID: p.ID, Files: p.Count, Bytes: p.Bytes, RemovedAt: p.RemovedAt,
			DueAt: p.RemovedAt.Add(r.Cfg.DeleteDelay), Waiting: why})
	}
}

func jsonString(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
