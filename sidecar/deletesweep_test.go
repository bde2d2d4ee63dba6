package sidecar

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
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	dto "github.com/prometheus/client_model/go"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

var delBase = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// deleteTable drains `segments` one-file commits of 1,500 rows, segment i at delBase + 2h*i (no
// late rows, so the files are disjoint), and returns the generated records (released at cleanup).
func deleteTable(t *testing.T, e *env, segments int) []arrow.RecordBatch {
	t.Helper()
	w, err := localwal.NewWriter(e.cfg.WALDir, localwal.WriterOptions{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: 42})
	var recs []arrow.RecordBatch
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, delBase.Add(time.Duration(i)*2*time.Hour), 1500, time.Millisecond)
		recs = append(recs, rec)
		if err := w.Append("events", rec); err != nil {
			t.Fatal(err)
		}
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	return recs
}

// rowMatch is the test's own evaluation of a request on a generated row.
func rowMatch(rec arrow.RecordBatch, i int, r deletes.Request) bool {
	for _, c := range r.Where {
		col := rec.Column(rec.Schema().FieldIndices(c.Column)[0]).(*array.String)
		if col.IsNull(i) || !contains(c.Values, col.Value(i)) {
			return false
		}
	}
	ts := int64(rec.Column(0).(*array.Timestamp).Value(i))
	if r.From != "" {
		f, _ := deletes.ParseTime("", r.From)
		if ts < f.UnixMicro() {
			return false
		}
	}
	if r.To != "" {
		to, _ := deletes.ParseTime("", r.To)
		if ts >= to.UnixMicro() {
			return false
		}
	}
	return true
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

// expectAfter fingerprints the rows of recs no request matches, and counts the rows each matches
// (a row counts for the first request that matches, as the sweep counts).
func expectAfter(recs []arrow.RecordBatch, rs []deletes.Request) (RowSum, map[string]int64) {
	var sum RowSum
	counts := map[string]int64{}
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			hit := false
			for _, r := range rs {
				if rowMatch(rec, i, r) {
					counts[r.ID]++
					hit = true
					break
				}
			}
			if !hit {
				s := rec.NewSlice(int64(i), int64(i+1))
				sum.Add(s, eventColumns...)
				s.Release()
			}
		}
	}
	return sum, counts
}

