package writer

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
)

// partsRecord is n rows in timestamp order of flat, list and map columns, a third of the
// optional values null.
func partsRecord(r *rand.Rand, sc *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	ts := int64(1_700_000_000_000_000)
	for i := 0; i < n; i++ {
		ts += r.Int64N(3)
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		if r.IntN(3) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("svc-%d", r.IntN(4)))
		}
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("line %d word%d", i, r.IntN(50)))
		lb := b.Field(3).(*array.ListBuilder)
		if r.IntN(3) == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := 0; k < r.IntN(4); k++ {
				lb.ValueBuilder().(*array.StringBuilder).Append(fmt.Sprintf("t%d", r.IntN(9)))
			}
		}
		mb := b.Field(4).(*array.MapBuilder)
		mb.Append(true)
		for k := 0; k < r.IntN(3); k++ {
			mb.KeyBuilder().(*array.StringBuilder).Append(fmt.Sprintf("k%d", k))
			mb.ItemBuilder().(*array.StringBuilder).Append(fmt.Sprintf("v%d", r.IntN(9)))
		}
		if r.IntN(3) == 0 {
			b.Field(5).AppendNull()
		} else {
			b.Field(5).(*array.Int64Builder).Append(r.Int64N(1 << 40))
		}
	}
	return b.NewRecordBatch()
}

// TestWritePartsWritesWhatWriteDoes: a chunk handed to the sink as slices of its records
// (WriteParts, what the sorted write does with long runs under parquet-go) writes the same
// bytes as the chunk copied into one record (Write): slices of one row, slices across row
// groups, nulls, lists and maps.
func TestWritePartsWritesWhatWriteDoes(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.String},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
		{Name: "bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	ctx := context.Background()
	for seed := uint64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		rec := partsRecord(r, sc, 3000+r.IntN(2000))
		dir := t.TempDir()
		opts := Options{Encoder: EncoderParquetGo, RowGroupRows: 300 + int64(r.IntN(400)), TimestampColumn: "timestamp"}.WithDefaults()
		write := func(name string, do func(s *Sink) error) []byte {
			p := filepath.Join(dir, name+".parquet")
			s, err := NewSink(icebergio.LocalFS{}, func(int) string { return p }, sc, opts, MetaFull(opts.Metadata, 0))
			if err != nil {
				t.Fatal(err)
			}
			if !s.TakesParts() {
				t.Fatal("a sink encoding every column with parquet-go does not take parts")
			}
			if err := do(s); err != nil {
				t.Fatalf("seed %d, %s: %v", seed, name, err)
			}
			if _, err := s.Finish(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		whole := write("whole", func(s *Sink) error { return s.Write(ctx, rec) })
		parts := write("parts", func(s *Sink) error {
			// Several calls of random slices each, some one row long.
			n := rec.NumRows()
			for at := int64(0); at < n; {
				var call []arrow.RecordBatch
				for k := 0; k < 1+r.IntN(40) && at < n; k++ {
					ln := min(n-at, []int64{1, 1 + r.Int64N(20), 1 + r.Int64N(700)}[r.IntN(3)])
					call = append(call, rec.NewSlice(at, at+ln))
					at += ln
				}
				err := s.WriteParts(ctx, call)
				for _, c := range call {
					c.Release()
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
		if !bytes.Equal(whole, parts) {
			t.Fatalf("seed %d: the file written from parts (%d bytes) differs from the one written whole (%d bytes)", seed, len(parts), len(whole))
		}
		rec.Release()
	}
}
