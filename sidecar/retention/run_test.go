package retention_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/filtered"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/internal/membudgettest"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/retention/pending"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

// now is the tests' clock: day D is 2026-11-29, and it is noon.
var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// clock is a controllable clock.
type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// runner is a retention runner over e's lake with the process defaults, its metrics on reg.
func runner(e *testlake.Env, c *clock, delay time.Duration) (*retention.Runner, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	return &retention.Runner{
		Cfg: retention.Config{DeleteDelay: delay, MaxFiles: 8, MaxBytes: 1 << 30, TargetFileBytes: 256 << 20,
			Metadata: func(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }},
		Lake: e.Lake, Metrics: retention.NewMetrics(reg), Now: c.Now,
		Rewriter: filtered.Rewriter{Executor: &rewrite.Executor{Lake: e.Lake, Now: c.Now}, RewriteMetrics: rewrite.NewMetrics(reg), Log: e.Log},
	}, reg
}

// otherProcess opens e's catalog again: the commits of another process, which one Lake's table
// lock does not serialise with e.Lake's.
func otherProcess(t *testing.T, e *testlake.Env) *lake.Lake {
	t.Helper()
	l, err := lake.Open(context.Background(), e.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// days drains one file per day for days D-from..D-to (from > to), 600 rows from 00:30 to about
// 23:50 of the day, no late rows, and returns the records (released at cleanup).
func days(e *testlake.Env, from, to int) []arrow.RecordBatch {
	e.T.Helper()
	g := walgen.New(walgen.Options{Seed: 7})
	d0 := now.Truncate(day)
	var recs []arrow.RecordBatch
	for d := from; d >= to; d-- {
		recs = append(recs, g.Batch(memory.DefaultAllocator, d0.Add(-time.Duration(d)*day+30*time.Minute), 600, 139*time.Second))
	}
	e.Seal("events", recs...)
	e.T.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	e.DrainAll()
	return recs
}

// keep fingerprints the rows of recs keep says stay, by the test's own evaluation.
func keep(recs []arrow.RecordBatch, keep func(rec arrow.RecordBatch, i int) bool) rowsum.Sum {
	var sum rowsum.Sum
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			if keep(rec, i) {
				s := rec.NewSlice(int64(i), int64(i+1))
				_ = sum.Add(s, walgen.Columns...)
				s.Release()
			}
		}
	}
	return sum
}

func ts(rec arrow.RecordBatch, i int) time.Time {
	return time.UnixMicro(int64(rec.Column(0).(*array.Timestamp).Value(i))).UTC()
}

func str(rec arrow.RecordBatch, col string, i int) string {
	c := rec.Column(rec.Schema().FieldIndices(col)[0]).(*array.String)
	if c.IsNull(i) {
		return ""
	}
	return c.Value(i)
}

// setPolicy stores p on events.
func setPolicy(t *testing.T, e *testlake.Env, p retention.Policy) {
	t.Helper()
	if _, err := retention.Set(context.Background(), e.Lake, "events", p); err != nil {
		t.Fatal(err)
	}
}

func snapshots(t *testing.T, e *testlake.Env) int {
	return len(e.Table("events").Metadata().Snapshots())
}

// duckRows is DuckDB's count and fingerprint of the live files of events.
func duckCheck(t *testing.T, e *testlake.Env, want rowsum.Sum) {
	t.Helper()
	duck := testenv.DuckDB(t)
	if duck == nil {
		return
	}
	s := duck.SummarizeWith(testenv.TableFiles(t, e.Table("events"), testenv.S3Env{}), testenv.SummaryOptions{ChecksumColumns: walgen.Columns})
	if s.Rows != want.Rows || s.Checksum != want.Sum {
		t.Fatalf("DuckDB reads %d rows (checksum %d), want %d (%d)", s.Rows, s.Checksum, want.Rows, want.Sum)
	}
}

