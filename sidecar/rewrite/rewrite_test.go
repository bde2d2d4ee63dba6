package rewrite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/internal/membudgettest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/deadline"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/walgen"
)

// testTable makes table events on the embedded catalog with n overlapping generation-0 files of
// rows rows each, committed one append each, and returns the lake and the table's warehouse dir.
func testTable(t *testing.T, n, rows int) (*lake.Lake, string) {
	t.Helper()
	return testTableNamed(t, n, rows, func(int) string { return merge.DataFileName(0) })
}

// testTableNamed is testTable with file i named name(i).
func testTableNamed(t *testing.T, n, rows int, name func(i int) string) (*lake.Lake, string) {
	t.Helper()
	l, cfg := testTableConfig(t, n, rows, name)
	return l, cfg.Warehouse
}

// testTableConfig is testTableNamed returning the lake's configuration, so a test can open the
// same catalog and warehouse again (a second process).
func testTableConfig(t *testing.T, n, rows int, name func(i int) string) (*lake.Lake, lake.Config) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cfg := lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "wh"), Namespace: "siglake"}
	l, err := lake.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	g := walgen.New(walgen.Options{Seed: 7, LateFraction: 0.1, MaxLateness: time.Minute})
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i)*time.Second), rows, time.Millisecond)
		fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
		for j := range fields {
			fields[j].Metadata = arrow.Metadata{}
		}
		sc := arrow.NewSchema(fields, nil)
		tbl, err := l.EnsureTable(ctx, "events", sc)
		if err != nil {
			t.Fatal(err)
		}
		fsys, _ := tbl.FS(ctx)
		part := "2026-11-29"
		outs, err := writer.WriteSorted(ctx, fsys.(icebergio.WriteFileIO), func(int) string { return lake.DataDir(tbl, part) + "/" + name(i) },
			sc, []arrow.RecordBatch{rec}, merge.WriterOptions{TimestampColumn: lake.TimestampColumn})
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		files, err := lake.DataFiles(tbl, outs)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.CommitAppend(ctx, lake.AppendRequest{Table: "events", Files: files, Stream: "s",
			First: marks.Mark{Incarnation: 1, Seq: uint64(i)}, Last: marks.Mark{Incarnation: 1, Seq: uint64(i)}}, lake.Retry{Attempts: 1}); err != nil {
			t.Fatal(err)
		}
	}
	return l, cfg
}

func live(t *testing.T, l *lake.Lake) (*table.Table, []lake.File, int64) {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	var rows int64
	for _, f := range files {
		rows += f.Rows
	}
	return tbl, files, rows
}

// parquetOnDisk lists every data file in the warehouse, live or not.
func parquetOnDisk(t *testing.T, wh string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	_ = filepath.Walk(wh, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			out["file://"+p] = true
		}
		return nil
	})
	return out
}

func executor(l *lake.Lake) *Executor { return &Executor{Lake: l, Now: time.Now} }

func job(t *table.Table, files []lake.File) Job {
	gen := 0
	for _, f := range files {
		gen = max(gen, f.Generation+1)
	}
	return Job{Kind: "l0", Partition: files[0].Partition, Inputs: files, Generation: gen, Dir: lake.DataDir(t, files[0].Partition)}
}

func TestRunCommitted(t *testing.T) {
	l, _ := testTable(t, 4, 500)
	tbl, files, rows := live(t, l)
	var after []int64
	e := executor(l)
	e.AfterCommit = func(_ context.Context, _ *table.Table, _ icebergio.WriteFileIO, snap int64, outs []merge.Output) {
		after = append(after, snap, int64(len(outs)))
	}
	out := e.Run(context.Background(), tbl, job(tbl, files))
	if out.Status != Committed || out.Err != nil || out.Table == nil || out.SnapshotID == 0 {
		t.Fatalf("outcome %s %v", out.Status, out.Err)
	}
	_, now, got := live(t, l)
	if got != rows || len(now) != len(out.Merge.Outputs) || now[0].Generation != 1 {
		t.Fatalf("after the rewrite: %d rows in %d files (gen %d), want %d rows in %d outputs of generation 1", got, len(now), now[0].Generation, rows, len(out.Merge.Outputs))
	}
	if len(after) != 2 || after[0] != out.SnapshotID {
		t.Fatalf("AfterCommit saw %v, want the rewrite's snapshot %d", after, out.SnapshotID)
	}
	if out.Table.CurrentSnapshot().Summary.Properties["siglake.rewrite.kind"] != "l0" {
		t.Fatalf("snapshot summary %v", out.Table.CurrentSnapshot().Summary.Properties)
	}
}

