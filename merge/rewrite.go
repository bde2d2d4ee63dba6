package merge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/kmerge"
	"github.com/siglake/siglake/merge/pagebounded"
	"github.com/siglake/siglake/merge/pqdecode"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/merge/splice"
	"github.com/siglake/siglake/merge/writer"
)

// PathKind names a merge path.
type PathKind string

const (
	PathInMemory    PathKind = "in-memory"
	PathKWay        PathKind = "k-way"
	PathPageBounded PathKind = "page-bounded"
	PathSplice      PathKind = "splice"
)

// Defaults for RewriteOptions' zero values.
const (
	// DefaultMaxFanIn bounds the inputs of one k-way merge
	// (SIGLAKE_COMPACTOR_MAX_FANIN): each holds a decoded batch and a read
	// buffer per column.
	DefaultMaxFanIn = 32
	// DefaultChunkRows is the page-bounded path's chunk
	// (SIGLAKE_MERGE_CHUNK_ROWS): its decoded memory is about this many rows.
	DefaultChunkRows = 64 * 1024
	// kwayRows bounds the rows the k-way path's input batches hold together:
	// each input decodes kwayRows/fan-in rows at a time (kwayBatchRows), so
	// its decoded memory does not grow with the fan-in.
	kwayRows = 32 * 1024
	// kwayChunkRows is the k-way path's output chunk, the rows assembled and
	// handed to the encoder at a time. Each chunk costs a fixed overhead in
	// the Parquet writer and the metadata builder (per column buffers,
	// levels, statistics); 16 Ki rows trade a little memory for less CPU
	// (docs/benchmarks.md, "K-way output chunk").
	kwayChunkRows = 16 * 1024
	// inMemoryFactor: the in-memory path holds inputs, the assembled chunk
	// and the writer's buffers; it is chosen when this many times the
	// estimated decoded size fits the budget.
	inMemoryFactor = 3
)

// DefaultSpliceMinRows is the smallest row group the splice path copies
// (SIGLAKE_MERGE_SPLICE_MIN_ROWS): half the default row-group length.
// Copied row groups keep their size, so copying small ones would keep the
// output's row groups small (what stalled Iceberg's row-group merge); those
// are re-encoded with the rows around them instead.
const DefaultSpliceMinRows = writer.DefaultRowGroupRows / 2

// spliceShare is the share of a bin's bytes that must lie in copyable row
// groups for ChoosePath to take the splice path: below it, the copies save
// too little to give up the in-memory path's whole-file metadata.
const spliceShare = 0.5

// The writer's types that Rewrite's options and result carry, under the names callers of
// Rewrite know them by; callers of the writer alone use merge/writer.
type (
	WriterOptions   = writer.Options
	MetadataOptions = writer.MetadataOptions
	Output          = writer.Output
)

// Input is one data file of the bin to rewrite.
type Input struct {
	Path       string
	Size       int64
	Rows       int64
	Generation int
}

// RewriteOptions configure one rewrite.
type RewriteOptions struct {
	WriterOptions
	// MemoryBudget bounds the decoded memory of this merge
	// (SIGLAKE_MERGE_MEMORY_BYTES); 0 = DefaultMemoryBudget().
	MemoryBudget int64
	// ChunkRows is the page-bounded path's chunk length; 0 = DefaultChunkRows.
	ChunkRows int64
	// MaxFanIn is the most inputs the k-way path takes; 0 = DefaultMaxFanIn.
	MaxFanIn int
	// SpliceMinRows is the smallest row group the splice path copies
	// (SIGLAKE_MERGE_SPLICE_MIN_ROWS); 0 = DefaultSpliceMinRows, negative
	// turns the splice path off.
	SpliceMinRows int64
	// SpliceUnverified skips reading the pages of the copied row groups
	// whose input has no chunk sums (SIGLAKE_MERGE_SPLICE_VERIFY=off; other
	// writers' files): about half of the splice's CPU on such inputs, at the
	// price of carrying their damaged pages into the output unnoticed. Sums,
	// where the input has them, are checked either way (they cost little).
	SpliceUnverified bool
	// Decoder is the library the k-way path decodes and merges with
	// (SIGLAKE_MERGE_PARQUET_DECODER); empty is the process default (SetDefaultDecoder).
	Decoder Decoder
	// ForcePath skips ChoosePath (tests, benchmarks).
	ForcePath PathKind
	// DeleteTask marks a delete-task rewrite: output generation 0, and the
	// in-memory arm follows index_at_flush like an ingest flush.
	DeleteTask bool
	// RowFilter, if set, drops the rows it matches (delete tasks). It runs on
	// the in-memory and k-way paths; a bin the budget would send to the
	// page-bounded path streams through the k-way path instead.
	RowFilter *rowfilter.Filter
	// Fold, if set, folds the merged stream's rows of one (bucket, keys) into one (aggregate
	// folding). Like RowFilter it needs every row decoded: it runs on the in-memory and k-way
	// paths, never on one that copies row groups or pages.
	Fold *folding.Fold

	matcher *rowMatcher       // RowFilter bound to the schema, for this rewrite
	fold    *folding.Compiled // Fold bound to the schema
	folder  *folding.Folder   // the fold's state, for its stats
}

