package merge

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/writer"
)

// stripChunkCRCs removes the chunk sums from the footer of in's file.
func stripChunkCRCs(t *testing.T, in *Input) {
	t.Helper()
	rewriteFooter(t, in.Path, func(md *metadata.FileMetaData) {
		kvs := md.FileMetaData.KeyValueMetadata[:0]
		for _, kv := range md.FileMetaData.KeyValueMetadata {
			if kv.Key != chunksum.Key {
				kvs = append(kvs, kv)
			}
		}
		md.FileMetaData.KeyValueMetadata = kvs
	})
	in.Size = fileSize(t, in.Path)
}

// TestSpliceCopiedRowGroupOpensLateFile: when the first row group of a file
// is a copied one whose first row lies in a sparse run, the file is named
// late (WriterOptions.LatePath), and newPath is not asked for its name. The
// sparse tail of input 0 is its own row group, which the splice copies.
func TestSpliceCopiedRowGroupOpensLateFile(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(21, 21))
	dir := t.TempDir()
	const first = int64(1_700_000_400_000_000) // on a minute boundary: the cut falls after the tail
	var inputs []Input
	var want []string
	for i := range 4 {
		onTime := first + int64(i)*10_000_000
		recs := []arrow.RecordBatch{randRecord(r, sc, denseRows, onTime, 300, true, true)}
		rgRows := 0 // the default
		if i == 0 {
			late := randRecord(r, sc, 400, onTime-300_000_000, 1_000_000, true, true)
			recs = append(recs, late)
			rgRows = int(late.NumRows()) // the tail is row group 0
		}
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs, WriterOptions{RowGroupRows: int64(rgRows)})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			want = append(want, rowStrings(t, rec, sc)...)
			rec.Release()
		}
		if len(outs) != 1 {
			t.Fatalf("input %d: %d files", i, len(outs))
		}
		inputs = append(inputs, Input{Path: outs[0].Path, Size: outs[0].Size, Rows: outs[0].Rows})
	}
	// Without sums and unchecked, a copied row group is the one an output
	// records no sums for: that tells it from a re-encoded one.
	stripChunkCRCs(t, &inputs[0])
	sort.SliceStable(want, func(a, b int) bool { return rowTs(want[a]) < rowTs(want[b]) })
	out := filepath.Join(dir, "out")
	var named []int
	newPath := func(i int) string { named = append(named, i); return pathGen(out, 1)(i) }
	res, err := Rewrite(context.Background(), localFS, inputs, sc, newPath,
		RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 100, SpliceUnverified: true, WriterOptions: WriterOptions{SplitSparse: density.DefaultSplitSparse,
			LatePath: func(int) string { return filepath.Join(out, LateFileName(1)) }}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SplicedBytes == 0 {
		t.Fatal("the splice copied nothing")
	}
	var got []string
	for _, o := range res.Outputs {
		got = append(got, readFileRows(t, localFS, o.Path, sc)...)
	}
	if !slices.Equal(got, want) {
		diffRows(t, got, want)
		t.Fatal("rows differ")
	}
	o := res.Outputs[0]
	if len(res.Outputs) < 2 || !ParseLate(o.Path) || o.Rows != 400 {
		t.Fatalf("outputs %s: want the 400 rows of the tail in a late file of their own", describe(res.Outputs))
	}
	if sums := chunksum.RowGroupSums(o.Meta); o.Meta.NumRowGroups() != 1 || (sums != nil && sums[0] != nil) {
		t.Fatalf("the late file's row group was re-encoded, not copied (%d row groups)", o.Meta.NumRowGroups())
	}
	if slices.Contains(named, 0) {
		t.Fatalf("newPath was asked to name the late file too (asked for %v)", named)
	}
	for i, o := range res.Outputs[1:] {
		if ParseLate(o.Path) {
			t.Fatalf("output %d (%s) of the dense window named late", i+1, filepath.Base(o.Path))
		}
	}
}