// TestRunKeepsStreams: a rewrite of late files only writes late files (they stay in the late
// stream the planner plans apart); a bin holding an on-time file writes on-time files.
func TestRunKeepsStreams(t *testing.T) {
	for _, c := range []struct {
		name string
		late func(i int) bool
		want bool
	}{
		{"all late", func(int) bool { return true }, true},
		{"mixed", func(i int) bool { return i > 0 }, false},
		{"on-time", func(int) bool { return false }, false},
	} {
		l, _ := testTableNamed(t, 3, 300, func(i int) string {
			if c.late(i) {
				return merge.LateFileName(0)
			}
			return merge.DataFileName(0)
		})
		tbl, files, _ := live(t, l)
		for _, f := range files {
			if f.Late != merge.ParseLate(f.Path) {
				t.Fatalf("%s: lake.File.Late %v for %s", c.name, f.Late, f.Path)
			}
		}
		out := executor(l).Run(context.Background(), tbl, job(tbl, files))
		if out.Status != Committed {
			t.Fatalf("%s: outcome %s %v", c.name, out.Status, out.Err)
		}
		_, now, _ := live(t, l)
		for _, f := range now {
			if f.Late != c.want || f.Generation != 1 {
				t.Fatalf("%s: output %s late %v generation %d, want late %v generation 1", c.name, f.Path, f.Late, f.Generation, c.want)
			}
		}
	}
}

// TestRunNamesSparseRunsLate: with density cuts, the sparse head of a bin (the late rows before
// its first on-time window) is written as a late file, the rest on-time, and every row is kept.
func TestRunNamesSparseRunsLate(t *testing.T) {
	l, _ := testTable(t, 3, 100_000)
	tbl, files, rows := live(t, l)
	j := job(tbl, files)
	j.SplitSparse = density.DefaultSplitSparse
	out := executor(l).Run(context.Background(), tbl, j)
	if out.Status != Committed {
		t.Fatalf("outcome %s %v", out.Status, out.Err)
	}
	_, now, got := live(t, l)
	var late, onTime int64
	for _, f := range now {
		if f.Late {
			late += f.Rows
		} else {
			onTime += f.Rows
		}
	}
	if got != rows || late == 0 || late > rows/10 || onTime == 0 {
		t.Fatalf("%d rows (want %d): %d in late files, %d on-time; want the sparse head apart", got, rows, late, onTime)
	}
}

// TestRunConflictRemovesOutputs: the inputs were replaced after the caller planned (another owner);
// the replace commits nothing and the outputs leave the warehouse.
func TestRunConflictRemovesOutputs(t *testing.T) {
	l, wh := testTable(t, 4, 500)
	stale, files, rows := live(t, l)
	if out := executor(l).Run(context.Background(), stale, job(stale, files[:2])); out.Status != Committed {
		t.Fatalf("first rewrite: %s %v", out.Status, out.Err)
	}
	before := parquetOnDisk(t, wh)
	out := executor(l).Run(context.Background(), stale, job(stale, files))
	if out.Status != Conflict || !errors.Is(out.Err, lake.ErrInputsGone) || len(out.Merge.Outputs) == 0 {
		t.Fatalf("outcome %s %v (%d outputs), want a conflict after writing outputs", out.Status, out.Err, len(out.Merge.Outputs))
	}
	if after := parquetOnDisk(t, wh); len(after) != len(before) {
		t.Fatalf("%d data files on disk after the lost rewrite, %d before: its outputs were not removed", len(after), len(before))
	}
	if _, _, got := live(t, l); got != rows {
		t.Fatalf("rows %d after the conflict, want %d", got, rows)
	}
}

