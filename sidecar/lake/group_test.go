package lake_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// openGroupLake opens a lake on an embedded SQLite catalog and a local warehouse in dir.
func openGroupLake(t *testing.T, dir string) *lake.Lake { return openMergeLake(t, dir, 0) }

// item writes a data file of segments first..last (seqs of incarnation 1) of stream and returns
// its group item and its append.
func item(t *testing.T, l *lake.Lake, stream string, first, last uint64) (lake.GroupItem, lake.AppendRequest) {
	t.Helper()
	req := lake.WriteBatch(t, l, last)
	req.Stream, req.First = stream, marks.Mark{Incarnation: 1, Seq: first}
	files := req.Files
	return lake.GroupItem{ID: stream + "-" + req.Last.String(), Stream: stream, First: req.First, Last: req.Last, Rows: 200, Segments: int(last - first + 1),
		Files: func(*table.Table) ([]iceberg.DataFile, error) { return files, nil }}, req
}

// state is what a test checks after a group: the table's snapshots, live files and marks.
type state struct {
	snapshots, files int
	marks            map[string]marks.Mark
	head             *table.Snapshot
}

func stateOf(t *testing.T, l *lake.Lake) state {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := marks.Marks(tbl)
	if err != nil {
		t.Fatal(err)
	}
	return state{len(tbl.Metadata().Snapshots()), len(files), ms, tbl.CurrentSnapshot()}
}

func mark(seq uint64) marks.Mark { return marks.Mark{Incarnation: 1, Seq: seq} }

// TestCommitGroupOutcomes: one group of four streams and a second request of one of them. The
// stream already committed and the one whose mark is inside its batch go in with nothing, the two
// new ones go in together in one snapshot that moves both marks, the second request is refused.
func TestCommitGroupOutcomes(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	_, a := item(t, l, "a", 1, 1)
	_, b := item(t, l, "b", 1, 2)
	for _, req := range []lake.AppendRequest{a, b} {
		if _, err := l.CommitAppend(ctx, req, lake.QuickRetry); err != nil {
			t.Fatal(err)
		}
	}
	before := stateOf(t, l)
	ia, _ := item(t, l, "a", 1, 1) // committed already (a lost answer resent)
	ib, _ := item(t, l, "b", 2, 3) // b's mark 1:2 is inside 2..3: another writer
	ic, _ := item(t, l, "c", 1, 4)
	id, _ := item(t, l, "d", 3, 5)
	ic2, _ := item(t, l, "c", 5, 5)
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia, ib, ic, id, ic2}}, lake.QuickRetry)
	if err != nil {
		t.Fatal(err)
	}
	after := stateOf(t, l)
	it := res.Items
	if it[0].Outcome != lake.AlreadyCommitted || !errors.Is(it[1].Err, lake.ErrMarkAhead) ||
		it[2].Outcome != lake.Committed || it[3].Outcome != lake.Committed || !errors.Is(it[4].Err, lake.ErrRefused) {
		t.Fatalf("outcomes %+v", it)
	}
	if res.Attempts != 1 || res.MaybeCommitted {
		t.Fatalf("result %+v", res)
	}
	if after.snapshots != before.snapshots+1 || after.files != before.files+2 {
		t.Fatalf("%d snapshots, %d files; before %d, %d: want one snapshot of two files", after.snapshots, after.files, before.snapshots, before.files)
	}
	if it[2].SnapshotID != after.head.SnapshotID || it[3].SnapshotID != after.head.SnapshotID || it[2].Prev != (marks.Mark{}) {
		t.Fatalf("committed items %+v %+v, head %d", it[2], it[3], after.head.SnapshotID)
	}
	want := map[string]marks.Mark{"a": mark(1), "b": mark(2), "c": mark(4), "d": mark(5)}
	for s, m := range want {
		if after.marks[s] != m {
			t.Errorf("mark of %s = %s, want %s", s, after.marks[s], m)
		}
	}
	sum := after.head.Summary.Properties
	if sum["siglake.group.requests"] != "5" || sum["siglake.group.streams"] != "2" || sum["siglake.segments"] != "7" || sum["siglake.stream"] != "" {
		t.Fatalf("summary %v", sum)
	}
}

