package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/writer"
)

func TestDensityCuts(t *testing.T) {
	const w = 10
	cases := []struct {
		name   string
		counts []int64
		frac   float64
		want   []int64
	}{
		{"off", []int64{1, 100, 100}, 0, nil},
		{"one bucket", []int64{0, 50, 0}, 0.05, nil},
		{"all dense", []int64{90, 100, 110}, 0.05, nil},
		{"sparse head", []int64{2, 1, 3, 100, 120, 90}, 0.05, []int64{30}},
		{"sparse head and tail", []int64{2, 100, 120, 1}, 0.05, []int64{10, 30}},
		{"gap between dense runs is no cut", []int64{100, 0, 0, 110}, 0.05, nil},
		{"sparse island", []int64{100, 1, 110}, 0.05, []int64{10, 20}},
		// The median is taken over rows: 3 of 4 rows' worth sit in the big bucket.
		{"median over rows", []int64{10, 10, 10, 90}, 0.5, []int64{30}},
	}
	for _, c := range cases {
		got := density.CutsOfHistogram(density.TimeHistogram{Start: 0, Width: w, Counts: c.counts}, c.frac).At
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: cuts %v, want %v", c.name, got, c.want)
		}
	}
}

// denseRows is the on-time part of lateBatch: just past density.SplitSparseMinRows.
const denseRows = density.SplitSparseMinRows + 4_000

// lateBatch is what a drain batch of a busy pod looks like: a dense on-time
// window of about 10 s starting at onTime, plus a sparse tail of late rows
// over the 5 minutes before it.
func lateBatch(r *rand.Rand, sc *arrow.Schema, onTime int64) []arrow.RecordBatch {
	dense := randRecord(r, sc, denseRows, onTime, 300, true, true)
	late := randRecord(r, sc, 400, onTime-300_000_000, 2_200_000, true, true)
	return []arrow.RecordBatch{dense, late}
}

func TestWriteSortedCutsSparseTail(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(7, 7))
	const onTime = int64(1_700_000_040_000_000)
	recs := lateBatch(r, sc, onTime)
	var want []string
	for _, rec := range recs {
		want = append(want, rowStrings(t, rec, sc)...)
		defer rec.Release()
	}
	sort.SliceStable(want, func(a, b int) bool { return rowTs(want[a]) < rowTs(want[b]) })

	for _, split := range []float64{0, density.DefaultSplitSparse} {
		dir := t.TempDir()
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs, WriterOptions{SplitSparse: split})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, o := range outs {
			got = append(got, readFileRows(t, localFS, o.Path, sc)...)
			if i > 0 && o.MinTimestamp <= outs[i-1].MaxTimestamp {
				t.Fatalf("split %v: outputs %d and %d overlap: %d <= %d", split, i-1, i, o.MinTimestamp, outs[i-1].MaxTimestamp)
			}
		}
		if !slices.Equal(got, want) {
			diffRows(t, got, want)
			t.Fatalf("split %v: rows differ", split)
		}
		if split == 0 {
			if len(outs) != 1 {
				t.Fatalf("size-only writer: %d outputs, want 1", len(outs))
			}
			continue
		}
		// The dense window keeps a range of seconds: its file starts at most
		// one histogram bucket (1 s) before the first on-time row.
		last := outs[len(outs)-1]
		if len(outs) < 2 || last.MinTimestamp < onTime-density.DrainBucketMicros || last.Rows < denseRows {
			t.Fatalf("split %v: outputs %v: want the late tail apart and the on-time rows in a file starting after %d",
				split, describe(outs), onTime-density.DrainBucketMicros)
		}
	}
}