// TestRunStorageFault: an input that cannot be read fails the merge; nothing is committed and no
// output stays behind.
func TestRunStorageFault(t *testing.T) {
	l, wh := testTable(t, 3, 500)
	tbl, files, rows := live(t, l)
	if err := os.WriteFile(strings.TrimPrefix(files[1].Path, "file://"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := parquetOnDisk(t, wh)
	out := executor(l).Run(context.Background(), tbl, job(tbl, files))
	if out.Status != Failed || out.Err == nil || !strings.Contains(out.Err.Error(), files[1].Path) {
		t.Fatalf("outcome %s %v, want a failure naming %s", out.Status, out.Err, files[1].Path)
	}
	if after := parquetOnDisk(t, wh); len(after) != len(before) {
		t.Fatalf("%d data files on disk after the failed merge, %d before", len(after), len(before))
	}
	if _, now, got := live(t, l); got != rows || len(now) != len(files) {
		t.Fatalf("table changed by a failed rewrite: %d rows in %d files", got, len(now))
	}
}

// TestRunMaybeCommitted: a commit whose response is lost may have committed, so its outputs are
// kept (here the table does reference them: removing them would lose rows).
func TestRunMaybeCommitted(t *testing.T) {
	l, _ := testTable(t, 3, 500)
	tbl, files, rows := live(t, l)
	lost := 0 // the commit happens, then its response is lost
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		if _, _, err := next(ctx, id, reqs, ups); err != nil {
			return nil, "", err
		}
		lost++
		return nil, "", errors.New("connection reset by peer")
	})
	out := executor(l).Run(context.Background(), tbl, job(tbl, files))
	if lost != 1 {
		t.Fatalf("the lost response was injected %d times, want 1", lost)
	}
	if out.Status != MaybeCommitted || out.Err == nil {
		t.Fatalf("outcome %s %v, want maybe_committed", out.Status, out.Err)
	}
	_, now, got := live(t, l)
	if got != rows {
		t.Fatalf("rows %d, want %d", got, rows)
	}
	for _, f := range now {
		if _, err := os.Stat(strings.TrimPrefix(f.Path, "file://")); err != nil {
			t.Fatalf("live file %s is gone: the executor removed outputs of a commit that happened", f.Path)
		}
	}
}

// TestRunCommitAbandonedAtDeadline: a replace the catalog holds past the commit deadline is
// abandoned (not waited for) as maybe committed, so its outputs stay; the catalog then applies it
// late, and the table, which now references them, keeps every row.
func TestRunCommitAbandonedAtDeadline(t *testing.T) {
	l, _ := testTable(t, 3, 500)
	tbl, files, rows := live(t, l)
	l.SetCommitTimeout(200 * time.Millisecond)
	release := make(chan struct{})
	landed := make(chan error, 1)
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		<-release // deaf to ctx: a catalog that holds the commit and applies it later
		m, loc, err := next(context.Background(), id, reqs, ups)
		landed <- err
		return m, loc, err
	})
	safety := time.AfterFunc(5*time.Second, func() { close(release) })
	t0 := time.Now()
	out := executor(l).Run(context.Background(), tbl, job(tbl, files))
	took := time.Since(t0)
	if !safety.Stop() {
		t.Fatalf("the rewrite waited %s for the held commit instead of abandoning it at the deadline", took)
	}
	if out.Status != MaybeCommitted || !errors.Is(out.Err, deadline.ErrCommitDeadline) {
		t.Fatalf("outcome %s %v, want maybe_committed at the commit deadline", out.Status, out.Err)
	}
	close(release)
	if err := <-landed; err != nil {
		t.Fatalf("the late commit: %v", err)
	}
	_, now, got := live(t, l)
	if got != rows || len(now) == len(files) && now[0].Path == files[0].Path {
		t.Fatalf("after the late commit: %d rows in %d files, want %d rows in the rewrite's outputs", got, len(now), rows)
	}
	for _, f := range now {
		if _, err := os.Stat(strings.TrimPrefix(f.Path, "file://")); err != nil {
			t.Fatalf("live file %s is gone: the executor removed outputs of an abandoned commit", f.Path)
		}
	}
}

// TestRunTakesTheMergeBudget: the merge takes its memory budget from the process budget while it
// runs and gives it back before the commit's AfterCommit (the index rebuild takes a share of its
// own there); a merge that cannot get its share fails without writing or committing.
func TestRunTakesTheMergeBudget(t *testing.T) {
	l, _ := testTable(t, 4, 500)
	tbl, files, _ := live(t, l)
	var held, asked int64
	e := executor(l)
	e.MemoryBudget = 64 << 20
	e.Reserve = func(_ context.Context, what string, n int64) (func(), error) {
		if what != "merge" || held != 0 {
			t.Errorf("share %q of %d bytes asked while %d held", what, n, held)
		}
		held, asked = n, n
		return func() { held = 0 }, nil
	}
	e.AfterCommit = func(context.Context, *table.Table, icebergio.WriteFileIO, int64, []merge.Output) {
		if held != 0 {
			t.Errorf("AfterCommit runs while the merge still holds %d bytes", held)
		}
	}
	if out := e.Run(context.Background(), tbl, job(tbl, files)); out.Status != Committed || asked != 64<<20 || held != 0 {
		t.Fatalf("outcome %s %v; asked %d, held %d after", out.Status, out.Err, asked, held)
	}
	tbl, files, _ = live(t, l)
	e.Reserve = func(ctx context.Context, _ string, _ int64) (func(), error) { return nil, context.Canceled }
	if out := e.Run(context.Background(), tbl, job(tbl, files)); out.Status != Failed || !errors.Is(out.Err, context.Canceled) {
		t.Fatalf("without memory: %s %v", out.Status, out.Err)
	}
	if _, now, _ := live(t, l); len(now) != len(files) {
		t.Fatalf("a merge without its share changed the table: %d files, was %d", len(now), len(files))
	}
}

