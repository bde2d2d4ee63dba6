package merge

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/test/testenv"
)

// TestDuckDBReadsOutputs: DuckDB, a reader we did not write, reads every
// output of every path with the rows we meant: per-file row counts and
// timestamp bounds, and the row checksum of all outputs equals that of the
// input rows.
func TestDuckDBReadsOutputs(t *testing.T) {
	duck := testenv.DuckDB(t)
	if duck == nil {
		return
	}
	sc := testArrowSchema(t)
	seeds := uint64(1)
	if long() {
		seeds = 6
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 1234))
		dir := t.TempDir()
		var inputs []Input
		var want []arrow.RecordBatch
		for i := 0; i < 2+r.IntN(4); i++ {
			base := 1_700_000_000_000_000 + r.Int64N(2000)
			if i == 0 {
				base -= 100_000 // before the others: the splice copies it
			}
			rec := randRecord(r, sc, 500+r.IntN(3000), base, 3, true, r.IntN(2) == 0)
			inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 700))
			c, err := Conform(rec, sc, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, c)
			rec.Release()
		}
		wantSum, err := testenv.RowChecksum(want)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range allPaths {
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(path)), 2),
				RewriteOptions{ForcePath: path, ChunkRows: 900, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 1000, TargetFileBytes: 40_000,
					Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if path == PathSplice && res.SplicedBytes == 0 {
				t.Fatalf("seed %d: the splice copied nothing", seed)
			}
			var files []string
			for _, o := range res.Outputs {
				files = append(files, o.Path)
			}
			s := duck.Summarize(files)
			if s.Checksum != wantSum {
				t.Fatalf("seed %d %s: DuckDB row checksum %d, input rows %d", seed, path, s.Checksum, wantSum)
			}
			for i, f := range s.Files {
				o := res.Outputs[i]
				mn, err1 := f.Min()
				mx, err2 := f.Max()
				if f.Rows != o.Rows || err1 != nil || err2 != nil || mn != o.MinTimestamp || mx != o.MaxTimestamp {
					t.Fatalf("seed %d %s: DuckDB sees %s with %d rows [%s, %s], we wrote %d rows [%d, %d]",
						seed, path, f.Path, f.Rows, f.MinText, f.MaxText, o.Rows, o.MinTimestamp, o.MaxTimestamp)
				}
			}
		}
		for _, w := range want {
			w.Release()
		}
	}
}
