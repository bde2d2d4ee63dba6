package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/backoff"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// ErrRefused: a group-commit request that cannot go in (its files do not decode, its stream has
// another request in the group). Nothing of it was committed; its sender may commit it directly.
var ErrRefused = errors.New("group commit request refused")

// ErrNotNow: a GroupItem's Files could not be had this time (its files could not be checked:
// a stat timed out, the object store throttled). The item fails with it, not refused: its request
// may go in a later group commit.
var ErrNotNow = errors.New("group commit request not taken this time")

// ErrExpired: a group-commit request grew too old to start another attempt on (its files could
// be orphan-collected before the commit lands). Nothing of it was committed by that attempt.
var ErrExpired = errors.New("group commit request expired")

// GroupItem is one request of a group commit: files holding segments First..Last of Stream.
type GroupItem struct {
	ID, Stream  string
	First, Last marks.Mark
	Rows        int64 // summed into the snapshot summary
	Segments    int
	// Files returns the request's data files for t, the table an attempt loaded (a request
	// carries them encoded against a schema and spec of t); called once, at the first attempt
	// that includes the item. An error refuses the item.
	Files func(t *table.Table) ([]iceberg.DataFile, error)
	// Expired, if set, is asked before every attempt that would include the item, and again right
	// before its commit: true fails it with ErrExpired instead (a committer paused mid-commit
	// must not land files gc may take).
	Expired func() bool
}

// GroupCommit is one commit of many streams' requests to one table.
type GroupCommit struct {
	Table string
	// Items: at most one per stream (one mark per stream per commit); a second is refused.
	Items []GroupItem
	// Summary goes into the snapshot summary, over the keys CommitGroup derives.
	Summary iceberg.Properties
	// Props, if set, adds table properties to set and remove in each attempt's commit, given the
	// items the attempt includes (over the defaults: their streams' siglake.seen.*, the manifest
	// merge settings; marks.StreamProps prunes); the included streams' marks always win.
	Props func(t *table.Table, in []GroupItem) (set iceberg.Properties, remove []string)
	// Fence, if set, is asked right before every commit attempt; an error stops the group with it.
	Fence func() error
}

// ItemResult is what became of one GroupItem: an Outcome, or an Err (ErrMarkAhead, ErrRefused, a
// bad mark, or what stopped the whole group).
type ItemResult struct {
	Outcome Outcome
	Err     error
	// Prev is the stream's mark a Committed item's commit replaced (zero when it had none).
	Prev       marks.Mark
	SnapshotID int64 // Committed: the new snapshot; AlreadyCommitted: the head that showed it
	// MaybeCommitted: the item failed, but an attempt that included it has an unknown outcome,
	// so its files may be referenced and must not be deleted.
	MaybeCommitted bool
	// Recovered: AlreadyCommitted after an attempt of this group that included the item had an
	// unknown outcome: that attempt landed (its answer was lost), unless another committer
	// committed the same batch meanwhile.
	Recovered bool
}

// GroupResult is the outcome of every item, in the order of GroupCommit.Items.
type GroupResult struct {
	Items          []ItemResult
	Attempts       int
	MaybeCommitted bool // some item's MaybeCommitted
}

// CommitGroup commits every request whose segments the table does not hold yet in ONE append,
// with each included stream's mark moved in the same commit. Each attempt loads the table,
// re-reads the marks and re-derives every unresolved item (marks.CheckMark): Covers -> AlreadyCommitted,
// Inside -> ErrMarkAhead, Below -> included. The append is pinned to the head the marks were
// read from. A conflict or an unknown outcome leads to the next attempt, whose re-read marks show
// whether an earlier one landed (a commit is atomic: all its items or none). Data files are never
// rewritten or deleted here. The error is what stopped the group as a whole (staging, the fence,
// the context, attempts exhausted), also set on every item it left unresolved.
func (l *Lake) CommitGroup(ctx context.Context, g GroupCommit, retry Retry) (GroupResult, error) {
	r := newGroupRun(g)
	var lastErr error
	policy := retry.Backoff()
	full := l.fullWait("commit")
	waited := false // the attempt before waited for a full catalog (fullWait) instead of counting
	for attempt := 1; attempt <= max(1, retry.Attempts) && r.open() > 0; attempt++ {
		if attempt > 1 && !waited {
			if err := backoff.Sleep(ctx, policy.Wait(attempt-1, rand.Int64N)); err != nil {
				return r.end(attempt-1, fmt.Errorf("commit to %s: %w (last error: %v)", g.Table, err, lastErr))
			}
		}
		again, err := l.groupAttempt(ctx, r, attempt)
		if !again {
			return r.end(r.attempts, err)
		}
		lastErr = err
		// A commit refused for want of a connection applied nothing: made again, not counted.
		if waited = full.again(ctx, err); waited {
			attempt--
		}
	}
	if r.open() == 0 {
		return r.end(0, nil)
	}
	return r.end(retry.Attempts, lastErr)
}