// RewriteResult says what a rewrite did.
type RewriteResult struct {
	Path   PathKind
	Reason string
	// Decoder is the library that decoded the inputs of a k-way merge (the Reason says why
	// parquet-go, when asked for, did not); empty on other paths.
	Decoder      Decoder
	Outputs      []Output
	BytesRead    int64
	BytesWritten int64
	// SplicedBytes is the part of BytesWritten the splice path copied from
	// inputs without re-encoding.
	SplicedBytes int64
	// Deleted counts the rows RowFilter dropped, per predicate (a row counts
	// for the first predicate that matches); nil without a filter.
	Deleted []int64
	// Fold is what the fold did; nil without one.
	Fold *folding.FoldStats
	// Took is the rewrite's wall time, for the caller's metrics.
	Took time.Duration
	// tsSkipped: rows the page-bounded timestamp pass took from the page
	// index instead of decoding them (tests).
	tsSkipped int64
	// verifiedRowGroups: copied row groups whose pages the splice read to
	// check them, for want of chunk sums (tests).
	verifiedRowGroups int64
}

// Budget is what ChoosePath weighs a bin against.
type Budget struct {
	MemoryBytes int64 // decoded bytes one merge may hold
	MaxFanIn    int   // most inputs a k-way merge may take
	// StreamBytesPerInput is the decoded bytes the k-way path holds per
	// input (its batch plus the batch being assembled); Rewrite estimates
	// it from the inputs' row width.
	StreamBytesPerInput int64
	// SpliceBytes is the compressed bytes of the bin's row groups the splice
	// path would copy unchanged (full-size, and no other input's rows inside
	// their time range), of InputBytes in all.
	SpliceBytes, InputBytes int64
}

// ChoosePath picks the merge path for a bin with the given estimated decoded
// size and fan-in, and says why. The in-memory path writes the most search
// metadata (the footer's inverted index and whole-file trigram bloom), so it
// wins whenever it fits: a bin that fits it must not lose that metadata to
// the splice, which writes neither. A bin that would otherwise stream, most
// of whose bytes are row groups that overlap nothing, takes the splice path,
// which copies them for a few percent of a re-encode, if its re-encoded rest
// fits the k-way streams. Otherwise the k-way path reads each input once, so
// it comes next; the page-bounded path fits any bin.
func ChoosePath(estDecodedBytes int64, fanIn int, b Budget) (PathKind, string) {
	if need := estDecodedBytes * inMemoryFactor; need <= b.MemoryBytes {
		return PathInMemory, fmt.Sprintf("estimated decoded size %s x%d fits the merge budget %s",
			mib(estDecodedBytes), inMemoryFactor, mib(b.MemoryBytes))
	}
	streams := int64(fanIn) * b.StreamBytesPerInput
	if b.InputBytes > 0 && float64(b.SpliceBytes) >= spliceShare*float64(b.InputBytes) && fanIn <= b.MaxFanIn && streams <= b.MemoryBytes {
		return PathSplice, fmt.Sprintf("estimated decoded size %s x%d exceeds the merge budget %s; %s of the bin's %s are row groups no other input overlaps: copied; the rest streams through %d inputs of %s",
			mib(estDecodedBytes), inMemoryFactor, mib(b.MemoryBytes), mib(b.SpliceBytes), mib(b.InputBytes), fanIn, mib(b.StreamBytesPerInput))
	}
	if fanIn > b.MaxFanIn {
		return PathPageBounded, fmt.Sprintf("estimated decoded size %s x%d exceeds the merge budget %s and fan-in %d exceeds the k-way limit %d",
			mib(estDecodedBytes), inMemoryFactor, mib(b.MemoryBytes), fanIn, b.MaxFanIn)
	}
	if need := int64(fanIn) * b.StreamBytesPerInput; need <= b.MemoryBytes {
		return PathKWay, fmt.Sprintf("estimated decoded size %s x%d exceeds the merge budget %s; %d streams of %s fit it",
			mib(estDecodedBytes), inMemoryFactor, mib(b.MemoryBytes), fanIn, mib(b.StreamBytesPerInput))
	}
	return PathPageBounded, fmt.Sprintf("estimated decoded size %s x%d exceeds the merge budget %s and %d streams of %s do too",
		mib(estDecodedBytes), inMemoryFactor, mib(b.MemoryBytes), fanIn, mib(b.StreamBytesPerInput))
}

