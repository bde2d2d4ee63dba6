package sweep_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/internal/membudgettest"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/test/testenv"
)

// sweeper is a delete sweeper over e's lake with the process defaults, its metrics on reg.
func sweeper(e *testlake.Env) (*sweep.Sweeper, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	return &sweep.Sweeper{
		Cfg: sweep.Config{MaxFiles: 8, MaxBytes: 1024 << 20, TargetFileBytes: 256 << 20, Sweeps: true,
			Metadata: func(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }},
		Lake: e.Lake, Metrics: sweep.NewMetrics(reg), Now: time.Now,
		Rewriter: filtered.Rewriter{Executor: &rewrite.Executor{Lake: e.Lake, Now: time.Now}, RewriteMetrics: rewrite.NewMetrics(reg), Log: e.Log},
	}, reg
}

// sweepAll is `siglake delete-sweep --apply` over every table.
func sweepAll(t *testing.T, e *testlake.Env) []sweep.Report {
	t.Helper()
	s, _ := sweeper(e)
	reps, err := s.SweepTables(context.Background(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	return reps
}

// TestDeleteSweepRemovesExactlyTheMatchingRows: a whole-file request removes the file, a partial
// one rewrites its file without the rows, a request that matches nothing rewrites nothing; the
// table (through iceberg-go) holds exactly the other rows, DuckDB finds no matching row in the
// live files, untouched files keep their paths, and every request ends done with its counts.
func TestDeleteSweepRemovesExactlyTheMatchingRows(t *testing.T) {
	e := testlake.New(t)
	recs := e.DeleteTable(6)
	before := testlake.LiveByPath(t, e.Lake)
	if len(before) != 6 {
		t.Fatalf("setup: %d files, want 6", len(before))
	}
	rs := []deletes.Request{
		testlake.Record(t, e.Lake, deletes.Request{From: testlake.Hour(2), To: testlake.Hour(3), Reason: "whole segment 1"}),
		testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing", "auth"}}}, From: testlake.Hour(4), To: testlake.Hour(5)}),
		testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}, {Column: "severity", Values: []string{"nosuch"}}}}),
	}
	want, counts := testlake.ExpectAfter(recs, rs)
	if counts[rs[0].ID] != 1500 || counts[rs[1].ID] == 0 || counts[rs[2].ID] != 0 {
		t.Fatalf("setup: requests match %v rows", counts)
	}
	s, reg := sweeper(e)
	rep, err := s.Sweep(context.Background(), "events", sweep.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	// The whole-file request is done at once (its only file is gone); the others wait for the
	// next sweep to examine the rewritten file.
	if rep.Rewritten != 2 || rep.Outcome != "deleted" || len(rep.Done) != 1 || rep.Done[0] != rs[0].ID {
		t.Fatalf("first sweep: rewrote %d, outcome %s, done %v", rep.Rewritten, rep.Outcome, rep.Done)
	}
	rep, err = s.Sweep(context.Background(), "events", sweep.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 0 || len(rep.Done) != 2 {
		t.Fatalf("second sweep: rewrote %d, done %v; want 0 and the other two", rep.Rewritten, rep.Done)
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	after := testlake.LiveByPath(t, e.Lake)
	if len(after) != 5 {
		t.Fatalf("%d live files, want 5 (one removed whole, one replaced)", len(after))
	}
	kept := 0
	for p, f := range after {
		if _, ok := before[p]; ok {
			kept++
		} else if f.Generation != 0 {
			t.Fatalf("delete-task output %s has generation %d, want 0", p, f.Generation)
		}
	}
	if kept != 4 {
		t.Fatalf("%d files kept their path, want 4 (the files without matching rows are not rewritten)", kept)
	}
	stored := testlake.StoredRequests(t, e.Lake)
	for _, r := range rs {
		st := stored[r.ID]
		if st.State != deletes.Done || st.DoneSnapshotID == 0 || st.DoneAt == nil || st.RowsDeleted != counts[r.ID] {
			t.Fatalf("request %s stored as %+v; want done with %d rows", r.ID, st, counts[r.ID])
		}
	}
	if st := stored[rs[0].ID]; st.FilesRewritten != 1 {
		t.Fatalf("request %s rewrote %d files, want 1", rs[0].ID, st.FilesRewritten)
	}
	if got := promtest.Counter(t, reg, "siglake_delete_rows_deleted_total", ""); got != float64(counts[rs[0].ID]+counts[rs[1].ID]) {
		t.Fatalf("siglake_delete_rows_deleted_total = %v", got)
	}

	// An independent reader finds no matching row in the live files.
	tbl, err := e.Lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files := testenv.TableFiles(t, tbl, testenv.S3Env{})
	duck := testenv.DuckDB(t)
	if duck == nil {
		return
	}
	list := "['" + strings.Join(files, "','") + "']"
	us := func(h int) int64 { return testlake.DeleteBase.Add(time.Duration(h) * time.Hour).UnixMicro() }
	q := fmt.Sprintf(`SELECT count(*) AS n, (SELECT count(*) FROM read_parquet(%s)) AS total FROM read_parquet(%s)
		WHERE (epoch_us("timestamp") >= %d AND epoch_us("timestamp") < %d)
		   OR (service IN ('billing','auth') AND epoch_us("timestamp") >= %d AND epoch_us("timestamp") < %d)`,
		list, list, us(2), us(3), us(4), us(5))
	rows := duck.Query(q)
	if fmt.Sprint(rows[0]["n"]) != "0" || fmt.Sprint(rows[0]["total"]) != fmt.Sprint(want.Rows) {
		t.Fatalf("DuckDB: %v matching rows of %v, want 0 of %d", rows[0]["n"], rows[0]["total"], want.Rows)
	}
}

// TestDeleteRequestsSurviveExpiry: requests live in table properties, which snapshot expiry keeps.
func TestDeleteRequestsSurviveExpiry(t *testing.T) {
	e := testlake.New(t)
	recs := e.DeleteTable(3)
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	// More commits, then expire all but the newest snapshot.
	e.DeleteTable(0)
	if err := e.Lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	tbl, _ := e.Lake.LoadTable(context.Background(), "events")
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	if st := testlake.StoredRequests(t, e.Lake)[r.ID]; st.State != deletes.Pending {
		t.Fatalf("request after expiry: %+v", st)
	}
	want, _ := testlake.ExpectAfter(recs, []deletes.Request{r})
	sweepAll(t, e)
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	if st := testlake.StoredRequests(t, e.Lake)[r.ID]; st.State != deletes.Done {
		t.Fatalf("request after sweep: %+v", st)
	}
}

// TestDeleteRewriteLosesToConcurrentRewrite: a maintenance rewrite replaces the file after the
// sweep read it; the delete commit fails validation, its outputs are removed, no row is lost,
// and the next sweep deletes the rows from the new file.
func TestDeleteRewriteLosesToConcurrentRewrite(t *testing.T) {
	e := testlake.New(t)
	recs := e.DeleteTable(2)
	all, _ := testlake.ExpectAfter(recs, nil)
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}, To: testlake.Hour(1)})
	stale, err := e.Lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := lake.LiveFiles(context.Background(), stale)
	victim := files[0].DataFile

	// The concurrent maintenance rewrite: same rows, new file, generation 1.
	dir := victim.FilePath()[:strings.LastIndex(victim.FilePath(), "/")]
	ex := &rewrite.Executor{Lake: e.Lake, Now: time.Now}
	if out := ex.Run(context.Background(), stale, rewrite.Job{Kind: "l0", Inputs: files[:1], Generation: 1, Dir: dir}); out.Status != rewrite.Committed {
		t.Fatalf("concurrent rewrite: %s %v", out.Status, out.Err)
	}

	s, _ := sweeper(e)
	_, _, _, err = sweep.RewriteFile(s, context.Background(), stale, victim, []deletes.Request{r}, e.Log)
	if err == nil || !strings.Contains(err.Error(), rewrite.ErrConflict.Error()) {
		t.Fatalf("delete rewrite over a replaced file: %v, want a conflict", err)
	}
	if got := e.Sum("events"); got != all {
		t.Fatalf("after the lost race the table holds %+v, want every row %+v", got, all)
	}
	if st := testlake.StoredRequests(t, e.Lake)[r.ID]; st.State != deletes.Pending || st.RowsDeleted != 0 {
		t.Fatalf("request after the lost race: %+v", st)
	}
	// Outputs of the lost rewrite were removed: only live files remain on disk.
	onDisk, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(dir, "file://"), "*.parquet"))
	live := testlake.LiveByPath(t, e.Lake)
	for _, p := range onDisk {
		if _, ok := live["file://"+p]; !ok && p != strings.TrimPrefix(victim.FilePath(), "file://") {
			t.Fatalf("file %s is neither live nor the replaced input: an orphan of the lost rewrite", p)
		}
	}
	want, _ := testlake.ExpectAfter(recs, []deletes.Request{r})
	sweepAll(t, e)
	if got := e.Sum("events"); got != want {
		t.Fatalf("after the retry the table holds %+v, want %+v", got, want)
	}
}

