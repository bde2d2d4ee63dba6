package merge

import (
	"context"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/test/testenv"
)

// TestRewriteOnS3: the writer and every merge path work through iceberg-go's
// S3 FileIO (versitygw), not only the local one.
func TestRewriteOnS3(t *testing.T) {
	s3 := testenv.S3(t)
	if s3.Bucket == "" {
		return
	}
	fio, ok := s3.FileIO(t).(icebergio.WriteFileIO)
	if !ok {
		t.Fatal("the S3 FileIO cannot write")
	}
	base := s3.Warehouse(t)
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(40, 41))
	var inputs []Input
	var want []string
	for i := 0; i < 3; i++ {
		rec := randRecord(r, sc, 3000, 1_700_000_000_000_000+r.Int64N(100), 3, true, true)
		outs, err := writer.WriteSorted(context.Background(), fio, func(int) string { return base + "/in/" + DataFileName(0) }, sc,
			[]arrow.RecordBatch{rec}, WriterOptions{RowGroupRows: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, rowStrings(t, rec, sc)...)
		rec.Release()
		inputs = append(inputs, Input{Path: outs[0].Path, Size: outs[0].Size, Rows: outs[0].Rows})
	}
	sort.SliceStable(want, func(a, b int) bool { return rowTs(want[a]) < rowTs(want[b]) })
	for _, path := range allPaths {
		res, err := Rewrite(context.Background(), fio, inputs, sc, func(int) string { return base + "/out/" + DataFileName(1) },
			RewriteOptions{ForcePath: path, ChunkRows: 1500, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 2000, TargetFileBytes: 100_000}})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		var got []string
		for _, o := range res.Outputs {
			got = append(got, readFileRows(t, fio, o.Path, sc)...)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %d rows read back from S3, want %d (or a different order)", path, len(got), len(want))
		}
	}
}
