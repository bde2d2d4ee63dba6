package maintain

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/puffin"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/rows"
)

var rebuildCols = []string{"trace_id", "service"}

// rebuildEnv drains overlapping small files into a table whose index specification names
// rebuildCols; mergeBytes decides the merge path of the rewrite that follows.
func rebuildEnv(t *testing.T, on bool, mergeBytes int64) (*env, *Maintainer, *time.Time) {
	t.Helper()
	e := newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0
		c.SnapshotExpireInterval = 0
		c.IndexRebuild = on
		c.MergeMemoryBytes = mergeBytes
	})
	e.writeSegments("events", 10, 1500, 7, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	setProps(t, e, iceberg.Properties{lake.IndexColumnsProperty: strings.Join(rebuildCols, ",")})
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	return e, newMaintainer(t, e, e.lake, clock), &now
}

func setProps(t *testing.T, e *env, p iceberg.Properties) {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(p); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// rewriteOnce runs one maintenance cycle that must commit a rewrite, and returns the merge paths
// its bins took.
func rewriteOnce(t *testing.T, m *Maintainer) []string {
	t.Helper()
	rep, err := m.Cycle(context.Background())
	if err != nil || rep.Rewrites == 0 || rep.Failed > 0 {
		t.Fatalf("cycle: %+v, %v; want a committed rewrite", rep, err)
	}
	var paths []string
	for _, b := range m.State("events").LastPass.Bins {
		paths = append(paths, b.Path)
	}
	return paths
}

func liveTable(t *testing.T, e *env) (*table.Table, []lake.File) {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, files
}

func registry(t *testing.T, tbl *table.Table) puffinidx.Registry {
	t.Helper()
	reg, err := puffinidx.Parse(tbl.Properties())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// textColumn returns one string column of rec, in row order (nil for null).
func textColumn(rec arrow.RecordBatch, column string) []*string {
	s := rec.Column(rec.Schema().FieldIndices(column)[0]).(*array.String)
	out := make([]*string, s.Len())
	for i := range out {
		if !s.IsNull(i) {
			v := s.Value(i)
			out[i] = &v
		}
	}
	return out
}

// TestIndexRebuildStreamedRewrite: with the switch on, a rewrite forced onto a streamed path gets
// a registered Puffin sidecar per output; through it every value in the data is found at exactly
// its rows, the answers equal a footer index built from the same rows, iceberg-go's Puffin reader
// reads the files, and the registrations survive snapshot expiry.
func TestIndexRebuildStreamedRewrite(t *testing.T) {
	e, m, _ := rebuildEnv(t, true, 1<<20)
	paths := rewriteOnce(t, m)
	if slices.Contains(paths, string(merge.PathInMemory)) {
		t.Fatalf("rewrite took %v; the test needs a streamed path", paths)
	}
	ctx := context.Background()
	tbl, files := liveTable(t, e)
	reg := registry(t, tbl)
	var outs []lake.File
	for _, f := range files {
		if f.Generation > 0 {
			outs = append(outs, f)
		}
	}
	if len(outs) == 0 || len(reg) != len(outs) {
		t.Fatalf("%d rewrite outputs, %d registrations; want one per output", len(outs), len(reg))
	}
	t.Logf("rewrite on %v wrote %d files, all registered", paths, len(outs))
	for _, f := range outs {
		r, ok := reg[f.Path]
		if !ok || fmt.Sprint(r.Columns()) != "[service trace_id]" || len(r.Sidecars) != 1 {
			t.Fatalf("registration of %s: %+v", f.Path, r)
		}
		// The streamed write left the footer without an index: what we found is the sidecar's.
		if ft, err := merge.ReadFooter(icebergio.LocalFS{}, f.Path); err != nil || ft.HasInvertedIndex("trace_id") {
			t.Fatalf("footer of streamed output %s has an inverted index (%v)", f.Path, err)
		}
		checkSidecarIndexes(t, tbl, f.Path, r.Sidecars[0])
	}
	if got := counterValue(t, m.Metrics, "siglake_index_rebuild_files_total", ""); got != float64(len(outs)) {
		t.Fatalf("files_total %v, want %d", got, len(outs))
	}
	if got := counterValue(t, m.Metrics, "siglake_index_rebuild_blobs_total", ""); got != float64(2*len(outs)) {
		t.Fatalf("blobs_total %v, want %d", got, 2*len(outs))
	}
	st := m.State("events").IndexRebuild
	if st == nil || !st.Enabled || st.Registered != len(outs) || st.LastFiles != len(outs) || st.LastBytes <= 0 {
		t.Fatalf("status: %+v", st)
	}

	// Expiry drops the rewrite's snapshot; the registrations are table properties and stay.
	e.writeSegments("events", 1, 100, 8, time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC))
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	if err := e.lake.ExpireSnapshots(ctx, "events", 1); err != nil {
		t.Fatal(err)
	}
	tbl, _ = liveTable(t, e)
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after expiry", n)
	}
	if after := registry(t, tbl); len(after) != len(reg) {
		t.Fatalf("expiry left %d of %d registrations", len(after), len(reg))
	}
	for _, f := range outs {
		if _, src, err := puffinidx.Index(ctx, tbl, f.Path, "trace_id"); src != puffinidx.FromPuffin || err != nil {
			t.Fatalf("after expiry %s: index from %s (%v)", f.Path, src, err)
		}
	}
}