// TestCommitGroupLostResponse: the catalog applies the group's commit and the answer is lost.
// The next attempt re-reads the marks: every item is already committed, nothing is doubled.
func TestCommitGroupLostResponse(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	var items []lake.GroupItem
	for _, s := range []string{"a", "b", "c"} {
		i, _ := item(t, l, s, 1, 2)
		items = append(items, i)
	}
	before := stateOf(t, l)
	var lost atomic.Int32
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		m, loc, err := next(ctx, id, reqs, ups)
		if err == nil && lost.Add(1) == 1 {
			return nil, "", errors.New("read tcp: connection reset by peer (the commit went through; its response did not)")
		}
		return m, loc, err
	})
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: items}, lake.QuickRetry)
	if err != nil {
		t.Fatal(err)
	}
	after := stateOf(t, l)
	for i, r := range res.Items {
		if r.Outcome != lake.AlreadyCommitted || r.Err != nil || r.SnapshotID != after.head.SnapshotID {
			t.Fatalf("item %d: %+v, want already_committed at the head", i, r)
		}
	}
	if res.Attempts != 2 || lost.Load() != 1 {
		t.Fatalf("%d attempts, %d responses lost", res.Attempts, lost.Load())
	}
	if after.snapshots != before.snapshots+1 || after.files != before.files+3 {
		t.Fatalf("%d snapshots, %d files; before %d, %d: the lost response doubled or dropped the group", after.snapshots, after.files, before.snapshots, before.files)
	}
}

// TestCommitGroupRederives: between the group's load and its commit another process commits
// stream a's batch and part of stream b's. The pinned commit conflicts; the next attempt finds a
// already committed and b's mark inside its batch, and commits c alone.
func TestCommitGroupRederives(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openGroupLake(t, dir)
	other := openGroupLake(t, dir) // another process on the same catalog
	ia, a := item(t, l, "a", 1, 2)
	ib, _ := item(t, l, "b", 1, 3)
	ic, _ := item(t, l, "c", 1, 1)
	_, b := item(t, l, "b", 1, 2)
	before := stateOf(t, l)
	var raced atomic.Bool
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if raced.CompareAndSwap(false, true) {
			for _, req := range []lake.AppendRequest{a, b} {
				if _, err := other.CommitAppend(ctx, req, lake.QuickRetry); err != nil {
					t.Errorf("the other process: %v", err)
				}
			}
		}
		return next(ctx, id, reqs, ups)
	})
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia, ib, ic}}, lake.QuickRetry)
	if err != nil {
		t.Fatal(err)
	}
	it := res.Items
	if it[0].Outcome != lake.AlreadyCommitted || !errors.Is(it[1].Err, lake.ErrMarkAhead) || it[2].Outcome != lake.Committed || res.Attempts != 2 {
		t.Fatalf("%d attempts, outcomes %+v", res.Attempts, it)
	}
	after := stateOf(t, l)
	if after.snapshots != before.snapshots+3 || after.files != before.files+3 {
		t.Fatalf("%d snapshots, %d files; before %d, %d: want the other's two and the group's one", after.snapshots, after.files, before.snapshots, before.files)
	}
	if sum := after.head.Summary.Properties; sum["siglake.stream"] != "c" || sum["siglake.group.streams"] != "1" {
		t.Fatalf("the group's snapshot: %v", sum)
	}
	if after.marks["a"] != mark(2) || after.marks["b"] != mark(2) || after.marks["c"] != mark(1) {
		t.Fatalf("marks %v", after.marks)
	}
}