// TestRetentionDropsExpiredDays: days D-40..D with a 30-day period. One run drops the days wholly
// before the cutoff in one metadata-only commit (no data file added, nothing read), rewrites the
// day that straddles it without its old rows, and leaves exactly the rows at or after the cutoff
// (iceberg-go and DuckDB agree); a second run commits nothing.
func TestRetentionDropsExpiredDays(t *testing.T) {
	e := testlake.New(t)
	recs := days(e, 40, 0)
	setPolicy(t, e, retention.Policy{Period: "30d"})
	c := &clock{now}
	r, _ := runner(e, c, 2*time.Hour)
	cutoff := now.Add(-30 * day).Truncate(day) // cutoffs fall on midnight: D-30 stays whole
	want := keep(recs, func(rec arrow.RecordBatch, i int) bool { return !ts(rec, i).Before(cutoff) })
	before := snapshots(t, e)

	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != "dropped" || rep.Paths["partition"] == nil || rep.Paths["partition"].Files != 10 || rep.Paths["rewrite"] != nil {
		t.Fatalf("run: outcome %s, paths %+v; want 10 partitions dropped and nothing rewritten", rep.Outcome, fmtPaths(rep.Paths))
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v (the rows at or after the cutoff)", got, want)
	}
	duckCheck(t, e, want)
	// The drop is metadata only: its snapshot adds no data file and no bytes.
	tbl := e.Table("events")
	var dropSnap *table.Snapshot
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties["siglake.retention.dropped-files"] == "10" {
			dropSnap = &s
		}
	}
	if dropSnap == nil {
		t.Fatal("no snapshot records the drop of 10 files")
	}
	if n := dropSnap.Summary.Properties["added-data-files"]; n != "" && n != "0" {
		t.Fatalf("the drop's snapshot added %s data files, want none", n)
	}
	if got := snapshots(t, e) - before; got != 1 {
		t.Fatalf("%d snapshots added, want 1 (the drop)", got)
	}
	if got := testutil.ToFloat64(r.Metrics.FilesDropped.WithLabelValues("events", "partition")); got != 10 {
		t.Fatalf("siglake_retention_files_dropped_total{path=partition} = %v", got)
	}
	if got := testutil.ToFloat64(r.Metrics.PendingFiles.WithLabelValues("events")); got != 10 {
		t.Fatalf("siglake_retention_pending_delete_files = %v, want 10", got)
	}
	if got := testutil.ToFloat64(r.Metrics.OldestAge.WithLabelValues("events")); got > (31 * day).Seconds() {
		t.Fatalf("oldest data age %v s after retention, want at most the period and a day", got)
	}

	// A second run finds nothing past retention.
	before = snapshots(t, e)
	rep, err = r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != "clean" || snapshots(t, e) != before {
		t.Fatalf("second run: outcome %s, %d new snapshots; want clean and none", rep.Outcome, snapshots(t, e)-before)
	}
}

func fmtPaths(m map[string]*retention.PathCount) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%s:%+v", k, *v))
	}
	return strings.Join(s, " ")
}

// TestRetentionRule: a table kept for ever with a 3-day rule for debug rows. Only debug rows older
// than 3 days go; files without such rows keep their paths (nothing read or rewritten there).
func TestRetentionRule(t *testing.T) {
	e := testlake.New(t)
	recs := days(e, 6, 0)
	setPolicy(t, e, retention.Policy{Period: "0", Rules: []retention.Rule{{Where: where("severity", "debug"), Period: "3d"}}})
	beforeFiles := testlake.LiveByPath(t, e.Lake)
	c := &clock{now}
	r, _ := runner(e, c, 2*time.Hour)
	cutoff := now.Add(-3 * day).Truncate(day)
	want := keep(recs, func(rec arrow.RecordBatch, i int) bool {
		return str(rec, "severity", i) != "debug" || !ts(rec, i).Before(cutoff)
	})
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
	duckCheck(t, e, want)
	if rep.Paths["partition"] != nil || rep.Paths["file"] != nil {
		t.Fatalf("a rule must not drop whole files of a table kept for ever: %s", fmtPaths(rep.Paths))
	}
	// Days D-6..D-4 are older than the rule's cutoff (midnight of D-3): three rewrites. D-3..D
	// keep their files.
	after := testlake.LiveByPath(t, e.Lake)
	kept := 0
	for p := range beforeFiles {
		if _, ok := after[p]; ok {
			kept++
		}
	}
	if rep.Paths["rewrite"] == nil || rep.Paths["rewrite"].Files != 3 || kept != 4 {
		t.Fatalf("rewrote %s, kept %d files; want 3 rewritten and 4 untouched", fmtPaths(rep.Paths), kept)
	}
}

