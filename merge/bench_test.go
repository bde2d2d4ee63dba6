package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
)

// benchInputs writes fanIn sorted files of rowsPer access-log rows each, all
// covering the same hour, so every pair overlaps (the merge's hard case, as in
// bench/merge). It returns the inputs and their decoded size.
func benchInputs(b *testing.B, sc *arrow.Schema, fanIn, rowsPer int) ([]Input, int64) {
	return benchInputsAt(b, sc, fanIn, rowsPer, 0)
}

// benchInputsAt is benchInputs with input f's hour starting f*shift later:
// shift = one hour makes the inputs time-disjoint (an L1 bin into L2).
func benchInputsAt(b *testing.B, sc *arrow.Schema, fanIn, rowsPer int, shift int64) ([]Input, int64) {
	b.Helper()
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(uint64(fanIn), 7))
	const span = int64(3600_000_000)
	step := span / int64(rowsPer)
	var ins []Input
	var decoded int64
	for f := 0; f < fanIn; f++ {
		rb := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		ts := int64(1_767_225_600_000_000) + int64(f)*shift + r.Int64N(step+1)
		for i := 0; i < rowsPer; i++ {
			ts += r.Int64N(2*step + 1)
			svc := services[r.IntN(len(services))]
			rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
			rb.Field(1).(*array.StringBuilder).Append(svc)
			rb.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("GET /api/v1/%s/%d status=%d latency_ms=%d user=u%05d msg=%s %s %s",
				svc, r.IntN(100000), []int{200, 200, 404, 500}[r.IntN(4)], r.IntN(2000), r.IntN(50000),
				words[r.IntN(len(words))], words[r.IntN(len(words))], words[r.IntN(len(words))]))
			rb.Field(3).(*array.Int32Builder).Append(int32(r.IntN(5)))
			if r.IntN(4) == 0 {
				rb.Field(4).AppendNull()
			} else {
				rb.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("%016x", r.Uint64()))
			}
		}
		rec := rb.NewRecordBatch()
		rb.Release()
		decoded += recordBytes(rec)
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, []arrow.RecordBatch{rec}, WriterOptions{})
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			ins = append(ins, Input{Path: o.Path, Size: o.Size, Rows: o.Rows})
		}
	}
	return ins, decoded
}

// BenchmarkKWay measures the streaming k-way merge (search metadata
// included) over 8 and 32 overlapping inputs of 256k rows in total:
// go test ./merge -run '^$' -bench KWay -benchmem
func BenchmarkKWay(b *testing.B) {
	for _, fanIn := range []int{8, 32} {
		b.Run(fmt.Sprintf("inputs=%d", fanIn), func(b *testing.B) {
			sc := testArrowSchema(b)
			ins, decoded := benchInputs(b, sc, fanIn, 256*1024/fanIn)
			out := b.TempDir()
			b.SetBytes(decoded)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				res, err := Rewrite(context.Background(), localFS, ins, sc, pathGen(out, 1), RewriteOptions{ForcePath: PathKWay})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, o := range res.Outputs {
					if err := localFS.Remove(o.Path); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(256*1024*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkSplice measures the splice path (search metadata included) on 8
// time-disjoint inputs of 150,000 rows each (a full row group and a short
// one apiece), in-process: go test ./merge -run '^$' -bench Splice -benchmem
func BenchmarkSplice(b *testing.B) {
	sc := testArrowSchema(b)
	ins, decoded := benchInputsAt(b, sc, 8, 150_000, 2*3600_000_000) // a random walk of about an hour each
	out := b.TempDir()
	b.SetBytes(decoded)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Rewrite(context.Background(), localFS, ins, sc, pathGen(out, 1), RewriteOptions{ForcePath: PathSplice})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if res.SplicedBytes == 0 {
			b.Fatal("nothing spliced")
		}
		for _, o := range res.Outputs {
			if err := localFS.Remove(o.Path); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(8*150_000*b.N)/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkZstdPageEncode: one 256 KiB page of log text through the codec
// siglake writes with (level 1), to compare klauspost/compress versions.
func BenchmarkZstdPageEncode(b *testing.B) {
	rec := randRecord(rand.New(rand.NewPCG(1, 1)), testArrowSchema(b), 20000, 1_700_000_000_000_000, 3, true, true)
	defer rec.Release()
	var page []byte
	for i := 0; len(page) < 256<<10; i++ {
		page = append(page, rec.Column(2).ValueStr(i%20000)...)
	}
	c, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		b.Fatal(err)
	}
	var dst []byte
	b.SetBytes(int64(len(page)))
	for i := 0; i < b.N; i++ {
		dst = c.EncodeLevel(dst[:0], page, 1)
	}
}

// BenchmarkWriteSortedEncoders: the drain's writer (writer.WriteSorted, search metadata
// included) on 256k access-log rows held in memory, with each Parquet encoder; cpu-ms/op is the
// process CPU time (the writer encodes on two goroutines), MB/s the decoded bytes per wall second:
// go test ./merge -run '^$' -bench WriteSortedEncoders -count 5
func BenchmarkWriteSortedEncoders(b *testing.B) {
	sc := testArrowSchema(b)
	ins, decoded := benchInputs(b, sc, 1, 256*1024)
	recs := readInputRecords(b, ins[0].Path, sc)
	defer releaseAll(recs)
	for _, enc := range writer.Encoders {
		b.Run(string(enc), func(b *testing.B) {
			out := b.TempDir()
			b.SetBytes(decoded)
			cpu0 := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(out, 0), sc, recs, WriterOptions{Encoder: enc})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, o := range outs {
					if err := localFS.Remove(o.Path); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric((processCPU()-cpu0).Seconds()*1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// readInputRecords decodes the Parquet file at path into records.
func readInputRecords(b *testing.B, path string, sc *arrow.Schema) []arrow.RecordBatch {
	in, err := input.Open(localFS, path, memory.DefaultAllocator, 16<<10)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	rr, err := in.Arrow.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		b.Fatal(err)
	}
	return recs
}

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
