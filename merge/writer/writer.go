package writer

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/kmerge"
)

// Page and dictionary sizes of the files siglake writes.
const (
	// PageBytes is the data page size siglake writes (writerProperties).
	PageBytes = 256 << 10
	// dictPageBytes is the dictionary size at which a column chunk falls
	// back to plain encoding (arrow-go's default is 1 MiB). A column that
	// needs a bigger dictionary has mostly distinct values (trace ids), so
	// the dictionary buys little, while it is hashed for every value
	// written and decoded again by every reader of the chunk, which the
	// page-bounded path does once per chunk and input.
	dictPageBytes = 256 << 10
)

// zstdLevel is the zstd level of every page (zstd's fastest; both encoders).
const zstdLevel = 1

// DefaultRowGroupRows is the row-group length when WriterOptions leaves it 0:
// large enough for good compression and few footer entries, small enough that
// a per-row-group bloom still prunes.
const DefaultRowGroupRows = 128 * 1024

// WriterOptions says how output Parquet files are written.
type Options struct {
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
	// Cuts, when set, are the density cuts to use instead of deriving them
	// from the rows of this write: the drain computes them once over the
	// whole batch (density.BatchCuts) and writes each day with them.
	Cuts *density.Cuts
	// LatePath, when set, names a new file whose first row lies in a sparse
	// run of the cuts (LateFileName): the file joins the late stream, which
	// the planner plans apart (level.File.Late). Unset: every file is named
	// by newPath.
	LatePath func(i int) string
	// cutBefore holds the density cuts WriteSorted and Rewrite derive from
	// SplitSparse (or take from Cuts): the sink starts a new file before the
	// first row at or after each of them.
	cutBefore density.Cuts
	// Allocator for decoded and encoded buffers; nil = memory.DefaultAllocator.
	// Tests pass an accounting allocator to measure peak memory.
	Allocator memory.Allocator
	// EncodeWorkers is how many goroutines encode the columns of a chunk
	// (and its search metadata); 0 = defaultEncodeWorkers. The output bytes do not depend on
	// it (TestParallelEncodeSameBytes).
	EncodeWorkers int
	// Encoder is the library that encodes the rows (SIGLAKE_MERGE_PARQUET_ENCODER); empty is the
	// process default (SetDefaultEncoder), auto unless set; auto is arrow-go here (the drain
	// asks for ForDrain's). The files carry the same rows,
	// footer and metadata either way (TestEncodersWriteTheSameRows).
	Encoder Encoder
	// template, when set, is Template of the schema and these
	// options, which Rewrite computes to plan the splice: the sink takes it
	// instead of writing an empty file again.
	template *metadata.FileMetaData
}

// WithCutBefore returns o with the density cuts a rewrite derived from its inputs' footers: the
// sink starts a new file before the first row at or after each of them.
func (o Options) WithCutBefore(c density.Cuts) Options { o.cutBefore = c; return o }

// CutBefore is the density cuts the sink will start new files at.
func (o Options) CutBefore() density.Cuts { return o.cutBefore }

// WithTemplate returns o with t, Template of the schema and o, which a rewrite computes to plan
// the splice: the sink takes it instead of writing an empty file again.
func (o Options) WithTemplate(t *metadata.FileMetaData) Options { o.template = t; return o }

// WithDefaults fills the zero values of o with the defaults.
func (o Options) WithDefaults() Options {
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
	// Encoder is the library the sink encoded the file's rows with, as its options resolved
	// (arrow or parquet-go; columns of a type parquet-go does not write are arrow-go's either
	// way, and the splice's copied row groups are the input's).
	Encoder Encoder
}

// FooterGenerationKey is the footer key carrying the output generation, so a
// file renamed by another tool still says how often it was rewritten.
const FooterGenerationKey = "siglake.generation"