// spliceMinRows resolves RewriteOptions.SpliceMinRows: 0 is the default, a
// negative value turns the splice off.
func spliceMinRows(n int64) int64 {
	switch {
	case n == 0:
		return DefaultSpliceMinRows
	case n < 0:
		return 0
	}
	return n
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// Rewrite merges inputs (data files of one partition, each sorted by the
// timestamp column) into new files from newPath, sorted and pairwise
// time-disjoint, at generation max(input generations)+1 (0 for a delete
// task). On any error it removes the outputs it wrote and returns the error;
// the caller commits nothing. Its steps: bind the options to the bin, open
// the inputs, choose the path, run it, and say what it did.
func Rewrite(ctx context.Context, fs icebergio.WriteFileIO, inputs []Input, schema *arrow.Schema, newPath func(i int) string, opts RewriteOptions) (_ RewriteResult, err error) {
	start := time.Now()
	defer writer.RecoverAbort(&err, nil)
	if opts, err = bindOptions(opts, inputs, schema); err != nil {
		return RewriteResult{}, err
	}
	var read int64
	bin, err := openBin(fs, inputs, opts, &read)
	defer bin.Close()
	if err != nil {
		return RewriteResult{}, err
	}
	if opts.SplitSparse > 0 && bin.rows >= SplitSparseMinBinRows {
		opts.WriterOptions = opts.WriterOptions.WithCutBefore(binCuts(bin.opened, opts.SplitSparse))
	}
	res, plan, err := choosePath(bin, schema, &opts)
	if err != nil {
		return RewriteResult{}, err
	}
	outs, err := runPath(ctx, fs, inputs, bin.opened, schema, newPath, opts, plan, &res, &read)
	if err != nil {
		return RewriteResult{}, fmt.Errorf("%s merge of %d inputs: %w", res.Path, len(inputs), err)
	}
	res.Outputs = outs
	res.BytesRead = read
	if opts.matcher != nil {
		res.Deleted = opts.matcher.deleted
	}
	if opts.folder != nil {
		st := opts.folder.Stats()
		res.Fold = &st
	}
	for _, o := range outs {
		res.BytesWritten += o.Size
	}
	res.Took = time.Since(start)
	return res, nil
}

// bindOptions fills opts' defaults and the bin's output generation, and binds
// the row filter and the fold to the schema, refusing a forced path they
// cannot run on.
func bindOptions(opts RewriteOptions, inputs []Input, schema *arrow.Schema) (RewriteOptions, error) {
	opts.WriterOptions = opts.WriterOptions.WithDefaults()
	if opts.MemoryBudget <= 0 {
		opts.MemoryBudget = DefaultMemoryBudget()
	}
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = DefaultChunkRows
	}
	if opts.MaxFanIn <= 0 {
		opts.MaxFanIn = DefaultMaxFanIn
	}
	gen := 0
	for _, in := range inputs {
		gen = max(gen, in.Generation+1)
	}
	if opts.DeleteTask {
		gen = 0
	}
	opts.Generation = gen
	var err error
	if opts.RowFilter != nil {
		if opts.matcher, err = compileFilter(opts.RowFilter, schema); err != nil {
			return opts, err
		}
		if opts.ForcePath == PathPageBounded {
			return opts, fmt.Errorf("a row filter runs on the %s and %s paths, not %s", PathInMemory, PathKWay, PathPageBounded)
		}
	}
	if opts.Fold != nil {
		if opts.fold, err = folding.Compile(*opts.Fold, schema, opts.TimestampColumn); err != nil {
			return opts, err
		}
		opts.folder = folding.NewFolder(opts.fold, schema, opts.Allocator, kwayChunkRows)
		if opts.ForcePath != "" && opts.ForcePath != PathInMemory && opts.ForcePath != PathKWay {
			return opts, fmt.Errorf("a fold runs on the %s and %s paths, not %s", PathInMemory, PathKWay, opts.ForcePath)
		}
	}
	return opts, nil
}

