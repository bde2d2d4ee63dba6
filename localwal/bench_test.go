package localwal

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal/internal/recordcheck"
)

// Benchmarks count MB/s of decoded Arrow buffer bytes (what the ingest
// hands in and the drain gets out), with realistic log rows from logGen in
// batches of 1,000 rows. file_bytes/raw_byte is the on-disk ratio.
//
//	go test ./localwal -run='^$' -bench=. -benchtime=3s

const benchBatchRows = 1000

func benchBatches(n int) ([]arrow.RecordBatch, int64) {
	gen := newLogGen(42, t0)
	var recs []arrow.RecordBatch
	var raw int64
	for i := 0; i < n; i++ {
		r := gen.batch(memory.DefaultAllocator, benchBatchRows)
		raw += rawBytes(r)
		recs = append(recs, r)
	}
	return recs, raw
}

func BenchmarkWrite(b *testing.B) {
	recs, raw := benchBatches(16)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, comp := range []Compression{CompressionZstd, CompressionNone} {
		b.Run(string(comp), func(b *testing.B) {
			dir := b.TempDir()
			var fileBytes int64
			w, err := NewWriter(dir, WriterOptions{Stream: "bench", Compression: comp, RollAge: time.Hour,
				OnSeal: func(s SealedSegment) {
					fileBytes += s.Size
					os.Remove(s.Path) // keep the disk small; removal is not timed work of interest
				}})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(raw / int64(len(recs)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := w.Append("logs", recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(fileBytes)/float64(int64(b.N)*raw/int64(len(recs))), "file_bytes/raw_byte")
		})
	}
}

func BenchmarkRead(b *testing.B) {
	recs, _ := benchBatches(64)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, comp := range []Compression{CompressionZstd, CompressionNone} {
		b.Run(string(comp), func(b *testing.B) {
			// One segment as the writer seals it by default size.
			dir := b.TempDir()
			var sealed []SealedSegment
			w, err := NewWriter(dir, WriterOptions{Stream: "bench", Compression: comp, RollAge: time.Hour,
				OnSeal: func(s SealedSegment) { sealed = append(sealed, s) }})
			if err != nil {
				b.Fatal(err)
			}
			var segRaw int64
			for i := 0; len(sealed) == 0; i++ {
				if err := w.Append("logs", recs[i%len(recs)]); err != nil {
					b.Fatal(err)
				}
				segRaw += rawBytes(recs[i%len(recs)])
			}
			w.Close()
			seg := sealed[0]
			b.SetBytes(segRaw)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := ReadAll(filepath.Join(dir, seg.Name), ReadOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if s.Rows != seg.Rows {
					b.Fatalf("read %d rows, sealed %d", s.Rows, seg.Rows)
				}
				s.Release()
			}
			b.ReportMetric(float64(seg.Size)/float64(segRaw), "file_bytes/raw_byte")
		})
	}
}

// BenchmarkValidate compares recordcheck.Full with Arrow's full validation on
// the records of SIGLAKE_BENCH_WAL's sealed segments (a walgen WAL, whose
// map of attributes nests strings), or on generated log batches without it.
func BenchmarkValidate(b *testing.B) {
	var recs []arrow.RecordBatch
	var raw int64
	if dir := os.Getenv("SIGLAKE_BENCH_WAL"); dir != "" {
		segs, err := Scan(dir)
		if err != nil || len(segs) == 0 {
			b.Fatalf("no sealed segments in %s (%v)", dir, err)
		}
		for _, s := range segs {
			seg, err := ReadAll(s.Path, ReadOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer seg.Release()
			recs = append(recs, seg.Records...)
			raw += s.Size
		}
	} else {
		recs, raw = benchBatches(64)
		defer func() {
			for _, r := range recs {
				r.Release()
			}
		}()
	}
	for _, v := range []struct {
		name     string
		validate func(arrow.RecordBatch) error
	}{{"arrow", arrowValidate}, {"localwal", recordcheck.Full}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(raw)
			for i := 0; i < b.N; i++ {
				for _, r := range recs {
					if err := v.validate(r); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