// TestRetentionFreesStorageAfterTheDelay: dropped objects stay in storage until the delete delay
// has passed and no retained snapshot references them; `siglake gc` keeps them meanwhile; then
// a new runner (another owner, nothing in memory) deletes them and empties the pending list.
func TestRetentionFreesStorageAfterTheDelay(t *testing.T) {
	e := testlake.New(t)
	days(e, 35, 31)
	days(e, 2, 1) // newer days that stay, and no day straddling the cutoff
	setPolicy(t, e, retention.Policy{Period: "30d"})
	c := &clock{now}
	r, _ := runner(e, c, 2*time.Hour)
	dropped := map[string]bool{}
	for p, f := range testlake.LiveByPath(t, e.Lake) {
		if time.UnixMicro(f.MaxTime).Before(now.Add(-30 * day)) {
			dropped[p] = true
		}
	}
	if len(dropped) != 5 {
		t.Fatalf("setup: %d files before the cutoff, want 5", len(dropped))
	}
	if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	exists := func() int {
		n := 0
		for p := range dropped {
			if _, err := os.Stat(testlake.LocalPath(p)); err == nil {
				n++
			}
		}
		return n
	}
	// gc right away, even with every snapshot but the last expired: the pending list keeps them.
	if err := e.Lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	keepAll := func(t *table.Table) ([]string, error) {
		a, err := puffinidx.Referenced(t)
		if err != nil {
			return nil, err
		}
		b, err := pending.Referenced(t)
		return append(a, b...), err
	}
	// Every object is past gc's age limit (an hour, above gc's floor): only the pending list keeps them.
	tbl, err := e.Lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	aged := time.Now().Add(-2 * time.Hour)
	filepath.Walk(testlake.LocalPath(tbl.Location()), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.Chtimes(p, aged, aged)
		}
		return nil
	})
	if _, err := orphans.Run(context.Background(), e.Lake, orphans.Options{OlderThan: time.Hour, MinAge: time.Hour, Apply: true, Keep: keepAll}); err != nil {
		t.Fatal(err)
	}
	if n := exists(); n != 5 {
		t.Fatalf("%d of 5 dropped objects exist after gc before the delay, want all", n)
	}
	// An hour later: still waiting for the delay.
	c.t = now.Add(time.Hour)
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.FreedFiles != 0 || exists() != 5 || len(rep.Pending) == 0 || !strings.Contains(rep.Pending[0].Waiting, "delete delay") {
		t.Fatalf("before the delay: freed %d, %d exist, pending %+v", rep.FreedFiles, exists(), rep.Pending)
	}
	// Past the delay, on another owner: everything goes and the list is empty.
	c.t = now.Add(3 * time.Hour)
	other, reg := runner(e, c, 2*time.Hour)
	rep, err = other.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := exists(); n != 0 || rep.FreedFiles != 5 {
		t.Fatalf("after the delay: %d objects still exist, %d freed", n, rep.FreedFiles)
	}
	if ps, _ := pending.List(e.Table("events").Properties()); len(ps) != 0 {
		t.Fatalf("pending list not empty: %+v", ps)
	}
	if got := promtest.Counter(t, reg, "siglake_retention_freed_files_total", ""); got != 5 {
		t.Fatalf("siglake_retention_freed_files_total = %v", got)
	}
}

// TestRetentionWaitsForSnapshots: past the delay, objects an older retained snapshot references
// are kept until expiry removes that snapshot.
func TestRetentionWaitsForSnapshots(t *testing.T) {
	e := testlake.New(t)
	days(e, 33, 31)
	setPolicy(t, e, retention.Policy{Period: "30d"})
	c := &clock{now}
	r, _ := runner(e, c, 0)
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.FreedFiles != 0 || len(rep.Pending) != 1 || !strings.Contains(rep.Pending[0].Waiting, "still references") {
		t.Fatalf("with the snapshots that reference them retained: freed %d, pending %+v", rep.FreedFiles, rep.Pending)
	}
	if err := e.Lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	if rep, err = r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	if rep.FreedFiles != 3 || len(rep.Pending) != 0 {
		t.Fatalf("after expiry: freed %d, pending %+v", rep.FreedFiles, rep.Pending)
	}
}

// TestRetentionBadPolicy: a stored policy that does not validate removes nothing and says why;
// Set refuses it before writing anything.
func TestRetentionBadPolicy(t *testing.T) {
	e := testlake.New(t)
	days(e, 40, 38)
	bad := retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("no_such_column", "x"), Period: "3d"}}}
	if _, err := retention.Set(context.Background(), e.Lake, "events", bad); err == nil || !strings.Contains(err.Error(), "no_such_column") {
		t.Fatalf("Set of a bad policy: %v, want an error naming the column", err)
	}
	if _, ok := e.Table("events").Properties()[retention.Property]; ok {
		t.Fatal("a refused policy was written")
	}
	// Written by another tool: the run refuses it.
	v, _ := bad.Encode()
	tbl := e.Table("events")
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{retention.Property: v}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := e.Sum("events")
	r, _ := runner(e, &clock{now}, 0)
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err == nil || rep.Invalid == "" || e.Sum("events") != before {
		t.Fatalf("bad stored policy: err %v, invalid %q; want an error and nothing removed", err, rep.Invalid)
	}
}

