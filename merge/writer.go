package merge

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/index"
)

// DefaultRowGroupRows is the row-group length when WriterOptions leaves it 0:
// large enough for good compression and few footer entries, small enough that
// a per-row-group bloom still prunes.
const DefaultRowGroupRows = 128 * 1024

// WriterOptions says how output Parquet files are written.
type WriterOptions struct {
	// TimestampColumn is the column outputs are sorted and split by; it must
	// be an Arrow timestamp. Default "timestamp".
	TimestampColumn string
	// TargetFileBytes: once a file reaches this size it is closed at the next
	// timestamp change, so consecutive outputs never share a timestamp.
	// 0 = never split.
	TargetFileBytes int64
	// RowGroupRows is the row-group length. Default DefaultRowGroupRows.
	RowGroupRows int64
	// Generation is written into the file name and the footer.
	Generation int
	// Metadata selects the search metadata written to the footer.
	Metadata MetadataOptions
	// SplitSparse > 0 also cuts outputs where the row density falls below
	// this fraction of the median density (SparseCuts), so a sparse tail of
	// late rows gets files of its own instead of stretching a dense one
	// (SIGLAKE_COMPACTOR_SPLIT_SPARSE). 0 = cut by size only.
	SplitSparse float64
	// cutBefore holds the density cuts WriteSorted and Rewrite derive from
	// SplitSparse: the sink starts a new file before the first row at or
	// after each of them.
	cutBefore []int64
	// Allocator for decoded and encoded buffers; nil = memory.DefaultAllocator.
	// Tests pass an accounting allocator to measure peak memory.
	Allocator memory.Allocator
}

