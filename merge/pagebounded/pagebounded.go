package pagebounded

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/kmerge"
	"github.com/siglake/siglake/merge/writer"
)

// ReadBuffer is the read-ahead per column stream on this path:
// smaller than the k-way path's, because the page-bounded path exists for
// bins whose streams would not fit the budget.
const ReadBuffer = 256 << 10

// Merge merges the files at paths in two interleaved passes over each input. A
// timestamp-only pass (8 bytes a row, in small batches) runs the k-way merge
// and emits, per chunk of chunkRows output rows, the run plan: which row
// range of which input goes out in which order. Each input's rows in one
// chunk are a contiguous range, so a second, full-width reader per input
// reads exactly those rows, and the chunk is assembled and written. Decoded
// memory is about one chunk (plus small per-input batches), whatever the
// input sizes; the plan for one chunk has at most chunkRows runs. The price
// is decoding the timestamp column twice.
//
// read counts the bytes read; tsSkipped the rows the timestamp pass took from the page index
// instead of decoding them.
func Merge(ctx context.Context, fs icebergio.WriteFileIO, paths []string, schema *arrow.Schema, newPath func(int) string,
	opts writer.Options, chunkRows int64, read, tsSkipped *int64) (outs []writer.Output, err error) {
	s, err := writer.NewSink(fs, newPath, schema, opts, writer.MetaStreamed(opts.Metadata))
	if err != nil {
		return nil, err
	}
	as := writer.NewAsyncSink(ctx, s)
	defer writer.RecoverAbort(&err, as)
	k := int64(max(len(paths), 1))
	dataBatch := min(max(chunkRows/k, 256), chunkRows)
	tsBatch := min(max(4*chunkRows/k, 1024), 64*1024)

	var files []*input.File
	var cursors []*kmerge.Cursor
	p := &planSink{ctx: ctx}
	defer func() {
		for _, c := range cursors {
			_ = c.Close()
		}
		for _, r := range p.readers {
			if r.seq != nil {
				r.seq.Close()
			}
		}
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for i, path := range paths {
		tsIn, err := input.OpenCounted(fs, path, opts.Allocator, tsBatch, ReadBuffer, read)
		if err != nil {
			return nil, err
		}
		files = append(files, tsIn)
		dataIn, err := input.OpenCounted(fs, path, opts.Allocator, dataBatch, ReadBuffer, read)
		if err != nil {
			return nil, err
		}
		files = append(files, dataIn)
		rr := &rowReader{name: path, in: dataIn, schema: schema, tsName: opts.TimestampColumn, mem: opts.Allocator}
		var nested *arrow.Schema
		if nested, rr.flat = input.SplitNested(dataIn, schema, opts.TimestampColumn); nested != nil {
			if rr.seq, err = input.NewSeqReader(ctx, dataIn, nested, opts.TimestampColumn, opts.Allocator); err != nil {
				return nil, err
			}
		}
		p.readers = append(p.readers, rr)
		p.keys = append(p.keys, &kmerge.Cursor{Idx: i})
	}
	// The page index says which timestamp pages no other input overlaps:
	// the timestamp pass skips those instead of reading and decoding them.
	pages, indexed := make([][]input.TimestampPage, len(paths)), make([]bool, len(paths))
	for i := range paths {
		pages[i], indexed[i] = input.TimestampPages(files[2*i], opts.TimestampColumn)
	}
	skip := input.IsolatedRuns(pages, indexed)
	for i, path := range paths {
		tsIn := files[2*i]
		tsSrc, err := input.NewPQSource(ctx, tsIn, nil, opts.TimestampColumn, true, opts.Allocator)
		if err != nil {
			return nil, err
		}
		var src input.Source = tsSrc
		if skip != nil && len(skip[i]) > 0 {
			src = input.NewSkippingTsSource(tsSrc, skip[i], tsIn.Parquet.NumRows(), tsBatch, tsSkipped, path)
		}
		cursors = append(cursors, &kmerge.Cursor{Idx: i, Name: path, Src: input.NewPrefetch(ctx, src)})
	}
	p.need = make([]int64, len(paths))
	p.consumed = make([]int64, len(paths))
	p.asm = kmerge.NewAssembler(ctx, schema, opts.Allocator, func(r arrow.RecordBatch) error { return as.Write(ctx, r) })
	defer p.asm.Release()

	if err := kmerge.Order(ctx, cursors, chunkRows, p); err != nil {
		return nil, errors.Join(err, as.Abort())
	}
	for i, r := range p.readers {
		if p.consumed[i] != r.in.Parquet.NumRows() {
			return nil, errors.Join(input.NewError("reading input", paths[i], fmt.Errorf("the timestamp pass planned %d of its %d rows", p.consumed[i], r.in.Parquet.NumRows())), as.Abort())
		}
	}
	return as.Finish()
}

// planSink collects one chunk's run plan, then reads and assembles it.
type planSink struct {
	ctx      context.Context
	readers  []*rowReader
	keys     []*kmerge.Cursor // one assembler key per input
	runs     []planRun
	need     []int64 // rows of each input in the current chunk
	consumed []int64 // rows of each input read so far
	asm      *kmerge.Assembler
}

// planRun: rows [row, row+n) of input go out next.
type planRun struct {
	input  int
	row, n int64
}

func (p *planSink) Run(c *kmerge.Cursor, from, to int) error {
	row, n := c.Base+int64(from), int64(to-from)
	if l := len(p.runs) - 1; l >= 0 && p.runs[l].input == c.Idx && p.runs[l].row+p.runs[l].n == row {
		p.runs[l].n += n
	} else {
		p.runs = append(p.runs, planRun{input: c.Idx, row: row, n: n})
	}
	p.need[c.Idx] += n
	return nil
}

func (p *planSink) ChunkEnd() error {
	recs := make([]arrow.RecordBatch, len(p.readers))
	defer func() {
		for _, r := range recs {
			if r != nil {
				r.Release()
			}
		}
	}()
	for i, n := range p.need {
		if n == 0 {
			continue
		}
		r, err := p.readers[i].Read(p.ctx, n)
		if err != nil {
			return err
		}
		recs[i] = r
	}
	for _, r := range p.runs {
		off := r.row - p.consumed[r.input]
		p.asm.Add(p.keys[r.input], recs[r.input], off, off+r.n)
	}
	for i := range p.need {
		p.consumed[i] += p.need[i]
		p.need[i] = 0
	}
	p.runs = p.runs[:0]
	return p.asm.ChunkEnd()
}

// rowReader reads row ranges of one input for the data pass. It keeps no
// reader open between chunks: each read opens readers on the row groups it
// needs and seeks to its first row with the offset index (the page index), so
// the data pass holds one input's column readers at a time, whatever the
// fan-in. The price is decoding again the part of a page that straddles two
// chunks.
//
// Columns with repeated leaves cannot be read that way (see nested.go): seq
// reads them forward with a reader that stays open, and flat is the schema
// of the rest.
type rowReader struct {
	name   string
	in     *input.File
	schema *arrow.Schema
	flat   *arrow.Schema    // the columns read by seeking: schema, less seq's
	seq    *input.SeqReader // nil when the input has no repeated columns
	tsName string
	mem    memory.Allocator
	next   int64 // first row not read yet
}

// read returns the next n rows as one record.
func (r *rowReader) Read(ctx context.Context, n int64) (arrow.RecordBatch, error) {
	flat, err := r.readFlat(ctx, n)
	if err != nil || r.seq == nil {
		return flat, err
	}
	defer flat.Release()
	nested, err := r.seq.Read(ctx, r.name, n)
	if err != nil {
		return nil, err
	}
	defer nested.Release()
	return input.ZipColumns(r.schema, flat, nested), nil
}

// readFlat returns the next n rows of the flat columns.
func (r *rowReader) readFlat(ctx context.Context, n int64) (arrow.RecordBatch, error) {
	md := r.in.Parquet.MetaData()
	rg, before := 0, int64(0)
	for rg < md.NumRowGroups() && before+md.RowGroup(rg).NumRows() <= r.next {
		before += md.RowGroup(rg).NumRows()
		rg++
	}
	var rgs []int
	for i, rows := rg, before; i < md.NumRowGroups() && rows < r.next+n; i++ {
		rgs = append(rgs, i)
		rows += md.RowGroup(i).NumRows()
	}
	if len(rgs) == 0 {
		return nil, fmt.Errorf("input %s: data pass asked for rows %d-%d past its end", r.name, r.next, r.next+n)
	}
	src, err := input.NewPQSourceRG(ctx, r.in, r.flat, r.tsName, false, r.mem, rgs)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if skip := r.next - before; skip > 0 {
		if err := src.SeekToRow(skip); err != nil {
			return nil, input.NewError("reading input", r.name, fmt.Errorf("seeking to row %d: %w", r.next, err))
		}
	}
	var pieces []arrow.RecordBatch
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	for left := n; left > 0; {
		b, ok, err := src.Next(ctx)
		if err != nil {
			return nil, input.NewError("reading input", r.name, err)
		}
		if !ok {
			return nil, input.NewError("reading input", r.name, errors.New("data pass ended before the rows the timestamp pass planned"))
		}
		take := min(left, b.Rec.NumRows())
		pieces = append(pieces, b.Rec.NewSlice(0, take))
		b.Rec.Release()
		left -= take
	}
	r.next += n
	if len(pieces) == 1 {
		pieces[0].Retain()
		return pieces[0], nil
	}
	return input.ConcatRecords(r.flat, pieces, r.mem)
}