// checkSidecarIndexes checks one data file's sidecar against the file's rows and against a footer
// index written by the in-memory path for the same rows, and reads it with iceberg-go's reader.
func checkSidecarIndexes(t *testing.T, tbl *table.Table, dataFile string, sc puffinidx.Sidecar) {
	t.Helper()
	ctx := context.Background()
	// An independent reader: iceberg-go's Puffin reader on the bare file.
	pf, err := os.Open(localPath(sc.Path))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	pr, err := puffin.NewReader(pf)
	if err != nil {
		t.Fatal(err)
	}
	blobs, err := pr.ReadAllBlobs()
	if err != nil || len(blobs) != 2 {
		t.Fatalf("%s: %d blobs, %v", sc.Path, len(blobs), err)
	}
	for _, b := range blobs {
		field, _ := tbl.Schema().FindFieldByName(b.Metadata.Properties[puffinidx.PropColumn])
		if b.Metadata.Type != puffinidx.BlobType || b.Metadata.Properties[puffinidx.PropDataFile] != dataFile ||
			len(b.Metadata.Fields) != 1 || int(b.Metadata.Fields[0]) != field.ID || b.Metadata.SnapshotID != sc.SnapshotID {
			t.Fatalf("%s: blob metadata %+v", sc.Path, b.Metadata)
		}
	}
	// The same rows written by the in-memory path carry footer indexes to compare with.
	sch, err := lake.ArrowSchema(tbl)
	if err != nil {
		t.Fatal(err)
	}
	rec := readFile(t, dataFile, sch)
	defer rec.Release()
	outs, err := writer.WriteSorted(ctx, icebergio.LocalFS{}, func(int) string { return filepath.Join(t.TempDir(), merge.DataFileName(1)) },
		sch, []arrow.RecordBatch{rec}, merge.WriterOptions{Generation: 1, TimestampColumn: lake.TimestampColumn,
			Metadata: merge.MetadataOptions{IndexColumns: rebuildCols}})
	if err != nil || len(outs) != 1 {
		t.Fatalf("footer reference: %d files, %v", len(outs), err)
	}
	ref, err := writer.DecodeFooter(outs[0].Meta)
	if err != nil {
		t.Fatal(err)
	}
	for _, col := range rebuildCols {
		ix, src, err := puffinidx.Index(ctx, tbl, dataFile, col)
		if err != nil || src != puffinidx.FromPuffin {
			t.Fatalf("%s of %s: from %s, %v", col, dataFile, src, err)
		}
		footer, ok := ref.Inverted(col)
		if !ok {
			t.Fatalf("reference footer has no %s index", col)
		}
		values := textColumn(rec, col)
		postings := 0
		seen := map[string]bool{}
		for row, v := range values {
			if v == nil {
				continue
			}
			postings++
			got := ix.Lookup(*v)
			if !slices.Contains(got, uint32(row)) {
				t.Fatalf("%s=%q: row %d is not among %v (false negative)", col, *v, row, got)
			}
			if !seen[*v] {
				seen[*v] = true
				if want := footer.Lookup(*v); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("%s=%q: sidecar says rows %v, footer index %v", col, *v, got, want)
				}
			}
		}
		if got := ix.Lookup("no-such-value"); len(got) != 0 {
			t.Fatalf("%s: absent value found at %v", col, got)
		}
		if ix.Terms() != len(seen) || postings == 0 {
			t.Fatalf("%s: %d terms indexed, %d distinct values in the file", col, ix.Terms(), len(seen))
		}
	}
}