// groupRun is the state of one CommitGroup across its attempts.
type groupRun struct {
	g        GroupCommit
	res      []ItemResult
	done     []bool
	files    [][]iceberg.DataFile // decoded at the first attempt including the item
	decoded  []bool
	attempts int // what the group's result reports when an attempt ends it
}

// newGroupRun refuses a stream's second item: one commit moves a stream's mark once.
func newGroupRun(g GroupCommit) *groupRun {
	n := len(g.Items)
	r := &groupRun{g: g, res: make([]ItemResult, n), done: make([]bool, n), files: make([][]iceberg.DataFile, n), decoded: make([]bool, n)}
	first := map[string]string{}
	for i, it := range g.Items {
		if id, dup := first[it.Stream]; dup {
			r.resolve(i, ItemResult{Err: fmt.Errorf("%w: stream %s has request %q in this group already (one mark move per stream and commit)", ErrRefused, it.Stream, id)})
			continue
		}
		first[it.Stream] = it.ID
	}
	return r
}

func (r *groupRun) resolve(i int, res ItemResult) { r.res[i], r.done[i] = res, true }

func (r *groupRun) fail(i int, err error) {
	r.resolve(i, ItemResult{Err: err, MaybeCommitted: r.res[i].MaybeCommitted})
}

func (r *groupRun) open() (n int) {
	for _, d := range r.done {
		if !d {
			n++
		}
	}
	return n
}

// end gives every unresolved item err and returns the result.
func (r *groupRun) end(attempts int, err error) (GroupResult, error) {
	out := GroupResult{Items: r.res, Attempts: attempts}
	for i := range r.res {
		if !r.done[i] {
			r.fail(i, err)
		}
		out.MaybeCommitted = out.MaybeCommitted || r.res[i].MaybeCommitted
	}
	return out, err
}

// groupAttempt is one load, mark check, stage and commit. again: the attempt failed in a way the
// next attempt may overcome (err is its cause); otherwise the group ends, with err if it failed.
func (l *Lake) groupAttempt(ctx context.Context, r *groupRun, attempt int) (again bool, err error) {
	name := r.g.Table
	defer l.lockTable(name)()
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return true, err
	}
	r.attempts = attempt
	in, prev := r.check(t)
	if len(in) == 0 {
		return false, nil
	}
	txn := t.NewTransaction()
	// Pin main to the snapshot the marks were read from: iceberg-go must not replay this append
	// on a newer head (commit.retry.num-retries), which would skip the mark check.
	if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
		return false, err
	}
	var files []iceberg.DataFile
	for _, i := range in {
		files = append(files, r.files[i]...)
	}
	// File names are fresh UUIDs, so the duplicate check (a walk of every manifest) buys nothing.
	if err := txn.AddDataFiles(ctx, files, r.summary(in), table.WithoutDuplicateCheck()); err != nil {
		return false, fmt.Errorf("stage append to %s: %w", name, err)
	}
	set, remove := r.props(t, in, l.mergeMinCount, time.Now())
	if err := txn.SetProperties(set); err != nil {
		return false, fmt.Errorf("stage mark of %s: %w", name, err)
	}
	if len(remove) > 0 {
		if err := txn.RemoveProperties(remove); err != nil {
			return false, fmt.Errorf("stage properties of %s: %w", name, err)
		}
	}
	if r.g.Fence != nil {
		if err := r.g.Fence(); err != nil {
			r.attempts = attempt - 1
			return false, err
		}
	}
	// Asked again at the last moment: staging reads manifests (a merge) outside the commit
	// deadline, and a committer paused there must not land an item gc's floor no longer covers.
	// The others are staged again without it.
	if r.expireStaged(in) {
		return true, fmt.Errorf("commit append to %s: a request grew too old while its commit was staged", name)
	}
	nt, err := txn.Commit(ctx)
	if err != nil {
		// Unknown outcome (a REST 5xx, a cut connection): the next attempt's mark re-read finds
		// out whether it landed, and the files must stay even if every attempt fails.
		unknown := IsCommitStateUnknown(err)
		for _, i := range in {
			r.res[i].MaybeCommitted = r.res[i].MaybeCommitted || unknown
		}
		return true, fmt.Errorf("commit append to %s: %w", name, err)
	}
	var snap int64 // none when the batch had no files (every row past retention) on a new table
	if cs := nt.CurrentSnapshot(); cs != nil {
		snap = cs.SnapshotID
	}
	for k, i := range in {
		r.resolve(i, ItemResult{Outcome: Committed, SnapshotID: snap, Prev: prev[k]})
	}
	return false, nil
}