// TestDryRunChangesNothing: the dry run reports files, rows and bytes that would go and commits
// nothing.
func TestDryRunChangesNothing(t *testing.T) {
	e := testlake.New(t)
	days(e, 32, 29)
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "debug"), Period: "3d"}}})
	before, snaps := e.Sum("events"), snapshots(t, e)
	r, _ := runner(e, &clock{now}, 0)
	rep, err := r.Run(context.Background(), "events", retention.Options{NoCaps: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != "dry_run" || rep.Paths["partition"] == nil || rep.Paths["partition"].Files != 2 || rep.Paths["rewrite"] == nil || rep.Paths["rewrite"].Rows == 0 {
		t.Fatalf("dry run: %s %s", rep.Outcome, fmtPaths(rep.Paths))
	}
	if e.Sum("events") != before || snapshots(t, e) != snaps {
		t.Fatal("the dry run changed the table")
	}
}

func where(col string, vs ...string) []rows.Condition {
	return []rows.Condition{{Column: col, Values: vs}}
}

// TestRetentionLosesToARewrite: a level rewrite replaces the files retention planned to drop
// between its planning and its commit. The catalog's validation makes retention's commit lose
// (nothing committed, nothing resurrected, the pending entry not recorded), and the next run
// drops the rewrite's output instead.
func TestRetentionLosesToARewrite(t *testing.T) {
	e := testlake.New(t)
	recs := days(e, 33, 33)
	recs = append(recs, days(e, 33, 33)...) // two files in D-33: something to merge
	recs = append(recs, days(e, 1, 1)...)
	setPolicy(t, e, retention.Policy{Period: "30d"})
	c := &clock{now}
	r, _ := runner(e, c, 0)
	var fired atomic.Int32
	other := otherProcess(t, e) // the owner's rewrite and retention of one process take turns
	catalogtest.Hook(e.Lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if isRetentionCommit(ups) && fired.Add(1) == 1 {
			// The competing level rewrite of the two D-33 files commits first.
			tbl := e.Table("events")
			files, err := lake.LiveFiles(ctx, tbl)
			if err != nil {
				return nil, "", err
			}
			var in []lake.File
			for _, f := range files {
				if f.Partition == now.Add(-33*day).Format("2006-01-02") {
					in = append(in, f)
				}
			}
			out := (&rewrite.Executor{Lake: other, Now: c.Now}).Run(ctx, tbl, rewrite.Job{Kind: "l0", Partition: in[0].Partition,
				Inputs: in, Generation: 1, Dir: in[0].Path[:strings.LastIndex(in[0].Path, "/")], TargetFileBytes: 256 << 20})
			if out.Error() != nil {
				t.Errorf("competing rewrite: %v", out.Error())
			}
		}
		return next(ctx, id, reqs, ups)
	})
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if fired.Load() == 0 || rep.Outcome != "conflict" || len(rep.Snapshots) != 0 {
		t.Fatalf("fault fired %d times; run outcome %s, snapshots %v; want a lost drop", fired.Load(), rep.Outcome, rep.Snapshots)
	}
	if ps, _ := pending.List(e.Table("events").Properties()); len(ps) != 0 {
		t.Fatalf("a lost drop recorded pending deletions: %+v", ps)
	}
	all := keep(recs, func(arrow.RecordBatch, int) bool { return true })
	if got := e.Sum("events"); got != all {
		t.Fatalf("after the lost drop the table holds %+v, want every row %+v", got, all)
	}
	if rep, err = r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil || rep.Outcome != "dropped" {
		t.Fatalf("next run: %s, %v; want dropped", rep.Outcome, err)
	}
	want := keep(recs, func(rec arrow.RecordBatch, i int) bool { return !ts(rec, i).Before(now.Add(-30 * day)) })
	if got := e.Sum("events"); got != want {
		t.Fatalf("after the next run the table holds %+v, want %+v", got, want)
	}
}

// isRetentionCommit: the commit adds a snapshot of a retention removal.
func isRetentionCommit(ups []table.Update) bool {
	for _, u := range ups {
		b, _ := json.Marshal(u)
		if strings.Contains(string(b), `"siglake.retention.pending"`) {
			return true
		}
	}
	return false
}