// TestCommitGroupFence: a fence that fails before the second attempt stops the group with its
// error, set on every unresolved item; the conflicted first attempt committed nothing.
func TestCommitGroupFence(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	ia, _ := item(t, l, "a", 1, 1)
	ib, _ := item(t, l, "b", 1, 1)
	before := stateOf(t, l)
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		return nil, "", errors.New("requirement failed: branch main has changed")
	})
	fenced := errors.New("claim fenced")
	var asked int
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia, ib}, Fence: func() error {
		if asked++; asked > 1 {
			return fenced
		}
		return nil
	}}, lake.QuickRetry)
	if !errors.Is(err, fenced) || asked != 2 || res.Attempts != 1 || res.MaybeCommitted {
		t.Fatalf("error %v after %d fence checks, result %+v", err, asked, res)
	}
	for i, r := range res.Items {
		if !errors.Is(r.Err, fenced) || r.Outcome != "" {
			t.Fatalf("item %d: %+v, want the fence's error", i, r)
		}
	}
	if after := stateOf(t, l); after.snapshots != before.snapshots || len(after.marks) != 0 {
		t.Fatalf("committed past the fence: %+v", after)
	}
	if !strings.Contains(err.Error(), "claim fenced") {
		t.Fatal(err)
	}
}

// TestTableLockSerialisesCommits: one Lake's group commits and replaces of a table take turns:
// none of them meets a conflict from the other, and every one commits on its first attempt.
func TestTableLockSerialisesCommits(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	const rounds = 6
	items := make([]lake.GroupItem, rounds)
	for i := range items {
		items[i], _ = item(t, l, "s", uint64(i+1), uint64(i+1))
	}
	// A chain of replaces of stream r's file by a fresh one: each stages on the head it loads.
	first, firstReq := item(t, l, "r", 1, 1)
	repl := make([][]iceberg.DataFile, rounds)
	for i := range repl {
		_, req := item(t, l, "r", 1, 1)
		repl[i] = req.Files
	}
	if _, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{first}}, lake.QuickRetry); err != nil {
		t.Fatal(err)
	}
	var conflicts atomic.Int32
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		m, loc, err := next(ctx, id, reqs, ups)
		if err != nil && lake.IsConflict(err) {
			conflicts.Add(1)
		}
		return m, loc, err
	})
	errs := make(chan error, 2*rounds)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for _, it := range items {
			res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{it}}, lake.Retry{Attempts: 1})
			if err == nil && res.Attempts != 1 {
				err = fmt.Errorf("group commit took %d attempts", res.Attempts)
			}
			errs <- err
		}
	}()
	go func() {
		defer wg.Done()
		old := firstReq.Files
		for _, added := range repl {
			_, err := l.CommitReplace(ctx, "events", old, added, nil, nil)
			old = added
			errs <- err
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := conflicts.Load(); n != 0 {
		t.Fatalf("%d commits conflicted inside one Lake", n)
	}
	if got := stateOf(t, l).marks["s"]; got != mark(rounds) {
		t.Fatalf("mark of s = %s, want %s", got, mark(rounds))
	}
}

// TestCommitGroupSeenAndPruning: a commit moving a stream's mark writes its siglake.seen.* (the
// direct path too), rewrites it once over an hour old, and a group whose Props prunes (what the
// committer's hourly tick plugs in) removes a long-silent stream's mark and seen in the same
// commit as the others' marks, recording siglake.marks-pruned.
func TestCommitGroupSeenAndPruning(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	seen := func(stream string) string {
		tbl, err := l.LoadTable(ctx, "events")
		if err != nil {
			t.Fatal(err)
		}
		return tbl.Properties()[marks.SeenPrefix+stream]
	}
	_, gone := item(t, l, "gone", 1, 1)
	start := time.Now()
	if _, err := l.CommitAppend(ctx, gone, lake.QuickRetry); err != nil {
		t.Fatal(err)
	}
	if v := seen("gone"); v == "" || v < strconv.FormatInt(start.Unix(), 10) {
		t.Fatalf("seen of a direct commit %q, want about %d", v, start.Unix())
	}
	const age = 7 * 24 * time.Hour
	old := strconv.FormatInt(start.Add(-age-2*marks.SeenRefresh).Unix(), 10)
	if err := l.SetProperty(ctx, "events", marks.SeenPrefix+"gone", old, false); err != nil {
		t.Fatal(err)
	}
	ia, _ := item(t, l, "a", 1, 1)
	var pruned int
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia},
		Props: func(tbl *table.Table, in []lake.GroupItem) (iceberg.Properties, []string) {
			streams := make([]string, len(in))
			for i, it := range in {
				streams[i] = it.Stream
			}
			set, remove, n := marks.StreamProps(tbl.Properties(), streams, time.Now(), age, true)
			pruned = n
			return set, remove
		}}, lake.QuickRetry)
	if err != nil || res.Items[0].Outcome != lake.Committed {
		t.Fatalf("group: %+v, %v", res, err)
	}
	after := stateOf(t, l)
	if _, ok := after.marks["gone"]; ok || pruned != 1 || seen("gone") != "" {
		t.Fatalf("pruned %d; marks %v, seen of gone %q: want gone's mark and seen removed", pruned, after.marks, seen("gone"))
	}
	if after.marks["a"] != mark(1) || seen("a") == "" {
		t.Fatalf("marks %v, seen of a %q: want a's mark and seen", after.marks, seen("a"))
	}
	tbl, err := l.LoadTable(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	before, ok, err := marks.PrunedBefore(tbl.Properties())
	if err != nil || !ok || !before.After(start.Add(-age-2*marks.SeenRefresh)) || before.After(start.Add(-age)) {
		t.Fatalf("PrunedBefore = %s, %v, %v", before, ok, err)
	}
}