// TestDeleteRequestsRejected: bad requests name the input and what is accepted, and record nothing.
func TestDeleteRequestsRejected(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	for _, c := range []struct {
		r    deletes.Request
		want string
	}{
		{deletes.Request{}, "needs at least one"},
		{deletes.Request{Where: []rows.Condition{{Column: "user_id", Values: []string{"alice"}}}}, `column "user_id": the table has no such top-level column; columns: timestamp, service`},
		{deletes.Request{Where: []rows.Condition{{Column: "attributes", Values: []string{"x"}}}}, `column "attributes" has type map<string, string>: conditions accept string, int, long and boolean columns`},
		{deletes.Request{Where: []rows.Condition{{Column: "timestamp", Values: []string{"1"}}}}, "with --from/--to"},
		{deletes.Request{From: "yesterday"}, `--from "yesterday": accepted: RFC 3339`},
		{deletes.Request{From: testlake.Hour(3), To: testlake.Hour(2)}, "is not before --to"},
		{deletes.Request{Where: []rows.Condition{{Column: "service"}}}, "at least one value"},
		{deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{""}}}}, `column "service": an empty value`},
		{deletes.Request{From: "2026-11-29T00:00:00.0000005Z"}, "stored to the microsecond"},
	} {
		_, err := deletes.Record(context.Background(), e.Lake, "events", c.r, time.Now())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: error %v, want it to contain %q", c.r, err, c.want)
		}
	}
	if n := len(testlake.StoredRequests(t, e.Lake)); n != 0 {
		t.Fatalf("%d requests stored after bad input", n)
	}
}