// TestRetentionDoesNotStallOnCleanFiles: a rule keeps error rows for ever beside a 30-day period,
// so nothing is dropped whole and every old file is a rewrite candidate. Files already read clean
// (and the rewrites' own outputs) must not use up the per-run caps again: each run reaches new
// files until none is left.
func TestRetentionDoesNotStallOnCleanFiles(t *testing.T) {
	e := testlake.New(t)
	recs := days(e, 50, 31) // 20 files
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "error"), Period: "0"}}})
	c := &clock{now}
	r, _ := runner(e, c, 0)
	var rewritten []int
	for run := 0; run < 5; run++ {
		rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if p := rep.Paths["rewrite"]; p != nil {
			n = p.Files
		}
		rewritten = append(rewritten, n)
	}
	if fmt.Sprint(rewritten) != "[8 8 4 0 0]" {
		t.Fatalf("files rewritten per run %v, want [8 8 4 0 0] (8 per run until all 20 are done)", rewritten)
	}
	cutoff := now.Add(-30 * day).Truncate(day)
	want := keep(recs, func(rec arrow.RecordBatch, i int) bool {
		return str(rec, "severity", i) == "error" || !ts(rec, i).Before(cutoff)
	})
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v (only the error rows)", got, want)
	}
}

// TestRetentionFreesWhileThePolicyIsInvalid: storage removed earlier is freed when due even
// though the policy no longer validates (freeing does not depend on it).
func TestRetentionFreesWhileThePolicyIsInvalid(t *testing.T) {
	e := testlake.New(t)
	days(e, 33, 31)
	setPolicy(t, e, retention.Policy{Period: "30d"})
	c := &clock{now}
	r, _ := runner(e, c, time.Hour)
	if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	v, _ := retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("gone_column", "x"), Period: "3d"}}}.Encode()
	txn := e.Table("events").NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{retention.Property: v}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	c.t = now.Add(2 * time.Hour)
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err == nil || rep.Invalid == "" {
		t.Fatalf("run with an invalid policy: %v, want it reported", err)
	}
	if rep.FreedFiles != 3 {
		t.Fatalf("freed %d objects with the policy invalid, want the 3 removed before", rep.FreedFiles)
	}
}

// TestFreedCountedOnce: the commit that removes freed entries fails once, after the objects are
// deleted; the next run deletes again and removes the entries, and the freed metrics count the
// objects once.
func TestFreedCountedOnce(t *testing.T) {
	e := testlake.New(t)
	days(e, 35, 31)
	setPolicy(t, e, retention.Policy{Period: "30d"})
	c := &clock{now}
	r, _ := runner(e, c, 0)
	if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Lake.ExpireSnapshots(context.Background(), "events", 1); err != nil {
		t.Fatal(err)
	}
	var failed atomic.Int32
	catalogtest.Hook(e.Lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		b, _ := json.Marshal(ups)
		if strings.Contains(string(b), `"remove-properties"`) && strings.Contains(string(b), pending.Prefix) && failed.Add(1) == 1 {
			return nil, "", fmt.Errorf("injected: the catalog is unreachable")
		}
		return next(ctx, id, reqs, ups)
	})
	c.t = now.Add(time.Minute)
	if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err == nil {
		t.Fatal("the failed entry removal was not reported")
	}
	if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	if failed.Load() < 2 {
		t.Fatal("the fault did not fire")
	}
	if got := testutil.ToFloat64(r.Metrics.FreedFiles.WithLabelValues("events")); got != 5 {
		t.Fatalf("siglake_retention_freed_files_total = %v, want 5 (each object once)", got)
	}
	if ps, _ := pending.List(e.Table("events").Properties()); len(ps) != 0 {
		t.Fatalf("entries left: %+v", ps)
	}
}

// TestPendingFollowsTheHead: a drain append commits between retention's planning and its drop. The
// drop is staged again on the new head, and its pending entry waits for the snapshots up to that
// head, which still reference the dropped files, not only for those up to the head it planned on.
func TestPendingFollowsTheHead(t *testing.T) {
	e := testlake.New(t)
	days(e, 33, 31)
	setPolicy(t, e, retention.Policy{Period: "30d"})
	e.SealRows("events", 1, 100, 9, now.Add(-time.Hour)) // waits in the WAL for the hook
	c := &clock{now}
	r, _ := runner(e, c, 0)
	var fired atomic.Int32
	drainer := *e.Drain // another pod's drain: one process's drain and retention take turns
	drainer.Lake = otherProcess(t, e)
	catalogtest.Hook(e.Lake, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if isRetentionCommit(ups) && fired.Add(1) == 1 {
			if _, err := drainer.Cycle(ctx, true); err != nil {
				t.Errorf("concurrent drain: %v", err)
			}
		}
		return next(ctx, id, reqs, ups)
	})
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil || rep.Outcome != "dropped" || fired.Load() == 0 {
		t.Fatalf("run: %v, outcome %s, fault fired %d times", err, rep.Outcome, fired.Load())
	}
	tbl := e.Table("events")
	ps, _ := pending.List(tbl.Properties())
	if len(ps) != 1 {
		t.Fatalf("pending entries %+v, want one", ps)
	}
	drop := tbl.CurrentSnapshot()
	parent := tbl.SnapshotByID(*drop.ParentSnapshotID)
	if parent.Summary.Properties["siglake.stream"] == "" || ps[0].AfterSequence != parent.SequenceNumber {
		t.Fatalf("after_sequence %d; the drop's parent is snapshot %d (sequence %d, %v): want the drain's append, the head the drop committed on",
			ps[0].AfterSequence, parent.SnapshotID, parent.SequenceNumber, parent.Summary.Properties)
	}
	if ok, why := ps[0].Due(tbl, now, 0); ok || !strings.Contains(why, fmt.Sprint(parent.SnapshotID)) && !strings.Contains(why, "still references") {
		t.Fatalf("due %v (%s) while the append's snapshot is retained", ok, why)
	}
}