// expireStaged fails the items of in that are too old now, and says whether any was.
func (r *groupRun) expireStaged(in []int) (any bool) {
	for _, i := range in {
		if it := r.g.Items[i]; it.Expired != nil && it.Expired() {
			r.fail(i, fmt.Errorf("table %s stream %s, batch %s..%s: %w", r.g.Table, it.Stream, it.First, it.Last, ErrExpired))
			any = true
		}
	}
	return any
}

// check re-derives every unresolved item from t's marks and returns those to include, with the
// marks their commit replaces.
func (r *groupRun) check(t *table.Table) (in []int, prev []marks.Mark) {
	props := t.Properties() // a copy of every stream's mark: once, not once per item
	for i, it := range r.g.Items {
		if r.done[i] {
			continue
		}
		cur, has, err := marks.MarkIn(props, it.Stream)
		if err != nil {
			r.fail(i, err)
			continue
		}
		switch marks.CheckMark(cur, has, it.First, it.Last) {
		case marks.MarkCovers:
			var snap int64
			if s := t.CurrentSnapshot(); s != nil {
				snap = s.SnapshotID
			}
			r.resolve(i, ItemResult{Outcome: AlreadyCommitted, SnapshotID: snap, Recovered: r.res[i].MaybeCommitted})
		case marks.MarkInside:
			r.fail(i, fmt.Errorf("table %s stream %s: mark %s, batch %s..%s: %w", r.g.Table, it.Stream, cur, it.First, it.Last, ErrMarkAhead))
		default:
			if it.Expired != nil && it.Expired() {
				r.fail(i, fmt.Errorf("table %s stream %s, batch %s..%s: %w", r.g.Table, it.Stream, it.First, it.Last, ErrExpired))
				continue
			}
			if !r.decoded[i] && it.Files != nil {
				files, err := it.Files(t)
				switch {
				case errors.Is(err, ErrNotNow):
					r.fail(i, fmt.Errorf("the data files of stream %s: %w", it.Stream, err))
					continue
				case err != nil:
					r.fail(i, fmt.Errorf("%w: the data files of stream %s: %v", ErrRefused, it.Stream, err))
					continue
				}
				r.files[i] = files
			}
			r.decoded[i] = true
			in, prev = append(in, i), append(prev, cur)
		}
	}
	return in, prev
}

// summary is the snapshot summary of a commit of items in: a lone item's stream and mark as a
// drain append has them, and counts only for a group (summaries of every retained snapshot live
// in each metadata.json).
func (r *groupRun) summary(in []int) iceberg.Properties {
	p := iceberg.Properties{}
	if len(in) == 1 {
		it := r.g.Items[in[0]]
		p[tableprops.SumStream], p[tableprops.SumMark] = it.Stream, it.Last.String()
	}
	if len(r.g.Items) > 1 {
		p[tableprops.SumGroupRequests] = strconv.Itoa(len(r.g.Items))
		p[tableprops.SumGroupStreams] = strconv.Itoa(len(in))
	}
	var rows int64
	var segs int
	for _, i := range in {
		rows, segs = rows+r.g.Items[i].Rows, segs+r.g.Items[i].Segments
	}
	if segs > 0 {
		p[tableprops.SumSegments] = strconv.Itoa(segs)
	}
	if rows > 0 {
		p[tableprops.SumRows] = strconv.FormatInt(rows, 10)
	}
	maps.Copy(p, r.g.Summary)
	return p
}

// props is what the commit of items in sets and removes: each included stream's seen (when
// stale) and the manifest merge settings (when they differ), then Props', then every included
// stream's mark. Both paths set seen, so a pod that falls back to direct commits keeps its stream
// from being pruned.
func (r *groupRun) props(t *table.Table, in []int, mergeMinCount int, now time.Time) (iceberg.Properties, []string) {
	items, streams := make([]GroupItem, len(in)), make([]string, len(in))
	for k, i := range in {
		items[k], streams[k] = r.g.Items[i], r.g.Items[i].Stream
	}
	set, _, _ := marks.StreamProps(t.Properties(), streams, now, 0, false)
	maps.Copy(set, MergeProps(t.Properties(), mergeMinCount))
	var remove []string
	if r.g.Props != nil {
		s, rm := r.g.Props(t, items)
		maps.Copy(set, s)
		remove = rm
	}
	for _, it := range items {
		set[marks.PropertyPrefix+it.Stream] = it.Last.String()
	}
	remove = slices.DeleteFunc(slices.Clone(remove), func(k string) bool { _, ok := set[k]; return ok })
	return set, remove
}
