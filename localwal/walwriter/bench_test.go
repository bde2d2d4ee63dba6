package walwriter

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/internal/waltest"
)

// Benchmarks count MB/s of decoded Arrow buffer bytes (what the ingest
// hands in and the drain gets out), with realistic log rows from waltest.LogGen in
// batches of 1,000 rows. file_bytes/raw_byte is the on-disk ratio.
//
//	go test ./localwal/... -run='^$' -bench=. -benchtime=3s

const benchBatchRows = 1000

func BenchmarkWrite(b *testing.B) {
	recs, raw := waltest.Batches(16, benchBatchRows)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	for _, comp := range []Compression{CompressionZstd, CompressionNone} {
		b.Run(string(comp), func(b *testing.B) {
			dir := b.TempDir()
			var fileBytes int64
			w, err := New(dir, Options{Stream: "bench", Compression: comp, RollAge: time.Hour,
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
	recs, _ := waltest.Batches(64, benchBatchRows)
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
			w, err := New(dir, Options{Stream: "bench", Compression: comp, RollAge: time.Hour,
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
				s, err := localwal.ReadAll(filepath.Join(dir, seg.Name), localwal.ReadOptions{})
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