func record(t *testing.T, l *lake.Lake, r deletes.Request) deletes.Request {
	t.Helper()
	got, err := deletes.Record(context.Background(), l, "events", r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func liveByPath(t *testing.T, l *lake.Lake) map[string]lake.File {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]lake.File{}
	for _, f := range files {
		out[f.Path] = f
	}
	return out
}

func storedRequests(t *testing.T, l *lake.Lake) map[string]deletes.Request {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	rs, bad := deletes.List(tbl.Properties())
	if len(bad) > 0 {
		t.Fatal(bad)
	}
	out := map[string]deletes.Request{}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out
}

func sweeper(e *env, m *Metrics) *DeleteSweeper {
	return (&Maintainer{Cfg: e.cfg, Lake: e.lake, Metrics: m, Status: NewStatus("t", RoleAll, "test", time.Now()), Log: e.drain.Log, Now: time.Now}).Deletes()
}

func hour(h int) string { return delBase.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }

func newDeleteEnv(t *testing.T, mutate func(*Config)) *env {
	return newEnv(t, func(c *Config) {
		c.CommitBatchTargetBytes = 0
		c.SnapshotExpireInterval = 0
		if mutate != nil {
			mutate(c)
		}
	})
}

// TestDeleteSweepRemovesExactlyTheMatchingRows: a whole-file request removes the file, a partial
// one rewrites its file without the rows, a request that matches nothing rewrites nothing; the
// table (through iceberg-go) holds exactly the other rows, DuckDB finds no matching row in the
// live files, untouched files keep their paths, and every request ends done with its counts.
func TestDeleteSweepRemovesExactlyTheMatchingRows(t *testing.T) {
	e := newDeleteEnv(t, nil)
	recs := deleteTable(t, e, 6)
	before := liveByPath(t, e.lake)
	if len(before) != 6 {
		t.Fatalf("setup: %d files, want 6", len(before))
	}
	rs := []deletes.Request{
		record(t, e.lake, deletes.Request{From: hour(2), To: hour(3), Reason: "whole segment 1"}),
		record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing", "auth"}}}, From: hour(4), To: hour(5)}),
		record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing"}}, {Column: "severity", Values: []string{"nosuch"}}}}),
	}
	want, counts := expectAfter(recs, rs)
	if counts[rs[0].ID] != 1500 || counts[rs[1].ID] == 0 || counts[rs[2].ID] != 0 {
		t.Fatalf("setup: requests match %v rows", counts)
	}
	m := NewMetrics()
	s := sweeper(e, m)
	rep, err := s.Sweep(context.Background(), "events", SweepOptions{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	// The whole-file request is done at once (its only file is gone); the others wait for the
	// next sweep to examine the rewritten file.
	if rep.Rewritten != 2 || rep.Outcome != "deleted" || len(rep.Done) != 1 || rep.Done[0] != rs[0].ID {
		t.Fatalf("first sweep: rewrote %d, outcome %s, done %v", rep.Rewritten, rep.Outcome, rep.Done)
	}
	rep, err = s.Sweep(context.Background(), "events", SweepOptions{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 0 || len(rep.Done) != 2 {
		t.Fatalf("second sweep: rewrote %d, done %v; want 0 and the other two", rep.Rewritten, rep.Done)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	after := liveByPath(t, e.lake)
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
	stored := storedRequests(t, e.lake)
	for _, r := range rs {
		st := stored[r.ID]
		if st.State != deletes.Done || st.DoneSnapshotID == 0 || st.DoneAt == nil || st.RowsDeleted != counts[r.ID] {
			t.Fatalf("request %s stored as %+v; want done with %d rows", r.ID, st, counts[r.ID])
		}
	}
	if st := stored[rs[0].ID]; st.FilesRewritten != 1 {
		t.Fatalf("request %s rewrote %d files, want 1", rs[0].ID, st.FilesRewritten)
	}
	if got := counterValue(t, m, "siglake_delete_rows_deleted_total", ""); got != float64(counts[rs[0].ID]+counts[rs[1].ID]) {
		t.Fatalf("siglake_delete_rows_deleted_total = %v", got)
	}

	// An independent reader finds no matching row in the live files.
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files := testenv.TableFiles(t, tbl, testenv.S3Env{})
	duck := testenv.DuckDB(t)
	if duck == nil {
		return
	}
	list := "['" + strings.Join(files, "','") + "']"
	us := func(h int) int64 { return delBase.Add(time.Duration(h) * time.Hour).UnixMicro() }
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
	e := newDeleteEnv(t, nil)
	recs := deleteTable(t, e, 3)
	r := record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing"}}}})
	// More commits, then expire all but the newest snapshot.
	deleteTable(t, e, 0)
	if err := e.lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	tbl, _ := e.lake.LoadTable(context.Background(), "events")
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry, want 1", n)
	}
	if st := storedRequests(t, e.lake)[r.ID]; st.State != deletes.Pending {
		t.Fatalf("request after expiry: %+v", st)
	}
	want, _ := expectAfter(recs, []deletes.Request{r})
	if _, err := DeleteSweep(context.Background(), e.lake, e.cfg, e.drain.Log, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	if st := storedRequests(t, e.lake)[r.ID]; st.State != deletes.Done {
		t.Fatalf("request after sweep: %+v", st)
	}
}

// TestDeleteRewriteLosesToConcurrentRewrite: a maintenance rewrite replaces the file after the
// sweep read it; the delete commit fails validation, its outputs are removed, no row is lost,
// and the next sweep deletes the rows from the new file.
func TestDeleteRewriteLosesToConcurrentRewrite(t *testing.T) {
	e := newDeleteEnv(t, nil)
	recs := deleteTable(t, e, 2)
	all, _ := expectAfter(recs, nil)
	r := record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing"}}}, To: hour(1)})
	stale, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := lake.LiveFiles(context.Background(), stale)
	victim := files[0].DataFile

	// The concurrent maintenance rewrite: same rows, new file, generation 1.
	dir := victim.FilePath()[:strings.LastIndex(victim.FilePath(), "/")]
	ex := &rewrite.Executor{Lake: e.lake, Now: time.Now}
	if out := ex.Run(context.Background(), stale, rewrite.Job{Kind: "l0", Inputs: files[:1], Generation: 1, Dir: dir}); out.Status != rewrite.Committed {
		t.Fatalf("concurrent rewrite: %s %v", out.Status, out.Err)
	}

	s := sweeper(e, NewMetrics())
	_, _, _, err = s.rewrite(context.Background(), stale, victim, []deletes.Request{r}, e.drain.Log)
	if err == nil || !strings.Contains(err.Error(), errConflict.Error()) {
		t.Fatalf("delete rewrite over a replaced file: %v, want a conflict", err)
	}
	if got := e.tableSum("events"); got != all {
		t.Fatalf("after the lost race the table holds %+v, want every row %+v", got, all)
	}
	if st := storedRequests(t, e.lake)[r.ID]; st.State != deletes.Pending || st.RowsDeleted != 0 {
		t.Fatalf("request after the lost race: %+v", st)
	}
	// Outputs of the lost rewrite were removed: only live files remain on disk.
	onDisk, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(dir, "file://"), "*.parquet"))
	live := liveByPath(t, e.lake)
	for _, p := range onDisk {
		if _, ok := live["file://"+p]; !ok && p != strings.TrimPrefix(victim.FilePath(), "file://") {
			t.Fatalf("file %s is neither live nor the replaced input: an orphan of the lost rewrite", p)
		}
	}
	want, _ := expectAfter(recs, []deletes.Request{r})
	if _, err := DeleteSweep(context.Background(), e.lake, e.cfg, e.drain.Log, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after the retry the table holds %+v, want %+v", got, want)
	}
}

// TestDeleteTasksSwitch: with SIGLAKE_DELETE_TASKS off, idle maintenance cycles leave requests
// pending (and count them); delete-sweep --apply executes them by hand. With it on, the idle
// cycle sweeps.
func TestDeleteTasksSwitch(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%v", on), func(t *testing.T) {
			e := newDeleteEnv(t, func(c *Config) { c.DeleteTasks = on })
			recs := deleteTable(t, e, 3)
			r := record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing"}}}})
			want, _ := expectAfter(recs, []deletes.Request{r})
			all, _ := expectAfter(recs, nil)
			m := newMaintainer(t, e, e.lake, time.Now)
			for i := 0; i < 3; i++ {
				rep, err := m.Cycle(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if rep.Planned != 0 {
					t.Fatalf("setup: the cycle planned %d rewrites; the test needs idle cycles", rep.Planned)
				}
			}
			pending := m.Metrics.DeletePending.WithLabelValues("events")
			st := storedRequests(t, e.lake)[r.ID]
			if !on {
				if got := e.tableSum("events"); got != all || st.State != deletes.Pending {
					t.Fatalf("switch off: table %+v (want %+v), request %s", got, all, st.State)
				}
				if v := gaugeValue(pending); v != 1 {
					t.Fatalf("siglake_delete_requests_pending = %v, want 1", v)
				}
				var shown []PendingRequest
				m.Status.Update(func(s *StatusReport) { shown = s.Table("events").Deletes.Pending })
				if len(shown) != 1 || shown[0].ID != r.ID {
					t.Fatalf("/debug/status pending requests: %+v", shown)
				}
				if _, err := DeleteSweep(context.Background(), e.lake, e.cfg, e.drain.Log, []string{"events"}, true); err != nil {
					t.Fatal(err)
				}
				st = storedRequests(t, e.lake)[r.ID]
			}
			if got := e.tableSum("events"); got != want || st.State != deletes.Done {
				t.Fatalf("table %+v (want %+v), request %s", got, want, st.State)
			}
		})
	}
}

// TestDeleteRequestsRejected: bad requests name the input and what is accepted, and record nothing.
func TestDeleteRequestsRejected(t *testing.T) {
	e := newDeleteEnv(t, nil)
	deleteTable(t, e, 1)
	for _, c := range []struct {
		r    deletes.Request
		want string
	}{
		{deletes.Request{}, "needs at least one"},
		{deletes.Request{Where: []deletes.Condition{{Column: "user_id", Values: []string{"alice"}}}}, `column "user_id": the table has no such top-level column; columns: timestamp, service`},
		{deletes.Request{Where: []deletes.Condition{{Column: "attributes", Values: []string{"x"}}}}, `column "attributes" has type map<string, string>: conditions accept string, int, long and boolean columns`},
		{deletes.Request{Where: []deletes.Condition{{Column: "timestamp", Values: []string{"1"}}}}, "with --from/--to"},
		{deletes.Request{From: "yesterday"}, `--from "yesterday": accepted: RFC 3339`},
		{deletes.Request{From: hour(3), To: hour(2)}, "is not before --to"},
		{deletes.Request{Where: []deletes.Condition{{Column: "service"}}}, "at least one value"},
		{deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{""}}}}, `column "service": an empty value`},
		{deletes.Request{From: "2026-11-29T00:00:00.0000005Z"}, "stored to the microsecond"},
	} {
		_, err := deletes.Record(context.Background(), e.lake, "events", c.r, time.Now())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: error %v, want it to contain %q", c.r, err, c.want)
		}
	}
	if n := len(storedRequests(t, e.lake)); n != 0 {
		t.Fatalf("%d requests stored after bad input", n)
	}
}