// TestRewriteCutsSparseTailOnEveryPath: a bin of four drain files, each
// stretched back 5 minutes by late rows, rewrites into the same files on
// every path, the splice included, pairwise disjoint, with the dense
// windows apart from the sparse tail (cut at the footers' minute buckets).
func TestRewriteCutsSparseTailOnEveryPath(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(8, 8))
	dir := t.TempDir()
	var inputs []Input
	var want []string
	const first = int64(1_700_000_400_000_000)
	for i := range 4 {
		onTime := first + int64(i)*10_000_000
		recs := lateBatch(r, sc, onTime)
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			want = append(want, rowStrings(t, rec, sc)...)
			rec.Release()
		}
		o := outs[0]
		inputs = append(inputs, Input{Path: o.Path, Size: o.Size, Rows: o.Rows})
	}
	sort.SliceStable(want, func(a, b int) bool { return rowTs(want[a]) < rowTs(want[b]) })
	var ref []Output
	for _, path := range allPaths {
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(path)), 1),
			RewriteOptions{ForcePath: path, SpliceMinRows: 100, WriterOptions: WriterOptions{SplitSparse: density.DefaultSplitSparse,
				LatePath: func(int) string { return filepath.Join(dir, string(path), LateFileName(1)) }}})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var got []string
		for i, o := range res.Outputs {
			got = append(got, readFileRows(t, localFS, o.Path, sc)...)
			if i > 0 && o.MinTimestamp <= res.Outputs[i-1].MaxTimestamp {
				t.Fatalf("%s: outputs %d and %d overlap", path, i-1, i)
			}
		}
		if !slices.Equal(got, want) {
			diffRows(t, got, want)
			t.Fatalf("%s: rows differ", path)
		}
		last := res.Outputs[len(res.Outputs)-1]
		minute := int64(60_000_000)
		if len(res.Outputs) < 2 || last.MinTimestamp < first/minute*minute || last.Rows < 4*denseRows {
			t.Fatalf("%s: outputs %v: want the on-time rows in a file of their own minute", path, describe(res.Outputs))
		}
		// The sparse tail joins the late stream; the on-time file does not.
		for i, o := range res.Outputs {
			if late := ParseLate(o.Path); late != (i < len(res.Outputs)-1) {
				t.Fatalf("%s: output %d of %d (%s) late %v", path, i, len(res.Outputs), filepath.Base(o.Path), late)
			}
		}
		if ref == nil {
			ref = res.Outputs
			continue
		}
		if len(ref) != len(res.Outputs) {
			t.Fatalf("%s: %d outputs, %s wrote %d", path, len(res.Outputs), allPaths[0], len(ref))
		}
		for i := range ref {
			if ref[i].Rows != res.Outputs[i].Rows {
				t.Fatalf("%s: output %d has %d rows, %s %d", path, i, res.Outputs[i].Rows, allPaths[0], ref[i].Rows)
			}
		}
	}
}

func describe(outs []Output) string {
	s := ""
	for _, o := range outs {
		s += fmt.Sprintf("[%d..%d %d rows] ", o.MinTimestamp, o.MaxTimestamp, o.Rows)
	}
	return s
}

// TestWriteSortedLeavesSmallBatchesWhole: below density.SplitSparseMinRows a batch is
// cut by size only, however sparse its tail (small files are merged again
// soon; a cut would only add a file).
func TestWriteSortedLeavesSmallBatchesWhole(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(9, 9))
	dense := randRecord(r, sc, 5_000, 1_700_000_040_000_000, 300, true, true)
	late := randRecord(r, sc, 100, 1_700_000_040_000_000-300_000_000, 5_000_000, true, true)
	defer dense.Release()
	defer late.Release()
	outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(t.TempDir(), 0), sc, []arrow.RecordBatch{dense, late},
		WriterOptions{SplitSparse: density.DefaultSplitSparse})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 {
		t.Fatalf("a batch of %d rows was cut into %v", 5_100, describe(outs))
	}
}

func TestLateFileName(t *testing.T) {
	n := LateFileName(3)
	if g, ok := ParseGeneration(n); !ok || g != 3 || !ParseLate("s3://b/dir/"+n) {
		t.Fatalf("%s: generation %d %v, late %v", n, g, ok, ParseLate(n))
	}
	if _, ok := ParseFoldTier(n); ok {
		t.Fatalf("%s read as folded", n)
	}
	for _, p := range []string{DataFileName(3), FoldedFileName(3, 1), "g0003-l-not-a-uuid.parquet", "l-" + DataFileName(0), "other.parquet"} {
		if ParseLate(p) {
			t.Errorf("%s read as late", p)
		}
	}
}