// TestCommitGroupExpiresBetweenAttempts: an item that grows too old while its group retries (a
// committer paused mid-commit, then a conflict) is failed with ErrExpired before the next attempt,
// so its files never land after gc may have taken them; the other items still commit.
func TestCommitGroupExpiresBetweenAttempts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l := openGroupLake(t, dir)
	other := openGroupLake(t, dir)
	ia, _ := item(t, l, "a", 1, 2)
	ib, _ := item(t, l, "b", 1, 2)
	_, oc := item(t, l, "c", 1, 1)
	var old, raced atomic.Bool
	ia.Expired = old.Load
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if raced.CompareAndSwap(false, true) {
			if _, err := other.CommitAppend(ctx, oc, lake.QuickRetry); err != nil { // the head moves: a conflict
				t.Errorf("the other process: %v", err)
			}
			old.Store(true) // and the committer "slept" past the age bound meanwhile
		}
		return next(ctx, id, reqs, ups)
	})
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia, ib}}, lake.QuickRetry)
	if err != nil {
		t.Fatal(err)
	}
	if it := res.Items; !errors.Is(it[0].Err, lake.ErrExpired) || it[1].Outcome != lake.Committed || res.Attempts != 2 {
		t.Fatalf("%d attempts, outcomes %+v: want a expired, b committed", res.Attempts, it)
	}
	if m := stateOf(t, l).marks; m["a"] != (marks.Mark{}) || m["b"] != mark(2) {
		t.Fatalf("marks %v: a must not move", m)
	}
}

// TestCommitGroupExpiresWhileStaged: an item that grows too old between its mark check and the
// commit (a committer paused while staging) is not committed; the others are, in the next attempt.
func TestCommitGroupExpiresWhileStaged(t *testing.T) {
	ctx := context.Background()
	l := openGroupLake(t, t.TempDir())
	ia, _ := item(t, l, "a", 1, 2)
	ib, _ := item(t, l, "b", 1, 2)
	var asked atomic.Int32
	ia.Expired = func() bool { return asked.Add(1) > 1 } // young at the check, old at the commit
	res, err := l.CommitGroup(ctx, lake.GroupCommit{Table: "events", Items: []lake.GroupItem{ia, ib}}, lake.QuickRetry)
	if err != nil {
		t.Fatal(err)
	}
	if it := res.Items; !errors.Is(it[0].Err, lake.ErrExpired) || it[1].Outcome != lake.Committed {
		t.Fatalf("outcomes %+v: want a expired, b committed", it)
	}
	if m := stateOf(t, l).marks; m["a"] != (marks.Mark{}) || m["b"] != mark(2) {
		t.Fatalf("marks %v: a must not move", m)
	}
}