// TestRunCancelledWhileWaitingForMemory: a rewrite whose merge waits for its share of a spent
// process budget, and whose context is cancelled there (a shutdown), ends Cancelled: nothing
// written or committed, and neither counted nor logged as a failed rewrite.
func TestRunCancelledWhileWaitingForMemory(t *testing.T) {
	l, wh := testTable(t, 4, 500)
	tbl, files, _ := live(t, l)
	before := parquetOnDisk(t, wh)
	b := membudgettest.Spent(t, 64<<20) // a drain holds it all
	e := executor(l)
	e.MemoryBudget = 32 << 20
	e.Reserve = b.Reserve
	ctx := membudgettest.CancelWhenWaiting(t, b, membudget.LoopMerge) // cancel once the merge is waiting
	out := e.Run(ctx, tbl, job(tbl, files))
	if out.Status != Cancelled || !errors.Is(out.Err, context.Canceled) {
		t.Fatalf("cancelled while waiting for memory: %s %v, want %s", out.Status, out.Err, Cancelled)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.Init([]string{"l0"})
	core, logs := observer.New(zap.InfoLevel)
	Observer{Metrics: m, Log: zap.New(core)}.Observe("events", job(tbl, files), out)
	if n := testutil.ToFloat64(m.Rewrites.WithLabelValues("l0", string(Failed))); n != 0 {
		t.Errorf("a shutdown counted as %v failed rewrites", n)
	}
	for _, c := range Classes {
		if n := testutil.ToFloat64(m.Failures.WithLabelValues("l0", string(c))); n != 0 {
			t.Errorf("a shutdown counted as %v %s rewrite failures", n, c)
		}
	}
	if errs := logs.FilterLevelExact(zap.ErrorLevel).Len(); errs != 0 {
		t.Errorf("a shutdown logged %d errors: %v", errs, logs.All())
	}
	if _, now, _ := live(t, l); len(now) != len(files) {
		t.Fatalf("a cancelled rewrite changed the table: %d files, was %d", len(now), len(files))
	}
	if after := parquetOnDisk(t, wh); len(after) != len(before) {
		t.Fatalf("a cancelled rewrite left files: %d on disk, was %d", len(after), len(before))
	}
}

// TestRunStartsNoMergeAfterStop: once the process is asked to stop, a rewrite starts no merge,
// although Run's context (the work context, which outlives the stop by the shutdown timeout) is
// live: not when the stop came before it asked for memory, not when it came while it waited and
// the budget then freed up (without Stop the wait would be granted, and the merge cut at the
// shutdown timeout as failed), and not when its share was granted as the stop came. Each ends
// Cancelled, giving back any share, with nothing written or committed.
func TestRunStartsNoMergeAfterStop(t *testing.T) {
	l, wh := testTable(t, 4, 500)
	tbl, files, _ := live(t, l)
	before := parquetOnDisk(t, wh)
	check := func(name string, out Outcome) {
		t.Helper()
		if out.Status != Cancelled || !errors.Is(out.Err, membudget.ErrStopping) || !membudget.IsStopping(context.Background(), out.Err) {
			t.Errorf("%s: %s %v, want %s by the stop", name, out.Status, out.Err, Cancelled)
		}
		if _, now, _ := live(t, l); len(now) != len(files) {
			t.Fatalf("%s: the rewrite changed the table: %d files, was %d", name, len(now), len(files))
		}
		if after := parquetOnDisk(t, wh); len(after) != len(before) {
			t.Fatalf("%s: the rewrite wrote files: %d on disk, was %d", name, len(after), len(before))
		}
	}

	stopped, sigterm := context.WithCancel(context.Background())
	sigterm()
	e := executor(l)
	e.Stop = stopped
	check("stopped before", e.Run(context.Background(), tbl, job(tbl, files)))

	b, stop := membudgettest.StopThenFree(t, 64<<20, membudget.LoopMerge)
	e = executor(l)
	e.MemoryBudget, e.Reserve, e.Stop = 32<<20, b.Reserve, stop
	check("stopped while waiting", e.Run(context.Background(), tbl, job(tbl, files)))
	if h := b.Snapshot().HeldBytes; h != 0 {
		t.Errorf("stopped while waiting: %d bytes still held", h)
	}

	stop, sigterm = context.WithCancel(context.Background())
	released := false
	e = executor(l)
	e.Stop = stop
	e.Reserve = func(context.Context, string, int64) (func(), error) {
		sigterm() // the grant and the stop at once
		return func() { released = true }, nil
	}
	check("granted as it stopped", e.Run(context.Background(), tbl, job(tbl, files)))
	if !released {
		t.Error("granted as it stopped: the share was not given back")
	}
}

// TestRunRefusesAMergePastMaxAge: a merge that took longer than MaxAge is not committed (orphan
// gc may have removed its early outputs by then): its outputs are removed and the table is as
// it was.
func TestRunRefusesAMergePastMaxAge(t *testing.T) {
	l, wh := testTable(t, 3, 500)
	tbl, files, rows := live(t, l)
	before := parquetOnDisk(t, wh)
	x := executor(l)
	x.MaxAge = time.Nanosecond
	out := x.Run(context.Background(), tbl, job(tbl, files))
	if out.Status != Failed || out.Err == nil || !strings.Contains(out.Err.Error(), "longer than a rewrite may") {
		t.Fatalf("outcome %s %v, want a failure past the age bound", out.Status, out.Err)
	}
	if after := parquetOnDisk(t, wh); len(after) != len(before) {
		t.Fatalf("%d data files on disk after the refused merge, %d before", len(after), len(before))
	}
	if _, now, got := live(t, l); got != rows || len(now) != len(files) {
		t.Fatalf("table changed by a refused rewrite: %d rows in %d files", got, len(now))
	}
	x.MaxAge = time.Hour
	if out := x.Run(context.Background(), tbl, job(tbl, files)); out.Status != Committed {
		t.Fatalf("within the bound: %s %v", out.Status, out.Err)
	}
}

// TestCommittedLogNamesTheDecoder: the "rewrote files" line of a k-way merge names its decoder;
// a path without one has no decoder field.
func TestCommittedLogNamesTheDecoder(t *testing.T) {
	for _, c := range []struct {
		res  merge.RewriteResult
		want string
	}{
		{merge.RewriteResult{Path: merge.PathKWay, Decoder: merge.DecoderParquetGo}, "parquet-go"},
		{merge.RewriteResult{Path: merge.PathKWay, Decoder: merge.DecoderArrow}, "arrow"},
		{merge.RewriteResult{Path: merge.PathSplice}, ""},
	} {
		m := NewMetrics(prometheus.NewRegistry())
		core, logs := observer.New(zap.InfoLevel)
		Observer{Metrics: m, Log: zap.New(core)}.Observe("events", Job{Kind: "l0"}, Outcome{Status: Committed, Merge: c.res})
		lines := logs.FilterMessage("rewrote files").All()
		if len(lines) != 1 {
			t.Fatalf("%s: %d \"rewrote files\" lines, want 1", c.res.Path, len(lines))
		}
		got, ok := lines[0].ContextMap()["decoder"]
		if c.want == "" && ok || c.want != "" && got != c.want {
			t.Errorf("%s: decoder field %v (present %v), want %q", c.res.Path, got, ok, c.want)
		}
		// A failed merge names its decoder too: where a parquet-go decode failing matters most.
		Observer{Metrics: m, Log: zap.New(core)}.Observe("events", Job{Kind: "l0"}, Outcome{Status: Failed, Merge: c.res, Err: errors.New("boom")})
		failed := logs.FilterMessage("rewrite failed; nothing committed, outputs removed").All()
		if got, ok := failed[len(failed)-1].ContextMap()["decoder"]; c.want == "" && ok || c.want != "" && got != c.want {
			t.Errorf("%s, failed: decoder field %v (present %v), want %q", c.res.Path, got, ok, c.want)
		}
	}
}