// TestRetentionAndSetAsideFiles: a set-aside file (corrupt here) is never read: past the cutoff
// whole it is still dropped (metadata only), and one that may hold rows past a rule's cutoff is
// reported as set aside instead of failing the run.
func TestRetentionAndSetAsideFiles(t *testing.T) {
	e := testlake.New(t)
	days(e, 40, 40)
	days(e, 5, 5)
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "debug"), Period: "3d"}}})
	files := testlake.LiveByPath(t, e.Lake)
	for p := range files {
		if err := os.WriteFile(testlake.LocalPath(p), []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Lake.SetSkipped(context.Background(), "events", lake.Skipped{Path: p, Class: "corrupt", Cause: "test", At: now}); err != nil {
			t.Fatal(err)
		}
	}
	r, _ := runner(e, &clock{now}, 0)
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatalf("run over set-aside files: %v", err)
	}
	if rep.Paths["partition"] == nil || rep.Paths["partition"].Files != 1 || rep.SetAside != 1 || rep.Paths["rewrite"] != nil {
		t.Fatalf("paths %s, set aside %d; want D-40 dropped and D-5 reported as set aside", fmtPaths(rep.Paths), rep.SetAside)
	}
}

// TestRetentionShutdownWhileWaitingForMemory: a run whose rewrite waits for memory (a drain holds
// the whole budget) and is shut down there is no failed run and no failed rewrite.
func TestRetentionShutdownWhileWaitingForMemory(t *testing.T) {
	e := testlake.New(t)
	days(e, 10, 0)
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "debug"), Period: "3d"}}})
	r, reg := runner(e, &clock{now}, 2*time.Hour)
	var rep retention.Report
	membudgettest.ShutDownWhileWaiting(t, &r.Executor.Reserve, func(ctx context.Context) {
		rep, _ = r.Run(ctx, "events", retention.Options{Apply: true})
	})
	if rep.Outcome == "failed" {
		t.Errorf("a shutdown while waiting for memory reported a failed run")
	}
	promtest.NoneCounted(t, reg, "a shutdown", "failed", "siglake_retention_runs_total", "siglake_compactor_rewrites_total")
}

// TestRetentionRuleSplitFile: a rule's candidates come from scan planning, which splits a file
// above read.split.target-size into one task per row group; the file is still rewritten once,
// without exactly its rows past the rule.
func TestRetentionRuleSplitFile(t *testing.T) {
	e := testlake.New(t)
	rec, tasks := e.SplitFile(3, now.Add(-5*day), 4000, time.Millisecond, 1000)
	if tasks != 4 {
		t.Fatalf("scan planning made %d tasks of the 4-row-group file, want 4: the test no longer splits it", tasks)
	}
	setPolicy(t, e, retention.Policy{Period: "0", Rules: []retention.Rule{{Where: where("severity", "debug"), Period: "3d"}}})
	want := keep([]arrow.RecordBatch{rec}, func(rec arrow.RecordBatch, i int) bool { return str(rec, "severity", i) != "debug" })
	if want.Rows == 0 || want.Rows == 4000 {
		t.Fatalf("setup: the rule keeps %d of 4000 rows", want.Rows)
	}
	r, _ := runner(e, &clock{now}, 2*time.Hour)
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rw := rep.Paths["rewrite"]; rw == nil || rw.Files != 1 || len(rep.Picks) != 1 {
		t.Fatalf("rewrote %s with %d picks; want the one file once", fmtPaths(rep.Paths), len(rep.Picks))
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
}

// withSeverity returns rec with its severity column mapped through f (rec is released).
func withSeverity(rec arrow.RecordBatch, f func(string) string) arrow.RecordBatch {
	defer rec.Release()
	idx := rec.Schema().FieldIndices("severity")[0]
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	col := rec.Column(idx).(*array.String)
	for i := 0; i < col.Len(); i++ {
		if col.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(f(col.Value(i)))
		}
	}
	sev := b.NewArray()
	defer sev.Release()
	cols := append([]arrow.Array(nil), rec.Columns()...)
	cols[idx] = sev
	return array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
}