func TestDensityCutsRuns(t *testing.T) {
	h := density.TimeHistogram{Start: 0, Width: 10, Counts: []int64{2, 1, 0, 100, 120, 1, 90}}
	c := density.CutsOfHistogram(h, 0.05)
	if !slices.Equal(c.At, []int64{30, 50, 60}) || !c.FirstSparse {
		t.Fatalf("cuts %+v, want at [30 50 60], first run sparse", c)
	}
	for ts, want := range map[int64]bool{-5: true, 0: true, 29: true, 30: false, 49: false, 50: true, 59: true, 60: false, 1000: false} {
		if got := c.SparseAt(ts); got != want {
			t.Errorf("sparse at %d: %v, want %v", ts, got, want)
		}
	}
	if c := density.CutsOfHistogram(density.TimeHistogram{Start: 0, Width: 10, Counts: []int64{100, 0, 1}}, 0.05); c.FirstSparse != false || !slices.Equal(c.At, []int64{20}) {
		t.Fatalf("dense head: %+v", c)
	}
	if c := density.CutsOfHistogram(density.TimeHistogram{Start: 0, Width: 10, Counts: []int64{100, 90}}, 0.05); c.FirstSparse || c.SparseAt(5) {
		t.Fatalf("one dense run: %+v", c)
	}
}

// TestBatchDensityCutsReachClosedDays: a drain batch brings a few late rows to a day that has
// closed, and its dense on-time window to the current day. Cut per day, the closed day's rows
// are too few to cut and would be written as an on-time file stretched over minutes; cut with
// the batch's cuts, they are found sparse and named late, and the current day's late tail too.
func TestBatchDensityCutsReachClosedDays(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(10, 10))
	const midnight = int64(1_700_006_400_000_000) // a UTC midnight
	today := lateBatch(r, sc, midnight+40_000_000)
	yesterday := randRecord(r, sc, 300, midnight-600_000_000, 2_000_000, true, true)
	defer yesterday.Release()
	for _, rec := range today {
		defer rec.Release()
	}
	cuts := density.BatchCuts(append([]arrow.RecordBatch{yesterday}, today...), "timestamp", density.DefaultSplitSparse)
	if len(cuts.At) == 0 || !cuts.FirstSparse {
		t.Fatalf("batch cuts %+v: want a sparse head", cuts)
	}
	dir := t.TempDir()
	late := func(int) string { return filepath.Join(dir, LateFileName(0)) }
	write := func(recs []arrow.RecordBatch, c *density.Cuts) []Output {
		t.Helper()
		for _, rec := range recs {
			rec.Retain()
		}
		outs, err := writer.WriteSortedReleasing(context.Background(), localFS, pathGen(dir, 0), sc, recs,
			WriterOptions{SplitSparse: density.DefaultSplitSparse, Cuts: c, LatePath: late})
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	if outs := write([]arrow.RecordBatch{yesterday}, nil); len(outs) != 1 || ParseLate(outs[0].Path) {
		t.Fatalf("the closed day cut on its own rows: %v, late %v; want one on-time file (the leak batch cuts close)", describe(outs), ParseLate(outs[0].Path))
	}
	if outs := write([]arrow.RecordBatch{yesterday}, &cuts); len(outs) != 1 || !ParseLate(outs[0].Path) {
		t.Fatalf("the closed day with the batch's cuts: %v: want one late file", describe(outs))
	}
	outs := write(today, &cuts)
	if len(outs) < 2 || ParseLate(outs[len(outs)-1].Path) || !ParseLate(outs[0].Path) {
		t.Fatalf("the current day with the batch's cuts: %v: want late tail files, then the on-time file", describe(outs))
	}
	if n := density.BatchCuts([]arrow.RecordBatch{yesterday}, "timestamp", density.DefaultSplitSparse); len(n.At) != 0 {
		t.Fatalf("a batch under SplitSparseMinRows was cut: %+v", n)
	}
}