// readFile reads a whole data file as one record in the table's Arrow schema.
func readFile(t *testing.T, path string, sch *arrow.Schema) arrow.RecordBatch {
	t.Helper()
	r, err := file.OpenParquetFile(localPath(path), false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Release()
	tr := array.NewTableReader(tb, tb.NumRows())
	defer tr.Release()
	if !tr.Next() {
		t.Fatalf("%s: no rows", path)
	}
	rec, err := input.Conform(tr.RecordBatch(), sch, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestIndexRebuildSkips: with the switch off nothing is registered or written; with it on, a
// rewrite on the in-memory path (whose outputs carry footer indexes) gets no Puffin blob, and the
// read side finds the footer's index.
func TestIndexRebuildSkips(t *testing.T) {
	for _, c := range []struct {
		name       string
		on         bool
		mergeBytes int64
		memory     bool
	}{
		{"switch off, streamed", false, 1 << 20, false},
		{"switch on, in-memory", true, 1 << 30, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, m, _ := rebuildEnv(t, c.on, c.mergeBytes)
			paths := rewriteOnce(t, m)
			if slices.Contains(paths, string(merge.PathInMemory)) != c.memory {
				t.Fatalf("rewrite took %v", paths)
			}
			tbl, files := liveTable(t, e)
			if reg := registry(t, tbl); len(reg) != 0 {
				t.Fatalf("%d registrations: %+v", len(reg), reg)
			}
			if _, err := os.Stat(localPath(puffinidx.Dir(tbl))); !os.IsNotExist(err) {
				t.Fatalf("sidecar folder exists (%v)", err)
			}
			if got := counterValue(t, m.Metrics, "siglake_index_rebuild_blobs_total", ""); got != 0 {
				t.Fatalf("blobs_total %v", got)
			}
			want := puffinidx.Absent
			if c.memory {
				want = puffinidx.FromFooter
			}
			for _, f := range files {
				if f.Generation == 0 {
					continue
				}
				if _, src, err := puffinidx.Index(context.Background(), tbl, f.Path, "trace_id"); src != want || err != nil {
					t.Fatalf("%s: index from %s (%v), want %s", f.Path, src, err, want)
				}
			}
		})
	}
}

// TestIndexRebuildReplacedAndGC: once a later rewrite replaces the indexed files, the next pass
// drops their registrations; gc keeps a registered sidecar (even of a file no longer live) and
// deletes it only after its registration is gone.
func TestIndexRebuildReplacedAndGC(t *testing.T) {
	e, m, now := rebuildEnv(t, true, 1<<20)
	rewriteOnce(t, m)
	ctx := context.Background()
	tbl, _ := liveTable(t, e)
	first := registry(t, tbl)
	*now = now.Add(5 * time.Minute) // the level checks are due again
	if len(first) == 0 {
		t.Fatal("no registration after the first rewrite")
	}
	// More overlapping rows: the next rewrite takes the indexed files with them.
	e.writeSegments("events", 10, 1500, 9, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC))
	if _, err := e.drain.Cycle(ctx, true); err != nil {
		t.Fatal(err)
	}
	rewriteOnce(t, m)
	tbl, files := liveTable(t, e)
	live := map[string]bool{}
	for _, f := range files {
		live[f.Path] = true
	}
	var gone []string // sidecars of indexed files the second rewrite replaced
	for f, r := range first {
		if !live[f] {
			gone = append(gone, r.Sidecars[0].Path)
		}
	}
	if len(gone) == 0 {
		t.Fatal("the second rewrite replaced none of the indexed files")
	}
	ageAll(t, tbl)
	// The registrations of replaced files are still there until the next pass: gc keeps them.
	if reg := registry(t, tbl); !registeredAll(reg, first) {
		t.Fatalf("registrations changed before the next pass: %+v", reg)
	}
	gcApply(t, e)
	for _, p := range gone {
		if _, err := os.Stat(localPath(p)); err != nil {
			t.Fatalf("gc deleted the registered sidecar %s: %v", p, err)
		}
	}
	// The next pass drops them (the files are not live); now gc deletes their sidecars only.
	*now = now.Add(5 * time.Minute)
	if _, err := m.Cycle(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, _ = liveTable(t, e)
	reg := registry(t, tbl)
	for f := range reg {
		if !live[f] {
			t.Fatalf("registration of %s (no longer live) kept", f)
		}
	}
	if got := counterValue(t, m.Metrics, "siglake_index_rebuild_registrations_dropped_total", ""); got < float64(len(gone)) {
		t.Fatalf("registrations_dropped_total %v, want >= %d", got, len(gone))
	}
	ageAll(t, tbl)
	gcApply(t, e)
	for _, p := range gone {
		if _, err := os.Stat(localPath(p)); !os.IsNotExist(err) {
			t.Fatalf("gc kept the unregistered sidecar %s (%v)", p, err)
		}
	}
	for p := range reg.PuffinPaths() {
		if _, err := os.Stat(localPath(p)); err != nil {
			t.Fatalf("gc deleted the registered sidecar %s of a live file: %v", p, err)
		}
	}
}

func registeredAll(reg, want puffinidx.Registry) bool {
	for f := range want {
		if _, ok := reg[f]; !ok {
			return false
		}
	}
	return true
}

// ageAll moves every file under the table location two hours into the past, so only references
// keep them from gc.
func ageAll(t *testing.T, tbl *table.Table) {
	t.Helper()
	past := time.Now().Add(-2 * time.Hour)
	filepath.Walk(localPath(tbl.Location()), func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			os.Chtimes(p, past, past)
		}
		return nil
	})
}