// WriteSorted sorts the rows of recs by the timestamp column (stable: rows with
// equal timestamps keep their order across recs) and writes them to one or
// more Parquet files at newPath(0), newPath(1), ... through fs. Every record is
// conformed to schema first. On error every file it created is removed. The
// caller keeps its references to recs; WriteSortedReleasing takes them over.
func WriteSorted(ctx context.Context, fs icebergio.WriteFileIO, newPath func(i int) string, schema *arrow.Schema, recs []arrow.RecordBatch, opts Options) ([]Output, error) {
	own := make([]arrow.RecordBatch, len(recs))
	for i, r := range recs {
		if r != nil {
			r.Retain()
		}
		own[i] = r
	}
	return WriteSortedReleasing(ctx, fs, newPath, schema, own, opts)
}

// sortedParts lets the sorted write hand long runs to the sink as slices (tests turn it off to
// compare with the copy); sortedPartsSeen, when set, is told of each chunk handed over so.
var (
	sortedParts     = true
	sortedPartsSeen func(parts int)
)

// sortedChunkRows is how many rows WriteSortedReleasing gathers into one
// decoded chunk for the sink: small next to a commit batch, large enough
// that the per-call cost of the Parquet encoder does not show.
const sortedChunkRows = 16 << 10

// WriteSortedReleasing is WriteSorted taking over the caller's reference to
// each record of recs: it releases a record, and clears its slot, as soon as
// its last row is written (and every record on return). It never makes a
// sorted copy of the batch: it sorts row numbers and gathers rows in that
// order a chunk at a time, and a source record's memory goes back as the
// write passes its last timestamp. Inputs that are already in order (a WAL
// mostly is) are handed to the encoder as slices, without a copy.
func WriteSortedReleasing(ctx context.Context, fs icebergio.WriteFileIO, newPath func(i int) string, schema *arrow.Schema, recs []arrow.RecordBatch, opts Options) ([]Output, error) {
	defer releaseRecords(recs)
	opts = opts.WithDefaults()
	s, err := NewSink(fs, newPath, schema, opts, MetaFull(opts.Metadata, opts.Generation))
	if err != nil {
		return nil, err
	}
	if err := writeInOrder(ctx, s, schema, recs, opts); err != nil {
		s.Abort()
		return nil, err
	}
	return s.Finish()
}

func releaseRecords(recs []arrow.RecordBatch) {
	for i, r := range recs {
		if r != nil {
			r.Release()
			recs[i] = nil
		}
	}
}

// writeInOrder conforms recs to schema (in place in the slice), sorts their
// rows by timestamp and hands them to s chunk by chunk, releasing each
// record once the chunk with its last row is written.
func writeInOrder(ctx context.Context, s *Sink, schema *arrow.Schema, recs []arrow.RecordBatch, opts Options) error {
	mem := opts.Allocator
	starts, err := conformAll(recs, schema, s.tsIdx, mem)
	if err != nil {
		return err
	}
	total := starts[len(starts)-1]
	if total == 0 {
		return nil
	}
	if total > math.MaxInt32 {
		return fmt.Errorf("%d rows in one sorted write, more than %d", total, math.MaxInt32)
	}
	ts, order := sortedOrder(recs, s.tsIdx, total)
	switch {
	case opts.Cuts != nil:
		s.setCuts(*opts.Cuts)
	case opts.SplitSparse > 0 && total >= density.SplitSparseMinRows:
		sorted := make([]int64, len(order))
		for i, row := range order {
			sorted[i] = ts[row]
		}
		s.setCuts(density.CutsOfBuckets(density.BucketsOfSorted(sorted, density.DrainBucketMicros), opts.SplitSparse))
	}
	recOf := func(row int32) int { // the record holding global row number row
		return sort.Search(len(recs), func(i int) bool { return starts[i+1] > int64(row) })
	}
	// lastUse[r] is the position in order of record r's last row: once the
	// write has passed it, r can go.
	lastUse := make([]int, len(recs))
	for pos, row := range order {
		lastUse[recOf(row)] = pos
	}
	byLastUse := make([]int, len(recs))
	for i := range byLastUse {
		byLastUse[i] = i
	}
	slices.SortFunc(byLastUse, func(a, b int) int { return cmp.Compare(lastUse[a], lastUse[b]) })

	a := kmerge.NewAssembler(ctx, schema, mem, func(rec arrow.RecordBatch) error { return s.Write(ctx, rec) })
	if s.TakesParts() && sortedParts {
		a.OutParts = func(parts []arrow.RecordBatch) error {
			if sortedPartsSeen != nil {
				sortedPartsSeen(len(parts))
			}
			return s.WriteParts(ctx, parts)
		}
	}
	defer a.Release()
	keys := make([]*kmerge.Cursor, len(recs)) // the assembler tells sources apart by key
	for i := range keys {
		keys[i] = new(kmerge.Cursor)
	}
	released := 0
	for pos := 0; pos < len(order); {
		row := order[pos]
		r := recOf(row)
		end := pos + 1 // extend the run while rows are consecutive in record r
		for end < len(order) && order[end] == order[end-1]+1 && int64(order[end]) < starts[r+1] && a.Rows+int64(end-pos) < sortedChunkRows {
			end++
		}
		from := int64(row) - starts[r]
		a.Add(keys[r], recs[r], from, from+int64(end-pos))
		pos = end
		if a.Rows < sortedChunkRows && pos < len(order) {
			continue
		}
		if err := a.ChunkEnd(); err != nil {
			return err
		}
		for ; released < len(byLastUse) && lastUse[byLastUse[released]] < pos; released++ {
			i := byLastUse[released]
			if recs[i] != nil {
				recs[i].Release()
				recs[i] = nil
			}
		}
	}
	return nil
}