// TestRewriteLeavesSmallBinsWhole: a bin of fewer than SplitSparseMinBinRows rows is cut by size
// only, however sparse its inputs' tails: its output is merged again at the next level.
func TestRewriteLeavesSmallBinsWhole(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(11, 11))
	dir := t.TempDir()
	var inputs []Input
	var rows int64
	for i := range 3 {
		recs := lateBatch(r, sc, int64(1_700_000_400_000_000)+int64(i)*10_000_000)
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs, WriterOptions{})
		for _, rec := range recs {
			rec.Release()
		}
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, Input{Path: outs[0].Path, Size: outs[0].Size, Rows: outs[0].Rows})
		rows += outs[0].Rows
	}
	if rows >= SplitSparseMinBinRows || rows < density.SplitSparseMinRows {
		t.Fatalf("%d rows: the bin must lie between the two floors", rows)
	}
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 1),
		RewriteOptions{WriterOptions: WriterOptions{SplitSparse: density.DefaultSplitSparse,
			LatePath: func(int) string { return filepath.Join(dir, "out", LateFileName(1)) }}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Outputs) != 1 || ParseLate(res.Outputs[0].Path) {
		t.Fatalf("a bin of %d rows was cut: %s", rows, describe(res.Outputs))
	}
}

// TestBatchDensityCutsStrayRow: one row a week old beside a dense window does not coarsen the
// cuts (the buckets stay 1 s wide whatever the span), and timestamps in another unit give the
// same cuts.
func TestBatchDensityCutsStrayRow(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(12, 12))
	const onTime = int64(1_700_000_040_000_000)
	recs := lateBatch(r, sc, onTime)
	stray := randRecord(r, sc, 1, onTime-7*24*3600*1_000_000, 1, true, true)
	recs = append(recs, stray)
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	cuts := density.BatchCuts(recs, "timestamp", density.DefaultSplitSparse)
	if len(cuts.At) == 0 || cuts.At[len(cuts.At)-1] < onTime-density.DrainBucketMicros || cuts.At[len(cuts.At)-1] > onTime {
		t.Fatalf("cuts %v: want the last cut within 1 s before the on-time window at %d", cuts.At, onTime)
	}
	if !cuts.SparseAt(onTime-10_000_000) || cuts.SparseAt(onTime+1_000_000) {
		t.Fatalf("cuts %+v: 10 s before the window must be sparse, inside it dense", cuts)
	}
	// The same rows with nanosecond timestamps.
	var nanos []arrow.RecordBatch
	for _, rec := range recs {
		nanos = append(nanos, toNanos(t, rec))
	}
	defer func() {
		for _, rec := range nanos {
			rec.Release()
		}
	}()
	if got := density.BatchCuts(nanos, "timestamp", density.DefaultSplitSparse); !slices.Equal(got.At, cuts.At) || got.FirstSparse != cuts.FirstSparse {
		t.Fatalf("nanosecond timestamps: cuts %+v, microseconds %+v", got, cuts)
	}
}

// toNanos is rec with its timestamp column in nanoseconds.
func toNanos(t *testing.T, rec arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	idx := rec.Schema().FieldIndices("timestamp")[0]
	src := rec.Column(idx).(*array.Timestamp)
	typ := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}
	b := array.NewTimestampBuilder(memory.DefaultAllocator, typ)
	defer b.Release()
	for i := 0; i < src.Len(); i++ {
		if src.IsNull(i) {
			b.AppendNull()
			continue
		}
		b.Append(src.Value(i) * 1000)
	}
	col := b.NewArray()
	defer col.Release()
	fields := slices.Clone(rec.Schema().Fields())
	fields[idx].Type = typ
	cols := slices.Clone(rec.Columns())
	cols[idx] = col
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}