// openedBin is a bin's opened inputs with what ChoosePath weighs: their
// estimated decoded size and their rows.
type openedBin struct {
	opened    []*input.File
	est, rows int64
}

func (b openedBin) Close() {
	for _, in := range b.opened {
		_ = in.Close()
	}
}

// pageStreaming is on outside tests; TestKWayMemoryIndependentOfRowGroupSize
// turns it off for a bin's inputs to show the test can tell.
var pageStreaming = true

// openBin opens every input's footer, counting the bytes read into read.
// The inputs it opened are in the result even on error, for close.
func openBin(fs icebergio.WriteFileIO, inputs []Input, opts RewriteOptions, read *int64) (openedBin, error) {
	b := openedBin{opened: make([]*input.File, 0, len(inputs))}
	for _, in := range inputs {
		o, err := input.OpenCounted(fs, in.Path, opts.Allocator, kwayBatchRows(len(inputs)), input.ReadBufferBytes, read)
		if err != nil {
			return b, err
		}
		o.Props.PageStreamingEnabled = pageStreaming // read when the column readers are made
		b.opened = append(b.opened, o)
		b.est += estimateDecoded(o)
		b.rows += o.Parquet.NumRows()
	}
	return b, nil
}

// choosePath picks the bin's merge path (the forced one, or ChoosePath's, then
// the k-way path where a row filter or a fold needs every row decoded), and
// plans the splice where it may run (setting the template for its sink).
func choosePath(bin openedBin, schema *arrow.Schema, opts *RewriteOptions) (RewriteResult, *splice.Plan, error) {
	fanIn := len(bin.opened)
	// A k-way stream holds two decoded batches (the one being merged and the
	// one being assembled), and per column a read-ahead buffer and about two
	// pages (compressed and decompressed).
	perInput := int64(schema.NumFields()) * (streamReadBuffer(opts.MemoryBudget, fanIn, schema.NumFields()) + 2*writer.PageBytes)
	if bin.rows > 0 {
		perInput += 2 * kwayBatchRows(fanIn) * (bin.est/bin.rows + 1)
	}
	res := RewriteResult{Path: opts.ForcePath, Reason: "forced by options"}
	var plan *splice.Plan
	if opts.matcher == nil && (res.Path == "" || res.Path == PathSplice) {
		tmpl, err := writer.Template(schema, opts.WriterOptions)
		if err != nil {
			return RewriteResult{}, nil, err
		}
		plan = splice.PlanCopies(bin.opened, tmpl, opts.TimestampColumn, spliceMinRows(opts.SpliceMinRows), opts.CutBefore().At)
		opts.WriterOptions = opts.WriterOptions.WithTemplate(tmpl)
	} else if res.Path == PathSplice {
		return RewriteResult{}, nil, fmt.Errorf("a row filter runs on the %s and %s paths, not %s", PathInMemory, PathKWay, PathSplice)
	}
	if res.Path != "" {
		return res, plan, nil
	}
	b := Budget{MemoryBytes: opts.MemoryBudget, MaxFanIn: opts.MaxFanIn, StreamBytesPerInput: perInput}
	if plan != nil {
		b.SpliceBytes, b.InputBytes = plan.CopyBytes, plan.TotalBytes
	}
	res.Path, res.Reason = ChoosePath(bin.est, fanIn, b)
	if opts.matcher != nil && res.Path == PathPageBounded {
		// The timestamp pass cannot see the filtered columns; a delete
		// task's bin is one file, which one k-way stream reads.
		res.Path, res.Reason = PathKWay, res.Reason+"; a row filter streams through the k-way path"
	}
	if opts.fold != nil && res.Path != PathInMemory && res.Path != PathKWay {
		// A fold re-encodes every row: no path that copies row groups or pages.
		res.Path, res.Reason = PathKWay, res.Reason+"; a fold streams through the k-way path"
	}
	return res, plan, nil
}