func (o WriterOptions) withDefaults() WriterOptions {
	if o.TimestampColumn == "" {
		o.TimestampColumn = "timestamp"
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	return o
}

// Output describes one written Parquet file.
type Output struct {
	Path string
	Size int64
	Rows int64
	// MinTimestamp and MaxTimestamp are microseconds since the epoch, inclusive.
	MinTimestamp, MaxTimestamp int64
	Generation                 int
	// Meta is the file's Parquet footer; the caller builds an iceberg.DataFile
	// from it with table.DataFileFromMetadata.
	Meta *metadata.FileMetaData
	// SkippedIndexes names the index columns whose inverted index exceeded
	// MetadataOptions.FooterMaxBytes and was left out of this file.
	SkippedIndexes []string
}

// FooterGenerationKey is the footer key carrying the output generation, so a
// file renamed by another tool still says how often it was rewritten.
const FooterGenerationKey = "siglake.generation"

// WriteSorted sorts the rows of recs by the timestamp column (stable: rows with
// equal timestamps keep their order across recs) and writes them to one or
// more Parquet files at newPath(0), newPath(1), ... through fs. Every record is
// conformed to schema first. On error every file it created is removed.
func WriteSorted(ctx context.Context, fs icebergio.WriteFileIO, newPath func(i int) string, schema *arrow.Schema, recs []arrow.RecordBatch, opts WriterOptions) ([]Output, error) {
	opts = opts.withDefaults()
	s, err := newSink(fs, newPath, schema, opts, metaFull(opts.Metadata, opts.Generation))
	if err != nil {
		return nil, err
	}
	sorted, err := sortRecords(ctx, recs, schema, s.tsIdx, opts.Allocator)
	if err != nil {
		return nil, err
	}
	if sorted != nil {
		defer sorted.Release()
		if opts.SplitSparse > 0 && sorted.NumRows() >= SplitSparseMinRows {
			ts := appendMicros(nil, sorted.Column(s.tsIdx))
			s.cuts = SparseCuts(histogramOfSorted(ts, drainBucketMicros), opts.SplitSparse)
		}
		if err := s.write(ctx, sorted); err != nil {
			s.abort()
			return nil, err
		}
	}
	return s.finish()
}

// sortRecords conforms recs to schema and returns their rows as one record in
// stable timestamp order, or nil if there are no rows.
func sortRecords(ctx context.Context, recs []arrow.RecordBatch, schema *arrow.Schema, tsIdx int, mem memory.Allocator) (arrow.RecordBatch, error) {
	conformed := make([]arrow.RecordBatch, 0, len(recs))
	defer func() {
		for _, r := range conformed {
			r.Release()
		}
	}()
	var total int64
	for i, r := range recs {
		if r == nil || r.NumRows() == 0 {
			continue
		}
		c, err := Conform(r, schema, mem)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		conformed = append(conformed, c)
		total += c.NumRows()
	}
	if total == 0 {
		return nil, nil
	}
	ts := make([]int64, 0, total)
	for _, r := range conformed {
		col := r.Column(tsIdx)
		if col.NullN() > 0 {
			return nil, fmt.Errorf("timestamp column %q has %d null values", schema.Field(tsIdx).Name, col.NullN())
		}
		ts = appendMicros(ts, col)
	}
	if len(conformed) == 1 && slices.IsSorted(ts) {
		conformed[0].Retain()
		return conformed[0], nil
	}
	perm := make([]int64, total)
	for i := range perm {
		perm[i] = int64(i)
	}
	if !slices.IsSorted(ts) {
		sort.SliceStable(perm, func(a, b int) bool { return ts[perm[a]] < ts[perm[b]] })
	}
	return gather(ctx, schema, conformed, perm, mem)
}

// gather builds one record from the rows of recs (treated as one concatenated
// record) in the order perm gives.
func gather(ctx context.Context, schema *arrow.Schema, recs []arrow.RecordBatch, perm []int64, mem memory.Allocator) (arrow.RecordBatch, error) {
	ctx = compute.WithAllocator(ctx, mem)
	ib := array.NewInt64Builder(mem)
	ib.AppendValues(perm, nil)
	idx := ib.NewInt64Array()
	ib.Release()
	defer idx.Release()
	cols := make([]arrow.Array, schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		var src arrow.Array
		if len(parts) == 1 {
			src = parts[0]
			src.Retain()
		} else {
			var err error
			if src, err = array.Concatenate(parts, mem); err != nil {
				return nil, fmt.Errorf("concatenating column %q: %w", schema.Field(c).Name, err)
			}
		}
		out, err := compute.TakeArray(ctx, src, idx)
		src.Release()
		if err != nil {
			return nil, fmt.Errorf("reordering column %q: %w", schema.Field(c).Name, err)
		}
		cols[c] = out
	}
	return array.NewRecordBatch(schema, cols, int64(len(perm))), nil
}

// appendMicros appends the values of a timestamp array as microseconds.
func appendMicros(dst []int64, col arrow.Array) []int64 {
	a := col.(*array.Timestamp)
	unit := col.DataType().(*arrow.TimestampType).Unit
	vals := a.TimestampValues()
	for _, v := range vals {
		dst = append(dst, toMicros(int64(v), unit))
	}
	return dst
}

func toMicros(v int64, unit arrow.TimeUnit) int64 {
	switch unit {
	case arrow.Second:
		return v * 1_000_000
	case arrow.Millisecond:
		return v * 1_000
	case arrow.Nanosecond:
		if v < 0 && v%1000 != 0 {
			return v/1000 - 1
		}
		return v / 1000
	}
	return v
}

// writerProperties are the Parquet settings every siglake file uses: zstd,
// statistics and page index on (readers prune by them and seek with the
// offset index), dictionary for strings except the free-text raw column,
// whose values rarely repeat: a dictionary there only costs memory on both
// ends until the writer falls back to plain encoding.
func writerProperties(opts WriterOptions) *parquet.WriterProperties {
	raw := opts.Metadata.RawColumn
	if raw == "" {
		raw = index.DefaultRawColumn
	}
	return parquet.NewWriterProperties(
		parquet.WithDictionaryFor(raw, false),
		// Sorted timestamps are nearly all distinct and close together:
		// delta encoding makes them a few bits each, a dictionary only costs.
		parquet.WithDictionaryFor(opts.TimestampColumn, false),
		parquet.WithEncodingFor(opts.TimestampColumn, parquet.Encodings.DeltaBinaryPacked),
		parquet.WithAllocator(opts.Allocator),
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCompressionLevel(1),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(true),
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryPageSizeLimit(dictPageBytes),
		parquet.WithMaxRowGroupLength(opts.RowGroupRows),
		parquet.WithDataPageSize(pageBytes),
		parquet.WithCreatedBy("siglake"),
	)
}

// CountingWriter counts the bytes written through it, so a file's size is known without a Stat
// call on the object store. The merge sinks and the Puffin index sidecars use it.
type CountingWriter struct {
	W io.Writer
	N int64 // bytes W accepted so far
}

func (c *CountingWriter) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	return n, err
}

// ParquetWriterProperties are the Parquet settings siglake writes every data file with
// (docs/file-format.md), for tools that must write the same way (bench/merge's codec floor).
func ParquetWriterProperties(opts WriterOptions) *parquet.WriterProperties {
	return writerProperties(opts.withDefaults())
}
