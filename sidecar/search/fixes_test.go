package search

import (
	"context"
	"github.com/apache/iceberg-go"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

// spec is one data file of a fixed test table.
type spec struct {
	rec  arrow.RecordBatch   // released by appendFiles
	more []arrow.RecordBatch // further rows of the same file
	day  string
	opts merge.WriterOptions
}

// testLake opens an empty lake with the events table of sc.
func testLake(t *testing.T, sc *arrow.Schema) (*lake.Lake, *table.Table, icebergio.WriteFileIO) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	l, err := lake.Open(ctx, lake.Config{Catalog: "sqlite:" + path.Join(dir, "catalog.db"), Warehouse: path.Join(dir, "warehouse"), Namespace: "siglake"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	tbl, err := l.EnsureTable(ctx, "events", sc)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l, tbl, fsys.(icebergio.WriteFileIO)
}

// appendFiles writes each spec as one commit and returns the reloaded table and the files' paths.
func appendFiles(t *testing.T, l *lake.Lake, tbl *table.Table, fsys icebergio.WriteFileIO, sc *arrow.Schema, specs []spec, seq0 int) (*table.Table, []string) {
	t.Helper()
	ctx := context.Background()
	var paths []string
	for i, s := range specs {
		opts := s.opts
		opts.TimestampColumn = lake.TimestampColumn
		day := s.day
		if day == "" {
			day = "2026-11-29"
		}
		outs, err := writer.WriteSorted(ctx, fsys, func(int) string {
			return lake.DataDir(tbl, day) + "/" + merge.DataFileName(opts.Generation)
		}, sc, append([]arrow.RecordBatch{s.rec}, s.more...), opts)
		s.rec.Release()
		for _, r := range s.more {
			r.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		files, err := lake.DataFiles(tbl, outs)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range outs {
			paths = append(paths, o.Path)
		}
		m := marks.Mark{Incarnation: 1, Seq: uint64(seq0 + i + 1)}
		if _, err := l.CommitAppend(ctx, lake.AppendRequest{Table: "events", Files: files, Stream: "s", First: m, Last: m}, lake.Retry{Attempts: 3}); err != nil {
			t.Fatal(err)
		}
		if tbl, err = l.LoadTable(ctx, "events"); err != nil {
			t.Fatal(err)
		}
	}
	return tbl, paths
}

func eventsSchema() *arrow.Schema {
	fields := slices.Clone(walgen.EventsSchema.Fields())
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	return arrow.NewSchema(fields, nil)
}

// peakAllocator tracks the most bytes its allocator held at once.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func (p *peakAllocator) add(n int) {
	c := p.cur.Add(int64(n))
	for {
		pk := p.peak.Load()
		if c <= pk || p.peak.CompareAndSwap(pk, c) {
			return
		}
	}
}

func (p *peakAllocator) Allocate(n int) []byte { p.add(n); return p.Allocator.Allocate(n) }
func (p *peakAllocator) Reallocate(n int, b []byte) []byte {
	p.add(n - len(b))
	return p.Allocator.Reallocate(n, b)
}
func (p *peakAllocator) Free(b []byte) { p.add(-len(b)); p.Allocator.Free(b) }

// TestSearchMemoryFollowsBudget: six overlapping files of one 128Ki-row row group each, all open
// at once, hold no more decoded memory than the budget (a stream holds a slice, not a row group).
func TestSearchMemoryFollowsBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 768Ki rows")
	}
	sc := eventsSchema()
	l, tbl, fsys := testLake(t, sc)
	g := walgen.New(walgen.Options{Seed: 5})
	var specs []spec
	for i := 0; i < 6; i++ {
		rec := g.Batch(memory.DefaultAllocator, base.Add(time.Duration(i)*time.Millisecond), 128<<10, time.Millisecond)
		specs = append(specs, spec{rec: rec, opts: merge.WriterOptions{RowGroupRows: 128 << 10}})
	}
	tbl, _ = appendFiles(t, l, tbl, fsys, sc, specs, 0)
	for _, desc := range []bool{false, true} {
		mem := &peakAllocator{Allocator: memory.NewCheckedAllocator(memory.NewGoAllocator())}
		const budget = 8 << 20
		var n int64
		ex, err := Run(context.Background(), tbl, Query{Desc: desc}, Options{MemoryBudget: budget, Mem: mem}, func(arrow.RecordBatch, int) (int64, error) {
			n++
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != 6*128<<10 || ex.MaxOpenStreams != 6 {
			t.Fatalf("desc=%v: %d rows, %d streams open at once; want %d, 6", desc, n, ex.MaxOpenStreams, 6*128<<10)
		}
		// Slack: the Parquet readers' pages, which no batch length shrinks (shapeFor): 6 streams of
		// 8 columns of a 256 KiB page. Before slices, a stream held its whole row group: 297 MB.
		const slack = 6 * 8 * pageBytes
		t.Logf("desc=%v: peak %d bytes of a %d budget, batch rows %d", desc, mem.peak.Load(), budget, ex.BatchRows)
		if p := mem.peak.Load(); p > budget+slack {
			t.Errorf("desc=%v: peak decoded memory %d > budget %d + %d", desc, p, budget, slack)
		}
	}
}

// footerKV reads the key-value metadata of data file p.
func footerKV(t *testing.T, tbl *table.Table, p string) map[string]string {
	t.Helper()
	fsys, _ := tbl.FS(context.Background())
	fh, err := fsys.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	kv := map[string]string{}
	md := pf.MetaData().KeyValueMetadata()
	for _, k := range md.Keys() {
		kv[k] = *md.FindValue(k)
	}
	return kv
}

// collect runs q and returns the rows as the full scan keys them.
func collect(t *testing.T, tbl *table.Table, q Query, o Options) ([]string, *Explain) {
	t.Helper()
	var got []string
	ex, err := Run(context.Background(), tbl, q, o, func(rec arrow.RecordBatch, i int) (int64, error) {
		got = append(got, rowOf(rec, i, "", 0).key)
		return 1, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", describe(q), err)
	}
	return got, ex
}

// TestSearchIgnoresShiftedRowGroupEntry: a footer whose row-group entry has as many entries as
// the file has row groups, but other boundaries (another file's: 100-row groups over 120-row
// ones), is not trusted: the search still equals the full scan.
func TestSearchIgnoresShiftedRowGroupEntry(t *testing.T) {
	sc := eventsSchema()
	l, tbl, fsys := testLake(t, sc)
	g := walgen.New(walgen.Options{Seed: 3})
	a := g.Batch(memory.DefaultAllocator, base, 300, time.Second)
	b := g.Batch(memory.DefaultAllocator, base, 300, time.Second)
	tbl, paths := appendFiles(t, l, tbl, fsys, sc, []spec{
		{rec: a, opts: merge.WriterOptions{RowGroupRows: 100}},
		{rec: b, opts: merge.WriterOptions{RowGroupRows: 120}},
	}, 0)
	entryA := footerKV(t, tbl, paths[0])[index.KeyRowGroups]
	o := Options{editFooter: func(p string, kv map[string]string) {
		if p == paths[1] {
			kv[index.KeyRowGroups] = entryA
		}
	}}
	all := fullScan(t, tbl)
	// Seconds 105-115: in A's second row group, in B's first.
	q := Query{From: base.Add(105 * time.Second).Format(time.RFC3339), To: base.Add(116 * time.Second).Format(time.RFC3339), Limit: 0}
	want := expected(all, q)
	got, ex := collect(t, tbl, q, o)
	if !slices.Equal(got, want) {
		t.Fatalf("got %d rows, want %d: %+v %+v", len(got), len(want), ex.Files, ex.RowGroups)
	}
	if ex.RowGroups.Pruned[ByTimeBounds] == 0 {
		t.Fatalf("no row group pruned by time: %+v", ex.RowGroups)
	}
}

// TestSearchPuffinAfterFooterStage: a file the time buckets prune costs no Puffin read, though a
// sidecar of the --where column is registered for it.
func TestSearchPuffinAfterFooterStage(t *testing.T) {
	sc := eventsSchema()
	l, tbl, fsys := testLake(t, sc)
	g := walgen.New(walgen.Options{Seed: 4, Services: 2})
	at10 := g.Batch(memory.DefaultAllocator, base, 500, time.Millisecond)
	at12 := g.Batch(memory.DefaultAllocator, base.Add(2*time.Hour), 500, time.Millisecond)
	opts := merge.WriterOptions{Metadata: merge.MetadataOptions{IndexColumns: []string{"service"}, InvertedIndexOff: true}}
	tbl, paths := appendFiles(t, l, tbl, fsys, sc, []spec{{rec: at10, more: []arrow.RecordBatch{at12}, opts: opts}}, 0)
	rb := &puffinidx.Rebuilder{Metrics: puffinidx.NewMetrics(nil), Log: zap.NewNop()}
	if res, err := rb.Run(context.Background(), tbl, fsys, tbl.CurrentSnapshot().SnapshotID, paths, []string{"service"}); err != nil || res.Files != 1 {
		t.Fatalf("index rebuild: %+v, %v", res, err)
	}
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	all := fullScan(t, tbl)
	q := Query{From: base.Add(time.Hour).Format(time.RFC3339), To: base.Add(90 * time.Minute).Format(time.RFC3339),
		Where: []rows.Condition{{Column: "service", Values: []string{all[0].service}}}}
	got, ex := collect(t, tbl, q, Options{})
	if len(got) != 0 || ex.Files.Pruned[ByTimeBuckets] != 1 {
		t.Fatalf("%d rows; files %+v, want pruned by %s", len(got), ex.Files, ByTimeBuckets)
	}
	if ex.PuffinIndexesRead != 0 || ex.IndexesNotRead != 0 {
		t.Fatalf("Puffin indexes read %d, weighed and left %d: want none for a pruned file", ex.PuffinIndexesRead, ex.IndexesNotRead)
	}
	// Within the range the same file's sidecar is weighed (read, or left as costlier than a scan).
	q.From, q.To = base.Format(time.RFC3339), base.Add(time.Minute).Format(time.RFC3339)
	got, ex = collect(t, tbl, q, Options{})
	if want := expected(all, q); !slices.Equal(got, want) || ex.PuffinIndexesRead+ex.IndexesNotRead != 1 {
		t.Fatalf("in range: %d rows (want %d), Puffin indexes read %d, left %d (want one weighed)", len(got), len(want), ex.PuffinIndexesRead, ex.IndexesNotRead)
	}
}

// TestSearchTwoDaysInContainsToken: paths the random property test reaches rarely, each equal
// to the full scan and pruning by its reason: two day partitions (manifest bounds), --in with
// several values, and --contains with --token together (row-group blooms).
func TestSearchTwoDaysInContainsToken(t *testing.T) {
	sc := eventsSchema()
	l, tbl, fsys := testLake(t, sc)
	g := walgen.New(walgen.Options{Seed: 8, Services: 6})
	opts := merge.WriterOptions{RowGroupRows: 100, Metadata: merge.MetadataOptions{IndexColumns: []string{"service"}}}
	tbl, _ = appendFiles(t, l, tbl, fsys, sc, []spec{
		{rec: g.Batch(memory.DefaultAllocator, base, 1000, 50*time.Millisecond), opts: opts},
		{rec: g.Batch(memory.DefaultAllocator, base.Add(24*time.Hour), 1000, 50*time.Millisecond), day: "2026-11-30", opts: opts},
	}, 0)
	all := fullScan(t, tbl)
	pick := all[len(all)/3]
	// The picked row's rarest token, and a substring of it: blooms prune on rare terms.
	tok, seen := "", len(all)+1
	for _, tk := range tokensOf(*pick.raw) {
		n := 0
		for _, r := range all {
			if r.raw != nil && strings.Contains(*r.raw, tk) {
				n++
			}
		}
		if n < seen {
			tok, seen = tk, n
		}
	}
	sub := tok[:max(len(tok)-1, 1)]
	other := all[len(all)/2].service
	for _, c := range []struct {
		name    string
		q       Query
		reasons []Reason
	}{
		{"second day", Query{From: "2026-11-30"}, []Reason{ByManifest}},
		{"--in two services, --contains and --token", Query{Where: []rows.Condition{{Column: "service", Values: []string{pick.service, other}}},
			Contains: &sub, Token: &tok}, []Reason{ByTokenBloom, ByTrigramBloom}},
	} {
		want := expected(all, c.q)
		got, ex := collect(t, tbl, c.q, Options{})
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("%s: got %d rows, want %d (non-zero)", c.name, len(got), len(want))
		}
		var pruned int64
		for _, r := range c.reasons {
			pruned += ex.Files.Pruned[r] + ex.RowGroups.Pruned[r]
		}
		if pruned == 0 {
			t.Errorf("%s: nothing pruned by %v: files %+v, row groups %+v", c.name, c.reasons, ex.Files, ex.RowGroups)
		}
	}
}

// TestSearchColumnAddedLater: a --where column that older files lack prunes them (missing_column:
// every value is null there) and the rows equal the full scan's; --columns prints it as absent.
func TestSearchColumnAddedLater(t *testing.T) {
	ctx := context.Background()
	sc := eventsSchema()
	l, tbl, fsys := testLake(t, sc)
	g := walgen.New(walgen.Options{Seed: 9})
	tbl, _ = appendFiles(t, l, tbl, fsys, sc, []spec{{rec: g.Batch(memory.DefaultAllocator, base, 300, 10*time.Millisecond)}}, 0)
	sc2 := arrow.NewSchema(append(slices.Clone(sc.Fields()), arrow.Field{Name: "tenant", Type: arrow.BinaryTypes.String, Nullable: true}), nil)
	tbl, err := l.EnsureTable(ctx, "events", sc2)
	if err != nil {
		t.Fatal(err)
	}
	rec := g.Batch(memory.DefaultAllocator, base.Add(time.Second), 300, 10*time.Millisecond)
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < int(rec.NumRows()); i++ {
		b.Append([]string{"t1", "t2"}[i%2])
	}
	tenant := b.NewArray()
	rec2 := array.NewRecordBatch(sc2, append(slices.Clone(rec.Columns()), tenant), rec.NumRows())
	rec.Release()
	tenant.Release()
	tbl, _ = appendFiles(t, l, tbl, fsys, sc2, []spec{{rec: rec2}}, 1)
	q := Query{Where: []rows.Condition{{Column: "tenant", Values: []string{"t1"}}}, Columns: []string{"tenant"}}
	var got int
	ex, err := Run(ctx, tbl, q, Options{}, func(rec arrow.RecordBatch, i int) (int64, error) {
		if v := rec.Column(rec.Schema().FieldIndices("tenant")[0]).(*array.String).Value(i); v != "t1" {
			t.Fatalf("row with tenant %q", v)
		}
		got++
		return 1, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != 150 || ex.Files.Pruned[ByMissingColumn] != 1 {
		t.Fatalf("%d rows (want 150), files %+v (want one pruned by %s)", got, ex.Files, ByMissingColumn)
	}
	// Without a condition on it, the old file's rows print the new column as absent.
	var nulls, rows int
	if _, err := Run(ctx, tbl, Query{Columns: []string{"tenant"}}, Options{}, func(rec arrow.RecordBatch, i int) (int64, error) {
		rows++
		if idx := rec.Schema().FieldIndices("tenant"); len(idx) == 0 || rec.Column(idx[0]).IsNull(i) {
			nulls++
		}
		return 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	if rows != 600 || nulls != 300 {
		t.Fatalf("--columns tenant: %d rows, %d without tenant; want 600, 300", rows, nulls)
	}
}

// TestRebuilderRegistersThroughItsHook: with Register set (the sidecar passes its Lake's
// UpdateProperties, so the registrations queue behind the table's other commits in the process),
// the registrations are committed only through it, and what it commits is what search reads.
func TestRebuilderRegistersThroughItsHook(t *testing.T) {
	sc := eventsSchema()
	l, tbl, fsys := testLake(t, sc)
	g := walgen.New(walgen.Options{Seed: 5, Services: 2})
	rec := g.Batch(memory.DefaultAllocator, base, 300, time.Millisecond)
	opts := merge.WriterOptions{Metadata: merge.MetadataOptions{IndexColumns: []string{"service"}, InvertedIndexOff: true}}
	tbl, paths := appendFiles(t, l, tbl, fsys, sc, []spec{{rec: rec, opts: opts}}, 0)
	before := len(tbl.Properties())
	var calls int
	rb := &puffinidx.Rebuilder{Metrics: puffinidx.NewMetrics(nil), Log: zap.NewNop(),
		Register: func(ctx context.Context, set iceberg.Properties) error {
			calls++
			return l.UpdateProperties(ctx, "events", func(iceberg.Properties) (iceberg.Properties, []string) { return set, nil })
		}}
	if res, err := rb.Run(context.Background(), tbl, fsys, tbl.CurrentSnapshot().SnapshotID, paths, []string{"service"}); err != nil || res.Files != 1 {
		t.Fatalf("index rebuild: %+v, %v", res, err)
	}
	fresh, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 || len(fresh.Properties()) != before+1 {
		t.Fatalf("Register called %d times, properties %d -> %d; want one registration, through Register", calls, before, len(fresh.Properties()))
	}
	if _, ok := fresh.Properties()[puffinidx.Key(paths[0])]; !ok {
		t.Fatalf("no registration of %s after the rebuild", paths[0])
	}
}