// runPath runs the merge path res names, sizing the streamed paths' read-ahead
// to the budget; the splice path adds its copied bytes to res.
func runPath(ctx context.Context, fs icebergio.WriteFileIO, inputs []Input, opened []*input.File, schema *arrow.Schema,
	newPath func(int) string, opts RewriteOptions, plan *splice.Plan, res *RewriteResult, read *int64) ([]Output, error) {
	streamed := func() {
		buf := streamReadBuffer(opts.MemoryBudget, len(opened), schema.NumFields())
		for _, in := range opened {
			in.Props.BufferSize = buf
		}
	}
	switch res.Path {
	case PathInMemory:
		return mergeInMemory(ctx, fs, opened, schema, newPath, opts)
	case PathKWay:
		streamed()
		return kway(ctx, fs, opened, schema, newPath, opts, res)
	case PathSplice:
		streamed()
		so := splice.Options{Writer: opts.WriterOptions, ChunkRows: kwayChunkRows, Unverified: opts.SpliceUnverified}
		outs, st, err := splice.Merge(ctx, fs, opened, schema, newPath, so, plan)
		res.SplicedBytes, res.verifiedRowGroups = st.CopiedBytes, st.VerifiedRowGroups
		return outs, err
	case PathPageBounded:
		paths := make([]string, len(inputs))
		for i, in := range inputs {
			paths[i] = in.Path
		}
		return pagebounded.Merge(ctx, fs, paths, schema, newPath, opts.WriterOptions, opts.ChunkRows, read, &res.tsSkipped)
	}
	return nil, fmt.Errorf("unknown merge path %q", res.Path)
}

// kwayBatchRows is the decoded batch of each input of a k-way merge of
// fanIn inputs: kwayRows shared, between 1024 rows (smaller batches cost
// per-batch decoding overhead) and 4096.
func kwayBatchRows(fanIn int) int64 {
	return min(max(kwayRows/int64(max(fanIn, 1)), 1024), 4*1024)
}

// streamReadBuffer sizes the read-ahead of each column stream of a streamed
// merge: a 32nd of the budget over all streams, between 64 KiB (fewer,
// larger ranged reads matter on object stores) and 256 KiB (past that, a
// larger range saves little time and costs fan-in x columns of memory).
// With the default 512 MiB budget, 8 inputs of 6 columns get 256 KiB and
// 32 inputs 83 KiB: the buffers together stay at 16 MiB.
func streamReadBuffer(budget int64, inputs, columns int) int64 {
	b := budget / 32 / int64(max(inputs*columns, 1))
	return min(max(b, 64<<10), pagebounded.ReadBuffer)
}

// estimateDecoded estimates the Arrow size of an input from its footer: the
// uncompressed column chunks, plus an offset per value (strings decode to
// values and offsets; dictionary pages understate repeated values, which the
// in-memory factor absorbs).
func estimateDecoded(in *input.File) int64 {
	md := in.Parquet.MetaData()
	var n int64
	for i := 0; i < md.NumRowGroups(); i++ {
		rg := md.RowGroup(i)
		n += rg.TotalByteSize() + rg.NumRows()*int64(rg.NumColumns())*4
	}
	return n
}

// runMerge drives kmerge.Order over cursors into a sink, cleaning up on error.
func runMerge(ctx context.Context, cursors []*kmerge.Cursor, chunkRows int64, s *writer.AsyncSink, rs kmerge.RunSink, release func()) (outs []Output, err error) {
	defer writer.RecoverAbort(&err, s)
	err = kmerge.Order(ctx, cursors, chunkRows, rs)
	if e, ok := rs.(endSink); ok && err == nil {
		err = e.end()
	}
	release()
	for _, c := range cursors {
		if cerr := c.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing input %s: %w", c.Name, cerr)
		}
	}
	if err != nil {
		return nil, errors.Join(err, s.Abort())
	}
	return s.Finish()
}

// mergeInMemory decodes every input whole, then merges: the only path that
// holds the entire output, so it writes the whole-file search metadata.
func mergeInMemory(ctx context.Context, fs icebergio.WriteFileIO, opened []*input.File, schema *arrow.Schema, newPath func(int) string, opts RewriteOptions) ([]Output, error) {
	s, err := writer.NewSink(fs, newPath, schema, opts.WriterOptions, writer.MetaFull(opts.Metadata, opts.Generation))
	if err != nil {
		return nil, err
	}
	cursors := make([]*kmerge.Cursor, 0, len(opened))
	releaseAll := func() {
		for _, c := range cursors {
			_ = c.Close()
		}
	}
	for i, in := range opened {
		pq, err := input.NewPQSource(ctx, in, schema, opts.TimestampColumn, false, opts.Allocator)
		if err != nil {
			releaseAll()
			return nil, err
		}
		src := opts.filtered(pq, schema)
		ms := &input.MemSource{}
		c := &kmerge.Cursor{Idx: i, Name: in.Path, Src: ms}
		cursors = append(cursors, c)
		for {
			b, ok, err := src.Next(ctx)
			if err != nil {
				_ = src.Close()
				releaseAll()
				return nil, input.NewError("reading input", in.Path, err)
			}
			if !ok {
				break
			}
			ms.Batches = append(ms.Batches, b)
		}
		_ = src.Close()
	}
	as := writer.NewAsyncSink(ctx, s)
	out, end := opts.folded(func(r arrow.RecordBatch) error { return as.Write(ctx, r) }, schema)
	asm := kmerge.NewAssembler(ctx, schema, opts.Allocator, out)
	return runMerge(ctx, cursors, min(opts.RowGroupRows, DefaultChunkRows), as, withEnd(asm, end), asm.Release)
}