// TestDeleteRequestsConcurrentRecord: writers recording at once keep every request (the catalog's
// compare-and-swap on the table metadata, retried on fresh metadata).
func TestDeleteRequestsConcurrentRecord(t *testing.T) {
	e := newDeleteEnv(t, nil)
	deleteTable(t, e, 1)
	l2, err := lake.Open(context.Background(), LakeConfig(e.cfg)) // a second process's catalog handle
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for w, l := range []*lake.Lake{e.lake, l2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				_, err := deletes.Record(context.Background(), l, "events",
					deletes.Request{Where: []deletes.Condition{{Column: "host", Values: []string{fmt.Sprintf("w%d-%d", w, i)}}}}, time.Now())
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
	if n := len(storedRequests(t, e.lake)); n != 16 {
		t.Fatalf("%d requests stored, want 16", n)
	}
}

func gaugeValue(g interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	_ = g.Write(&m)
	return m.GetGauge().GetValue()
}

// TestStoredRequestsRevalidated: a request written straight into the table properties (by another
// tool, or before a schema change) is checked before every sweep. One that Record would refuse
// (here: no condition and no range, which matches every row), or one stored under another
// request's key, is reported as invalid and never executed.
func TestStoredRequestsRevalidated(t *testing.T) {
	e := newDeleteEnv(t, nil)
	deleteTable(t, e, 3)
	before := e.tableSum("events")
	tbl, err := e.lake.LoadTable(context.Background(), "events")
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
	reps, err := DeleteSweep(context.Background(), e.lake, e.cfg, e.drain.Log, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got != before {
		t.Fatalf("table %+v after the sweep, want it untouched %+v", got, before)
	}
	invalid := strings.Join(reps[len(reps)-1].Invalid, "\n")
	for _, want := range []string{"siglake.delete.manual: a deletion request needs at least one", `siglake.delete.other: holds request id "elsewhere"`} {
		if !strings.Contains(invalid, want) {
			t.Errorf("invalid requests reported %q, want %q", invalid, want)
		}
	}
}

// TestFailingTableDoesNotStarveDeletes: one owned table whose pass fails every cycle (its
// manifest list is unreadable) must not keep the other tables' deletion requests from being
// swept, and the pending gauge is published in busy cycles too.
func TestFailingTableDoesNotStarveDeletes(t *testing.T) {
	e := newDeleteEnv(t, func(c *Config) { c.DeleteTasks = true })
	deleteTable(t, e, 3)
	r := record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing"}}}})
	e.writeSegments("other", 2, 2000, 9, delBase)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	ot, err := e.lake.LoadTable(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimPrefix(ot.CurrentSnapshot().ManifestList, "file://"), []byte("not avro"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newMaintainer(t, e, e.lake, time.Now)
	for i := 0; i < 4; i++ {
		if _, err := m.Cycle(context.Background()); err == nil {
			t.Fatal("the broken table's pass did not fail: the test does not test anything")
		}
	}
	if st := storedRequests(t, e.lake)[r.ID]; st.State != deletes.Done {
		t.Fatalf("after 4 cycles the request on events is %s, pending gauge %v", st.State,
			gaugeValue(m.Metrics.DeletePending.WithLabelValues("events")))
	}
}

// TestDoneRequestsExpire: the commit that completes a request removes done requests older than
// deletes.DoneRetention and keeps younger ones.
func TestDoneRequestsExpire(t *testing.T) {
	e := newDeleteEnv(t, nil)
	deleteTable(t, e, 2)
	old, young := time.Now().Add(-deletes.DoneRetention-time.Hour), time.Now().Add(-time.Hour)
	var props = iceberg.Properties{}
	for id, at := range map[string]time.Time{"old": old, "young": young} {
		r := deletes.Request{Version: 1, ID: id, State: deletes.Done, DoneAt: &at,
			Where: []deletes.Condition{{Column: "service", Values: []string{"nothing"}}}}
		v, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		props[deletes.Key(id)] = v
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
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
	r := record(t, e.lake, deletes.Request{Where: []deletes.Condition{{Column: "service", Values: []string{"billing"}}}})
	if _, err := DeleteSweep(context.Background(), e.lake, e.cfg, e.drain.Log, nil, true); err != nil {
		t.Fatal(err)
	}
	stored := storedRequests(t, e.lake)
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
