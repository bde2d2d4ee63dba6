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
)

func TestSparseCuts(t *testing.T) {
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
		got := SparseCuts(TimeHistogram{Start: 0, Width: w, Counts: c.counts}, c.frac)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: cuts %v, want %v", c.name, got, c.want)
		}
	}
}

// denseRows is the on-time part of lateBatch: just past SplitSparseMinRows.
const denseRows = SplitSparseMinRows + 4_000

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

	for _, split := range []float64{0, DefaultSplitSparse} {
		dir := t.TempDir()
		outs, err := WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs, WriterOptions{SplitSparse: split})
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
		if len(outs) < 2 || last.MinTimestamp < onTime-drainBucketMicros || last.Rows < denseRows {
			t.Fatalf("split %v: outputs %v: want the late tail apart and the on-time rows in a file starting after %d",
				split, describe(outs), onTime-drainBucketMicros)
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
		outs, err := WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs, WriterOptions{})
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
			RewriteOptions{ForcePath: path, SpliceMinRows: 100, WriterOptions: WriterOptions{SplitSparse: DefaultSplitSparse}})
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

// TestWriteSortedLeavesSmallBatchesWhole: below SplitSparseMinRows a batch is
// cut by size only, however sparse its tail (small files are merged again
// soon; a cut would only add a file).
func TestWriteSortedLeavesSmallBatchesWhole(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(9, 9))
	dense := randRecord(r, sc, 5_000, 1_700_000_040_000_000, 300, true, true)
	late := randRecord(r, sc, 100, 1_700_000_040_000_000-300_000_000, 5_000_000, true, true)
	defer dense.Release()
	defer late.Release()
	outs, err := WriteSorted(context.Background(), localFS, pathGen(t.TempDir(), 0), sc, []arrow.RecordBatch{dense, late},
		WriterOptions{SplitSparse: DefaultSplitSparse})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 {
		t.Fatalf("a batch of %d rows was cut into %v", 5_100, describe(outs))
	}
}