func gcApply(t *testing.T, e *env) {
	t.Helper()
	if _, err := orphans.Run(context.Background(), e.lake, orphans.Options{Keep: puffinidx.Referenced, OlderThan: time.Hour, MinAge: time.Hour, Apply: true}); err != nil {
		t.Fatal(err)
	}
	if got := e.tableSum("events"); got.Rows == 0 {
		t.Fatal("gc emptied the table")
	}
}

// TestIndexRebuildFailureKeepsRewrite (promise 7): when the Puffin write fails (the sidecar
// folder's path is taken by a file), the rewrite stays committed with all its rows, nothing is
// registered, and the failure is counted and shown.
func TestIndexRebuildFailureKeepsRewrite(t *testing.T) {
	e, m, _ := rebuildEnv(t, true, 1<<20)
	want := e.tableSum("events")
	tbl, _ := liveTable(t, e)
	dir := localPath(puffinidx.Dir(tbl))
	if err := os.WriteFile(dir, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	rewriteOnce(t, m)
	tbl, files := liveTable(t, e)
	rewritten := 0
	for _, f := range files {
		if f.Generation > 0 {
			rewritten++
		}
	}
	if rewritten == 0 {
		t.Fatal("the rewrite is not committed")
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows after the rewrite %+v, want %+v", got, want)
	}
	if reg := registry(t, tbl); len(reg) != 0 {
		t.Fatalf("registered %+v after a failed write", reg)
	}
	if got := counterValue(t, m.Metrics, "siglake_index_rebuild_failures_total", ""); got != float64(rewritten) {
		t.Fatalf("failures_total %v, want %d", got, rewritten)
	}
	st := m.State("events").IndexRebuild
	if st == nil || st.LastError == "" || st.Registered != 0 {
		t.Fatalf("status: %+v", st)
	}
}

// TestIndexRebuildFollowsDeleteTasks: a delete-task rewrite is a rewrite. With the switch on, its
// generation-0 output (streamed here, so without a footer index) gets a registered Puffin sidecar
// too, both from the maintenance loop's sweeper and from `siglake delete-sweep --apply`; with the
// switch off it stays unindexed.
func TestIndexRebuildFollowsDeleteTasks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		on      bool
		byHand  bool
		wantReg bool
	}{{"on", true, false, true}, {"on, by hand", true, true, true}, {"off", false, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e, m, _ := rebuildEnv(t, tc.on, 1<<20)
			before := map[string]bool{}
			_, files := liveTable(t, e)
			for _, f := range files {
				before[f.Path] = true
			}
			testlake.Record(t, e.lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
			if tc.byHand {
				deleteSweep(t, e, []string{"events"})
			} else if rep, err := m.Deletes().Sweep(context.Background(), "events", sweep.Options{Apply: true}); err != nil || rep.Rewritten == 0 {
				t.Fatalf("sweep rewrote %d files, %v", rep.Rewritten, err)
			}
			tbl, files := liveTable(t, e)
			reg := registry(t, tbl)
			var outs []string
			for _, f := range files {
				if !before[f.Path] {
					outs = append(outs, f.Path)
				}
			}
			if len(outs) == 0 {
				t.Fatalf("the delete task wrote no new file")
			}
			for _, p := range outs {
				if ft, err := merge.ReadFooter(icebergio.LocalFS{}, p); err != nil || ft.HasInvertedIndex("trace_id") {
					t.Fatalf("delete-task output %s has a footer index (%v); the test needs a streamed one", p, err)
				}
				r, ok := reg[p]
				if ok != tc.wantReg {
					t.Fatalf("delete-task output %s registered: %v, want %v", p, ok, tc.wantReg)
				}
				if ok {
					checkSidecarIndexes(t, tbl, p, r.Sidecars[0])
				}
			}
		})
	}
}