// kway runs the k-way path with the decoder opts ask for, on arrow-go where the parquet-go
// decoder cannot take the bin, saying why in res.
func kway(ctx context.Context, fs icebergio.WriteFileIO, opened []*input.File, schema *arrow.Schema, newPath func(int) string, opts RewriteOptions, res *RewriteResult) ([]Output, error) {
	res.Decoder = DecoderArrow
	if opts.Decoder.resolve() != DecoderParquetGo {
		return mergeKWay(ctx, fs, opened, schema, newPath, opts)
	}
	s, err := valueSink(fs, opened, schema, newPath, opts)
	if err != nil {
		res.Reason += "; decoded with arrow-go, not parquet-go: " + err.Error()
		return mergeKWay(ctx, fs, opened, schema, newPath, opts)
	}
	res.Decoder, res.Reason = DecoderParquetGo, res.Reason+"; decoded, merged and encoded on parquet-go values"
	buf := streamReadBuffer(opts.MemoryBudget, len(opened), schema.NumFields())
	layout := s.ValueLayout()
	cursors, err := pqdecode.Cursors(ctx, opened, layout, opts.TimestampColumn, kwayBatchRows(len(opened)), buf)
	if err != nil {
		return nil, err
	}
	as := writer.NewAsyncSink(ctx, s)
	runs := pqdecode.NewRuns(ctx, as, layout, min(opts.RowGroupRows, kwayChunkRows))
	return runMerge(ctx, cursors, min(opts.RowGroupRows, kwayChunkRows), as, runs, runs.Release)
}

// valueSink is the sink of a k-way merge on parquet-go values, or why the bin cannot have one.
func valueSink(fs icebergio.WriteFileIO, opened []*input.File, schema *arrow.Schema, newPath func(int) string, opts RewriteOptions) (*writer.Sink, error) {
	if err := valueMergeBlocker(opened, schema, opts); err != nil {
		return nil, err
	}
	wo := opts.WriterOptions
	wo.Encoder = writer.EncoderParquetGo
	s, err := writer.NewSink(fs, newPath, schema, wo, writer.MetaStreamed(opts.Metadata))
	if err != nil {
		return nil, err
	}
	return s, s.CanWriteValues()
}

// mergeKWay streams every input in batches through a heap: memory is about
// fan-in x batch, whatever the input sizes.
func mergeKWay(ctx context.Context, fs icebergio.WriteFileIO, opened []*input.File, schema *arrow.Schema, newPath func(int) string, opts RewriteOptions) ([]Output, error) {
	s, err := writer.NewSink(fs, newPath, schema, opts.WriterOptions, writer.MetaStreamed(opts.Metadata))
	if err != nil {
		return nil, err
	}
	cursors := make([]*kmerge.Cursor, 0, len(opened))
	for i, in := range opened {
		src, err := input.NewPQSource(ctx, in, schema, opts.TimestampColumn, false, opts.Allocator)
		if err != nil {
			for _, c := range cursors {
				_ = c.Close()
			}
			return nil, err
		}
		cursors = append(cursors, &kmerge.Cursor{Idx: i, Name: in.Path, Src: input.NewPrefetch(ctx, opts.filtered(src, schema))})
	}
	as := writer.NewAsyncSink(ctx, s)
	out, end := opts.folded(func(r arrow.RecordBatch) error { return as.Write(ctx, r) }, schema)
	asm := kmerge.NewAssembler(ctx, schema, opts.Allocator, out)
	return runMerge(ctx, cursors, min(opts.RowGroupRows, kwayChunkRows), as, withEnd(asm, end), asm.Release)
}