// conformAll conforms recs to schema in place, refusing null timestamps, and
// returns the global number of each record's first row, then the total.
func conformAll(recs []arrow.RecordBatch, schema *arrow.Schema, tsIdx int, mem memory.Allocator) ([]int64, error) {
	starts := make([]int64, 0, len(recs)+1)
	var total int64
	for i, r := range recs {
		if r == nil {
			starts = append(starts, total)
			continue
		}
		c, err := input.Conform(r, schema, mem)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		r.Release()
		recs[i] = c
		if col := c.Column(tsIdx); col.NullN() > 0 {
			return nil, fmt.Errorf("timestamp column %q has %d null values", schema.Field(tsIdx).Name, col.NullN())
		}
		starts = append(starts, total)
		total += c.NumRows()
	}
	return append(starts, total), nil
}

// sortedOrder returns the timestamps of recs' total rows (in micros, by
// global row number) and the row numbers in timestamp order.
func sortedOrder(recs []arrow.RecordBatch, tsIdx int, total int64) ([]int64, []int32) {
	ts := make([]int64, 0, total)
	for _, r := range recs {
		if r != nil {
			ts = input.AppendMicros(ts, r.Column(tsIdx))
		}
	}
	order := make([]int32, total)
	for i := range order {
		order[i] = int32(i)
	}
	if !slices.IsSorted(ts) {
		// Ties broken by row number keep the sort stable; pdqsort is
		// close to linear on the mostly ordered rows of a WAL.
		slices.SortFunc(order, func(a, b int32) int {
			if c := cmp.Compare(ts[a], ts[b]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
	return ts, order
}

// writerProperties are the Parquet settings every siglake file uses: zstd,
// statistics and page index on (readers prune by them and seek with the
// offset index), dictionary for strings except the free-text raw column,
// whose values rarely repeat: a dictionary there only costs memory on both
// ends until the writer falls back to plain encoding.
func writerProperties(opts Options) *parquet.WriterProperties {
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
		parquet.WithCompressionLevel(zstdLevel),
		parquet.WithStats(true),
		parquet.WithPageIndexEnabled(true),
		parquet.WithDictionaryDefault(true),
		parquet.WithDictionaryPageSizeLimit(dictPageBytes),
		parquet.WithMaxRowGroupLength(opts.RowGroupRows),
		parquet.WithDataPageSize(PageBytes),
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
func ParquetWriterProperties(opts Options) *parquet.WriterProperties {
	return writerProperties(opts.WithDefaults())
}