// TestRetentionRemembersFilesReadClean: a rule (severity=fatal, 7 days) whose value lies inside
// every file's severity min/max, so scan planning rules no file out; the 10 oldest files hold no
// fatal row, the 3 newer ones (still past the rule's cutoff) do. With a cap of 4 files a run, a
// run that re-read the clean files would spend every run on the same oldest 4 and never reach the
// fatal rows; remembering them, the table converges within ceil(13/4)+1 runs, and a run under the
// same cutoffs reads nothing again; a changed policy reads them again.
func TestRetentionRemembersFilesReadClean(t *testing.T) {
	e := testlake.New(t)
	g := walgen.New(walgen.Options{Seed: 7})
	d0 := now.Truncate(day)
	var recs []arrow.RecordBatch
	for d := 20; d >= 8; d-- {
		rec := g.Batch(memory.DefaultAllocator, d0.Add(-time.Duration(d)*day+30*time.Minute), 600, 139*time.Second)
		if d >= 11 {
			rec = withSeverity(rec, func(s string) string {
				if s == "fatal" {
					return "error"
				}
				return s
			})
		}
		recs = append(recs, rec)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	e.Seal("events", recs...)
	e.DrainAll()
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "fatal"), Period: "7d"}}})
	c := &clock{now}
	r, _ := runner(e, c, 0)
	r.Cfg.MaxFiles = 4
	cutoff := now.Add(-7 * day).Truncate(day)
	want := keep(recs, func(rec arrow.RecordBatch, i int) bool {
		return str(rec, "severity", i) != "fatal" || !ts(rec, i).Before(cutoff)
	})
	if e.Sum("events") == want {
		t.Fatal("setup: no fatal row past the rule's cutoff")
	}
	runs := 0
	for ; runs < 8 && e.Sum("events") != want; runs++ {
		if _, err := r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("after %d runs the table holds %d rows, want %d: fatal rows stay past their cutoff", runs, got.Rows, want.Rows)
	}
	if runs > 5 {
		t.Fatalf("converged after %d runs, want at most ceil(13/4)+1 = 5", runs)
	}
	rep, err := r.Run(context.Background(), "events", retention.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Picks {
		t.Errorf("a run under the same cutoffs read %s again (%s: %s)", p.Path, p.Action, p.Result)
	}
	// A day later every cutoff has moved, but past no row these files could still lose: nothing
	// is read again.
	c.t = now.Add(day)
	if rep, err = r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	for _, p := range rep.Picks {
		t.Errorf("a cutoff that moved past no row of %s read it again (%s: %s)", p.Path, p.Action, p.Result)
	}
	// Forgotten (the table's lease moved away and back): they are read again.
	r.Forget("events")
	if rep, err = r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	if len(rep.Picks) == 0 {
		t.Error("a forgotten table's files were not read again")
	}
	// A changed policy is read afresh.
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "fatal"), Period: "6d"}}})
	if rep, err = r.Run(context.Background(), "events", retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	if len(rep.Picks) == 0 {
		t.Error("a changed policy read none of the files remembered under the old one")
	}
}

