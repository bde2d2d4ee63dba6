package merge

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/writer"
)

// TestParallelEncodeSameBytes: the columns of a row group are encoded on
// several goroutines; the files must be byte for byte those of one
// goroutine (cut points, row groups, pages, footers), on every path and for
// the drain's sorted write, with files cut by size and by density.
func TestParallelEncodeSameBytes(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, 12))
	const t0 = 1_700_000_000_000_000
	var inputs []Input
	var recs []arrow.RecordBatch
	for i := 0; i < 5; i++ {
		rec := randRecord(r, sc, 3000+r.IntN(3000), t0+int64(i)*2000, 5, true, i%2 == 0)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 0, 2000))
		recs = append(recs, rec)
	}
	// A sparse tail for the density cuts, and a disjoint input to copy.
	tail := randRecord(r, sc, 200, t0+50_000_000, 100_000, true, true)
	inputs = append(inputs, writeInput(t, dir, sc, tail, 0, 2000))
	recs = append(recs, tail)
	defer releaseAll(recs)
	late := randRecord(r, sc, 5000, t0+900_000_000, 3, true, true)
	inputs = append(inputs, writeInput(t, dir, sc, late, 0, 2500))
	late.Release()

	read := func(outs []Output) [][]byte {
		var files [][]byte
		for _, o := range outs {
			b, err := os.ReadFile(o.Path)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, b)
		}
		return files
	}
	same := func(what string, a, b [][]byte) {
		t.Helper()
		if len(a) != len(b) || len(a) < 2 {
			t.Fatalf("%s: %d files serially, %d in parallel (want the same, at least 2)", what, len(a), len(b))
		}
		for i := range a {
			if !bytes.Equal(a[i], b[i]) {
				t.Fatalf("%s: file %d differs (%d bytes serially, %d in parallel)", what, i, len(a[i]), len(b[i]))
			}
		}
	}
	wopts := func(workers int) WriterOptions {
		return WriterOptions{RowGroupRows: 1500, TargetFileBytes: 40 << 10, SplitSparse: 0.2, EncodeWorkers: workers,
			Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}}}
	}
	for _, c := range []struct {
		path PathKind
		dec  Decoder
	}{{PathInMemory, ""}, {PathKWay, DecoderArrow}, {PathPageBounded, ""}, {PathSplice, ""}} {
		path := c.path
		var got [][][]byte
		for _, workers := range []int{1, 4} {
			out := filepath.Join(dir, fmt.Sprintf("%s-%s-%d", path, c.dec, workers))
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(out, 1),
				RewriteOptions{ForcePath: path, Decoder: c.dec, SpliceMinRows: 1000, ChunkRows: 700, WriterOptions: wopts(workers)})
			if err != nil {
				t.Fatalf("%s, %d workers: %v", path, workers, err)
			}
			if c.dec != "" && res.Decoder != c.dec {
				t.Fatalf("%s asked for decoder %s ran %s (%s)", path, c.dec, res.Decoder, res.Reason)
			}
			if path == PathSplice && res.SplicedBytes == 0 {
				t.Fatal("the splice copied nothing: the test does not cover copies between encoded row groups")
			}
			got = append(got, read(res.Outputs))
		}
		same(string(path)+" "+string(c.dec), got[0], got[1])
	}
	var got [][][]byte
	for _, workers := range []int{1, 4} {
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(filepath.Join(dir, fmt.Sprintf("sorted-%d", workers)), 0), sc, recs, wopts(workers))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, read(outs))
	}
	same("WriteSorted", got[0], got[1])
}