// TestIndexRebuildNotStartedAfterStop: a stop that comes while the rebuild asks for its memory
// share, with the share granted all the same (the budget is free), starts no rebuild: the share
// goes back, nothing is registered and no error is published. A rebuild started then would run
// under the work context until the shutdown timeout cut it.
func TestIndexRebuildNotStartedAfterStop(t *testing.T) {
	e, m, _ := rebuildEnv(t, true, 1<<20)
	b := membudget.New(1<<30, membudget.Options{})
	stop, signal := context.WithCancel(context.Background())
	defer signal()
	asked := false
	m.Stop = stop
	m.Reserve = func(ctx context.Context, what string, n int64) (func(), error) {
		if what == "index_rebuild" {
			asked = true
			signal()
		}
		return b.Reserve(ctx, what, n)
	}
	rewriteOnce(t, m)
	if !asked {
		t.Fatal("setup: the rebuild asked for no memory")
	}
	tbl, _ := liveTable(t, e)
	if reg := registry(t, tbl); len(reg) != 0 {
		t.Errorf("a rebuild ran after the stop: %d registrations", len(reg))
	}
	if got := counterValue(t, m.Metrics, "siglake_index_rebuild_blobs_total", ""); got != 0 {
		t.Errorf("a rebuild ran after the stop: blobs_total %v", got)
	}
	for _, err := range published(m).errors {
		t.Errorf("a stop published an error: %v", err)
	}
	if held := b.Snapshot().HeldBytes; held != 0 {
		t.Errorf("%d bytes of the budget still held after the cycle", held)
	}
}