// TestRetentionDropsAWhollyExpiredFileWithoutWritingOne: beside a 30-day period a rule keeps error
// rows for ever, so no file can be dropped unread. The file of D-33 holds no error row: read, every
// row is past retention, and it leaves the table in a metadata-only replace: no data file is
// written (not even an empty one) and the commit adds none; its rows are gone, and it waits on
// the pending list. The file of D-32, with error rows, is rewritten as usual.
func TestRetentionDropsAWhollyExpiredFileWithoutWritingOne(t *testing.T) {
	e := testlake.New(t)
	g := walgen.New(walgen.Options{Seed: 7})
	d0 := now.Truncate(day)
	var recs []arrow.RecordBatch
	for _, d := range []int{33, 32, 5} {
		rec := g.Batch(memory.DefaultAllocator, d0.Add(-time.Duration(d)*day+30*time.Minute), 600, 139*time.Second)
		if d == 33 {
			rec = withSeverity(rec, func(s string) string {
				if s == "error" {
					return "warn"
				}
				return s
			})
		}
		recs = append(recs, rec)
	}
	t.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	e.Seal("events", recs...)
	e.DrainAll()
	setPolicy(t, e, retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: where("severity", "error"), Period: "0"}}})
	ctx := context.Background()
	before, err := lake.LiveFiles(ctx, e.Table("events"))
	if err != nil {
		t.Fatal(err)
	}
	var expired lake.File
	for _, f := range before {
		if time.UnixMicro(f.MinTime).UTC().Truncate(day).Equal(d0.Add(-33 * day)) {
			expired = f
		}
	}
	if expired.Path == "" || len(before) != 3 {
		t.Fatalf("setup: %d live files, none of D-33", len(before))
	}
	dir := filepath.Dir(strings.TrimPrefix(expired.Path, "file://"))
	onDisk := func() []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, en := range ents {
			out = append(out, en.Name())
		}
		return out
	}
	disk := onDisk()
	c := &clock{now}
	r, _ := runner(e, c, time.Hour)
	rep, err := r.Run(ctx, "events", retention.Options{Apply: true})
	if err != nil || rep.Outcome != "dropped" {
		t.Fatalf("run: %s, %v; want dropped", rep.Outcome, err)
	}
	var pick *retention.Pick
	for i := range rep.Picks {
		if rep.Picks[i].Path == expired.Path {
			pick = &rep.Picks[i]
		}
	}
	if pick == nil || pick.Action != "file" || pick.Expired != expired.Rows {
		t.Fatalf("the D-33 file's pick %+v; want a file drop of its %d rows", pick, expired.Rows)
	}
	if got := onDisk(); fmt.Sprint(got) != fmt.Sprint(disk) {
		t.Errorf("the drop wrote into %s: %v, before %v", filepath.Base(dir), got, disk)
	}
	after, err := lake.LiveFiles(ctx, e.Table("events"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range after {
		if f.Path == expired.Path || filepath.Dir(strings.TrimPrefix(f.Path, "file://")) == dir {
			t.Errorf("D-33 still has a live file after the drop: %s (%d rows)", f.Path, f.Rows)
		}
	}
	// The drop's own commit adds no data file.
	tbl := e.Table("events")
	dropped := false
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary == nil || s.Summary.Properties["siglake.retention.dropped-files"] == "" {
			continue
		}
		dropped = true
		if n := s.Summary.Properties["added-data-files"]; n != "" && n != "0" {
			t.Errorf("the drop's snapshot %d added %s data files", s.SnapshotID, n)
		}
	}
	if !dropped {
		t.Error("no metadata-only drop commit")
	}
	cutoff := now.Add(-30 * day).Truncate(day)
	want := keep(recs, func(rec arrow.RecordBatch, i int) bool {
		return str(rec, "severity", i) == "error" || !ts(rec, i).Before(cutoff)
	})
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %d rows, want %d", got.Rows, want.Rows)
	}
	ps, _ := pending.List(tbl.Properties())
	listed := false
	for _, p := range ps {
		listed = listed || slices.Contains(p.Files, expired.Path)
	}
	if !listed {
		t.Errorf("the dropped file is not on the pending list: %+v", ps)
	}
}

// TestConcurrentPolicyEditsKeepBoth: two `retention set` edits interleaved between one's read and
// its write keep both rules: the later commit conflicts and its edit runs again on the policy the
// other stored (reading, editing and then storing lost the first rule), and the diff it reports
// starts from what it replaced.
func TestConcurrentPolicyEditsKeepBoth(t *testing.T) {
	e := testlake.New(t)
	days(e, 1, 0)
	ctx := context.Background()
	add := func(r retention.Rule) func(retention.Policy, error) (retention.Policy, error) {
		return func(cur retention.Policy, err error) (retention.Policy, error) {
			if err != nil {
				return retention.Policy{}, err
			}
			return cur.Apply(retention.Edit{Rules: []retention.Rule{r}})
		}
	}
	debug := retention.Rule{Where: where("severity", "debug"), Period: "3d"}
	info := retention.Rule{Where: where("severity", "info"), Period: "7d"}
	calls := 0
	before, after, err := retention.Update(ctx, e.Lake, "events", func(cur retention.Policy, err error) (retention.Policy, error) {
		calls++
		if calls == 1 { // another operator's edit commits between this read and this write
			if _, _, err := retention.Update(ctx, otherProcess(t, e), "events", add(info), nil); err != nil {
				t.Fatal(err)
			}
		}
		return add(debug)(cur, err)
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, _, err := retention.PolicyProperty.Read(e.Table("events").Properties())
	if err != nil || len(stored.Rules) != 2 {
		t.Fatalf("stored policy %+v (%v), want both rules", stored, err)
	}
	if len(before.Rules) != 1 || len(after.Rules) != 2 || calls != 2 {
		t.Fatalf("replaced %+v, stored %+v after %d edits: want the other edit's rule replaced", before, after, calls)
	}
}
