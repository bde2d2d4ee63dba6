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

// partsSchema has flat, list and map columns, and trace ids all distinct (a chunk of more than
// about 8,000 rows passes the dictionary limit).
func partsSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.String},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
		{Name: "bytes", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "trace_id", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// partsRecord is n rows of partsSchema in timestamp order from ts on, a third of the optional
// values null.
func partsRecord(r *rand.Rand, sc *arrow.Schema, n int, ts int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
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
		if r.IntN(4) == 0 {
			b.Field(6).AppendNull()
		} else {
			b.Field(6).(*array.StringBuilder).Append(fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()))
		}
	}
	return b.NewRecordBatch()
}

// TestWritePartsWritesWhatWriteDoes: a chunk handed to the sink as slices of its records
// (WriteParts, what the sorted write does with long runs under parquet-go) writes the same
// bytes as the chunk copied into one record (Write): slices of one row, chunks across row
// groups, row groups of several pages, dictionaries past their limit, nulls, lists and maps.
func TestWritePartsWritesWhatWriteDoes(t *testing.T) {
	sc := partsSchema()
	ctx := context.Background()
	for seed := uint64(1); seed <= 3; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		rec := partsRecord(r, sc, 40_000+r.IntN(20_000), 1_700_000_000_000_000)
		// The chunks, each as slices: random lengths, some one row long.
		var chunks [][]arrow.RecordBatch
		for at, n := int64(0), rec.NumRows(); at < n; {
			end := min(n, at+2000+r.Int64N(14_000))
			var chunk []arrow.RecordBatch
			for at < end {
				ln := min(end-at, []int64{1, 1 + r.Int64N(20), 1 + r.Int64N(700)}[r.IntN(3)])
				chunk = append(chunk, rec.NewSlice(at, at+ln))
				at += ln
			}
			chunks = append(chunks, chunk)
		}
		dir := t.TempDir()
		opts := Options{Encoder: EncoderParquetGo, RowGroupRows: 5000 + r.Int64N(30_000), TimestampColumn: "timestamp"}.WithDefaults()
		write := func(name string, do func(s *Sink, chunk []arrow.RecordBatch) error) []byte {
			p := filepath.Join(dir, name+".parquet")
			s, err := NewSink(icebergio.LocalFS{}, func(int) string { return p }, sc, opts, MetaFull(opts.Metadata, 0))
			if err != nil {
				t.Fatal(err)
			}
			if !s.TakesParts() {
				t.Fatal("a sink encoding every column with parquet-go does not take parts")
			}
			for _, chunk := range chunks {
				if err := do(s, chunk); err != nil {
					t.Fatalf("seed %d, %s: %v", seed, name, err)
				}
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
		whole := write("whole", func(s *Sink, chunk []arrow.RecordBatch) error {
			one := concatRecords(t, sc, chunk)
			defer one.Release()
			return s.Write(ctx, one)
		})
		parts := write("parts", func(s *Sink, chunk []arrow.RecordBatch) error { return s.WriteParts(ctx, chunk) })
		if !bytes.Equal(whole, parts) {
			t.Fatalf("seed %d: the file written from parts (%d bytes) differs from the one written whole (%d bytes)", seed, len(parts), len(whole))
		}
		for _, chunk := range chunks {
			for _, c := range chunk {
				c.Release()
			}
		}
		rec.Release()
	}
}

// concatRecords copies recs into one record.
func concatRecords(t *testing.T, sc *arrow.Schema, recs []arrow.RecordBatch) arrow.RecordBatch {
	t.Helper()
	cols := make([]arrow.Array, sc.NumFields())
	var n int64
	for _, r := range recs {
		n += r.NumRows()
	}
	for c := range cols {
		arrs := make([]arrow.Array, len(recs))
		for i, r := range recs {
			arrs[i] = r.Column(c)
		}
		var err error
		if cols[c], err = array.Concatenate(arrs, memory.DefaultAllocator); err != nil {
			t.Fatal(err)
		}
	}
	out := array.NewRecordBatch(sc, cols, n)
	for _, c := range cols {
		c.Release()
	}
	return out
}

// TestSortedWriteHandsOverLongRuns: the sorted write hands chunks of long runs to a parquet-go
// sink as slices and gathers interleaved ones by Take, in one write, and its files are the
// bytes it writes when every chunk is copied into one record first.
func TestSortedWriteHandsOverLongRuns(t *testing.T) {
	sc := partsSchema()
	for seed := uint64(1); seed <= 2; seed++ {
		r := rand.New(rand.NewPCG(seed, 8))
		base := int64(1_700_000_000_000_000)
		var recs []arrow.RecordBatch
		for range 3 { // from one start: interleaved, short runs
			recs = append(recs, partsRecord(r, sc, 6000, base))
		}
		later := partsRecord(r, sc, 30_000, base+1_000_000_000) // in order: long runs
		for at := int64(0); at < later.NumRows(); at += 5000 {
			recs = append(recs, later.NewSlice(at, min(at+5000, later.NumRows())))
		}
		later.Release()
		r.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
		opts := Options{Encoder: EncoderParquetGo, RowGroupRows: 7000, TimestampColumn: "timestamp", TargetFileBytes: 1 << 20}
		dir := t.TempDir()
		write := func(name string, parts bool) ([][]byte, int) {
			handed := 0
			sortedParts, sortedPartsSeen = parts, func(n int) { handed += n }
			defer func() { sortedParts, sortedPartsSeen = true, nil }()
			outs, err := WriteSorted(context.Background(), icebergio.LocalFS{}, func(i int) string {
				return filepath.Join(dir, fmt.Sprintf("%s-%d.parquet", name, i))
			}, sc, recs, opts)
			if err != nil {
				t.Fatal(err)
			}
			var files [][]byte
			for _, o := range outs {
				b, err := os.ReadFile(o.Path)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, b)
			}
			return files, handed
		}
		copied, none := write("copied", false)
		handed, runs := write("handed", true)
		if none != 0 || runs == 0 {
			t.Fatalf("seed %d: %d runs handed over with the switch off, %d with it on; want none, then some", seed, none, runs)
		}
		if len(copied) != len(handed) || len(copied) < 2 {
			t.Fatalf("seed %d: %d files copied, %d handed over; want the same, several", seed, len(copied), len(handed))
		}
		for i := range copied {
			if !bytes.Equal(copied[i], handed[i]) {
				t.Fatalf("seed %d: file %d differs (%d bytes copied, %d handed over)", seed, i, len(copied[i]), len(handed[i]))
			}
		}
		for _, rec := range recs {
			rec.Release()
		}
	}
}