// TestDeleteRequestsConcurrentRecord: writers recording at once keep every request (the catalog's
// compare-and-swap on the table metadata, retried on fresh metadata).
func TestDeleteRequestsConcurrentRecord(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	l2, err := lake.Open(context.Background(), e.Cfg) // a second process's catalog handle
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for w, l := range []*lake.Lake{e.Lake, l2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				_, err := deletes.Record(context.Background(), l, "events",
					deletes.Request{Where: []rows.Condition{{Column: "host", Values: []string{fmt.Sprintf("w%d-%d", w, i)}}}}, time.Now())
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(testlake.StoredRequests(t, e.Lake)); n != 16 {
		t.Fatalf("%d requests stored, want 16", n)
	}
}

// TestStoredRequestsRevalidated: a request written straight into the table properties (by another
// tool, or before a schema change) is checked before every sweep. One that Record would refuse
// (here: no condition and no range, which matches every row), or one stored under another
// request's key, is reported as invalid and never executed.
func TestStoredRequestsRevalidated(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(3)
	before := e.Sum("events")
	tbl, err := e.Lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{
		"siglake.delete.manual": `{"version":1,"id":"manual","state":"pending","where":[]}`,
		"siglake.delete.other":  `{"version":1,"id":"elsewhere","state":"pending","where":[{"column":"service","values":["billing"]}]}`,
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, _ := sweeper(e)
	reps, err := s.SweepTables(context.Background(), nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Sum("events"); got != before {
		t.Fatalf("table %+v after the sweep, want it untouched %+v", got, before)
	}
	invalid := strings.Join(reps[len(reps)-1].Invalid, "\n")
	for _, want := range []string{"siglake.delete.manual: a deletion request needs at least one", `siglake.delete.other: holds request id "elsewhere"`} {
		if !strings.Contains(invalid, want) {
			t.Errorf("invalid requests reported %q, want %q", invalid, want)
		}
	}
}

// TestDoneRequestsExpire: the commit that completes a request removes done requests older than
// deletes.DoneRetention and keeps younger ones.
func TestDoneRequestsExpire(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	old, young := time.Now().Add(-deletes.DoneRetention-time.Hour), time.Now().Add(-time.Hour)
	var props = iceberg.Properties{}
	for id, at := range map[string]time.Time{"old": old, "young": young} {
		r := deletes.Request{Version: 1, ID: id, State: deletes.Done, DoneAt: &at,
			Where: []rows.Condition{{Column: "service", Values: []string{"nothing"}}}}
		v, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		props[deletes.Key(id)] = v
	}
	tbl, err := e.Lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	sweepAll(t, e)
	stored := testlake.StoredRequests(t, e.Lake)
	if _, ok := stored["old"]; ok {
		t.Error("a request done longer ago than the retention is still stored")
	}
	if _, ok := stored["young"]; !ok {
		t.Error("a request done within the retention was removed")
	}
	if stored[r.ID].State != deletes.Done {
		t.Errorf("the new request is %s, want done", stored[r.ID].State)
	}
}

func TestPartitionOf(t *testing.T) {
	for path, want := range map[string]string{
		"s3://b/wh/siglake.db/events/data/timestamp_day=2026-11-29/g0000-x.parquet": "2026-11-29",
		"file:///wh/events/data/timestamp_day=2026-01-02/g0003-y.parquet":           "2026-01-02",
		"file:///wh/events/data/g0000-z.parquet":                                    "",
		"g0000-z.parquet":                                                           "",
	} {
		if got := sweep.PartitionOf(path); got != want {
			t.Errorf("partition of %s = %q, want %q", path, got, want)
		}
	}
}

// TestDeleteSweepLeavesSetAsideFiles: a candidate set aside after failed rewrites is not read; the
// sweep goes on with the other files, and the request stays pending (the set-aside file may hold
// its rows).
func TestDeleteSweepLeavesSetAsideFiles(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(3)
	r := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}, Reason: "t"})
	var bad string
	var good lake.File
	for p, f := range testlake.LiveByPath(t, e.Lake) {
		if bad == "" {
			bad = p
		} else {
			good = f
		}
	}
	// A request whose rows can only be in a good file is done whatever the set-aside file holds.
	at := func(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }
	other := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"auth"}}},
		From: at(good.MinTime), To: at(good.MaxTime + 1), Reason: "t"})
	if err := os.WriteFile(testlake.LocalPath(bad), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.Lake.SetSkipped(context.Background(), "events", lake.Skipped{Path: bad, Class: "corrupt", Cause: "test", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s, _ := sweeper(e)
	reps, err := s.SweepTables(context.Background(), []string{"events"}, true)
	if err != nil {
		t.Fatalf("sweep over a set-aside file: %v", err)
	}
	rep := reps[0]
	if rep.SetAside != 1 || rep.Rewritten < 1 {
		t.Fatalf("set aside %d, rewritten %d; want 1 and the other 2", rep.SetAside, rep.Rewritten)
	}
	if st := testlake.StoredRequests(t, e.Lake)[r.ID]; st.State != deletes.Pending {
		t.Fatalf("request %s is %s with a set-aside candidate unread, want pending", r.ID, st.State)
	}
	if st := testlake.StoredRequests(t, e.Lake)[other.ID]; st.State != deletes.Done {
		t.Fatalf("request %s, which the set-aside file cannot hold rows of, is %s: one set-aside file must not hold back every request", other.ID, st.State)
	}
}

// TestDeleteSweepShutdownWhileWaitingForMemory: a sweep whose delete-task rewrite waits for memory
// (a drain holds the whole budget) and is shut down there is no failed sweep and no failed rewrite.
func TestDeleteSweepShutdownWhileWaitingForMemory(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	s, reg := sweeper(e)
	var rep sweep.Report
	membudgettest.ShutDownWhileWaiting(t, &s.Executor.Reserve, func(ctx context.Context) {
		rep, _ = s.Sweep(ctx, "events", sweep.Options{Apply: true})
	})
	if rep.Outcome == "failed" {
		t.Errorf("a shutdown while waiting for memory reported a failed sweep")
	}
	promtest.NoneCounted(t, reg, "a shutdown", "failed", "siglake_delete_sweeps_total", "siglake_compactor_rewrites_total")
}

// TestDeleteSweepSplitFile: iceberg-go's scan planning splits a file above read.split.target-size
// (128 MiB by default) into one task per row group. The sweep still takes the file once: a dry
// run counts its rows once, and --apply rewrites it once with no conflict with itself, and a
// whole-file request is done in the same sweep.
func TestDeleteSweepSplitFile(t *testing.T) {
	e := testlake.New(t)
	rec, tasks := e.SplitFile(1, testlake.DeleteBase, 4000, time.Millisecond, 1000)
	if tasks != 4 {
		t.Fatalf("scan planning made %d tasks of the 4-row-group file, want 4: the test no longer splits it", tasks)
	}
	// What DuckDB is given in the tests lists the file once too.
	if files := testenv.TableFiles(t, e.Table("events"), testenv.S3Env{}); len(files) != 1 {
		t.Fatalf("testenv.TableFiles listed %v for one data file", files)
	}
	part := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	want, counts := testlake.ExpectAfter([]arrow.RecordBatch{rec}, []deletes.Request{part})
	if counts[part.ID] == 0 || counts[part.ID] == 4000 {
		t.Fatalf("setup: the request matches %d of 4000 rows", counts[part.ID])
	}
	s, reg := sweeper(e)
	ctx := context.Background()
	rep, err := s.Sweep(ctx, "events", sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Candidates) != 1 || rep.ByRequest[part.ID] != counts[part.ID] {
		t.Fatalf("dry run: %d candidates, %d matching rows; want 1 and %d", len(rep.Candidates), rep.ByRequest[part.ID], counts[part.ID])
	}
	rep, err = s.Sweep(ctx, "events", sweep.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 1 || rep.Conflicts != 0 || rep.Outcome != "deleted" {
		t.Fatalf("apply: rewrote %d, %d conflicts, outcome %s; want 1, 0, deleted", rep.Rewritten, rep.Conflicts, rep.Outcome)
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	if got := promtest.Counter(t, reg, "siglake_delete_sweeps_total", "conflict"); got != 0 {
		t.Fatalf("siglake_delete_sweeps_total{outcome=conflict} = %v", got)
	}

	// A request for every row: the split file goes whole and the request is done at once.
	e2 := testlake.New(t)
	rec2, _ := e2.SplitFile(2, testlake.DeleteBase, 4000, time.Millisecond, 1000)
	all := testlake.Record(t, e2.Lake, deletes.Request{From: testlake.Hour(0), To: testlake.Hour(1), AllRows: true})
	if _, counts := testlake.ExpectAfter([]arrow.RecordBatch{rec2}, []deletes.Request{all}); counts[all.ID] != 4000 {
		t.Fatalf("setup: the request matches %d of 4000 rows", counts[all.ID])
	}
	s2, _ := sweeper(e2)
	rep, err = s2.Sweep(ctx, "events", sweep.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 1 || rep.Conflicts != 0 || rep.Deleted != 4000 || len(rep.Done) != 1 {
		t.Fatalf("apply: rewrote %d, %d conflicts, %d rows deleted, done %v; want 1, 0, 4000, [%s]", rep.Rewritten, rep.Conflicts, rep.Deleted, rep.Done, all.ID)
	}
}
