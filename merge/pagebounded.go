package merge

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
)

// pageBoundedReadBuffer is the read-ahead per column stream on this path:
// smaller than the k-way path's, because the page-bounded path exists for
// bins whose streams would not fit the budget.
const pageBoundedReadBuffer = 256 << 10

// mergePageBounded merges in two interleaved passes over each input. A
// timestamp-only pass (8 bytes a row, in small batches) runs the k-way merge
// and emits, per chunk of ChunkRows output rows, the run plan: which row
// range of which input goes out in which order. Each input's rows in one
// chunk are a contiguous range, so a second, full-width reader per input
// reads exactly those rows, and the chunk is assembled and written. Decoded
// memory is about one chunk (plus small per-input batches), whatever the
// input sizes; the plan for one chunk has at most ChunkRows runs. The price
// is decoding the timestamp column twice.
func mergePageBounded(ctx context.Context, fs icebergio.WriteFileIO, inputs []Input, schema *arrow.Schema, newPath func(int) string, opts RewriteOptions, read, tsSkipped *int64) (outs []Output, err error) {
	s, err := newSink(fs, newPath, schema, opts.WriterOptions, metaStreamed(opts.Metadata))
	if err != nil {
		return nil, err
	}
	as := newAsyncSink(ctx, s)
	defer recoverAbort(&err, as)
	k := int64(max(len(inputs), 1))
	dataBatch := min(max(opts.ChunkRows/k, 256), opts.ChunkRows)
	tsBatch := min(max(4*opts.ChunkRows/k, 1024), 64*1024)

	var files []*openedInput
	var cursors []*cursor
	p := &planSink{ctx: ctx}
	defer func() {
		for _, c := range cursors {
			_ = c.close()
		}
		for _, r := range p.readers {
			if r.seq != nil {
				r.seq.close()
			}
		}
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for i, in := range inputs {
		tsIn, err := openInputCounted(fs, in.Path, opts.Allocator, tsBatch, pageBoundedReadBuffer, read)
		if err != nil {
			return nil, err
		}
		files = append(files, tsIn)
		dataIn, err := openInputCounted(fs, in.Path, opts.Allocator, dataBatch, pageBoundedReadBuffer, read)
		if err != nil {
			return nil, err
		}
		files = append(files, dataIn)
		rr := &rowReader{name: in.Path, in: dataIn, schema: schema, tsName: opts.TimestampColumn, mem: opts.Allocator}
		var nested *arrow.Schema
		if nested, rr.flat = splitNested(dataIn, schema, opts.TimestampColumn); nested != nil {
			if rr.seq, err = newSeqReader(ctx, dataIn, nested, opts.TimestampColumn, opts.Allocator); err != nil {
				return nil, err
			}
		}
		p.readers = append(p.readers, rr)
		p.keys = append(p.keys, &cursor{idx: i})
	}
	// The page index says which timestamp pages no other input overlaps:
	// the timestamp pass skips those instead of reading and decoding them.
	pages, indexed := make([][]tsPage, len(inputs)), make([]bool, len(inputs))
	for i := range inputs {
		pages[i], indexed[i] = timestampPages(files[2*i], opts.TimestampColumn)
	}
	skip := isolatedRuns(pages, indexed)
	for i, in := range inputs {
		tsIn := files[2*i]
		tsSrc, err := newPQSource(ctx, tsIn, nil, opts.TimestampColumn, true, opts.Allocator)
		if err != nil {
			return nil, err
		}
		var src source = tsSrc
		if skip != nil && len(skip[i]) > 0 {
			src = &skippingTsSource{src: tsSrc, skip: skip[i], rows: tsIn.pf.NumRows(), batch: tsBatch, skipped: tsSkipped, fileName: in.Path}
		}
		cursors = append(cursors, &cursor{idx: i, name: in.Path, src: newPrefetchSource(ctx, src)})
	}
	p.need = make([]int64, len(inputs))
	p.consumed = make([]int64, len(inputs))
	p.asm = newAssembler(ctx, schema, opts.Allocator, func(r arrow.RecordBatch) error { return as.write(ctx, r) })
	defer p.asm.release()

	if err := mergeOrder(ctx, cursors, opts.ChunkRows, p); err != nil {
		return nil, errors.Join(err, as.abort())
	}
	for i, r := range p.readers {
		if p.consumed[i] != r.in.pf.NumRows() {
			return nil, errors.Join(inputErr("reading input", inputs[i].Path, fmt.Errorf("the timestamp pass planned %d of its %d rows", p.consumed[i], r.in.pf.NumRows())), as.abort())
		}
	}
	return as.finish()
}

// planSink collects one chunk's run plan, then reads and assembles it.
type planSink struct {
	ctx      context.Context
	readers  []*rowReader
	keys     []*cursor // one assembler key per input
	runs     []planRun
	need     []int64 // rows of each input in the current chunk
	consumed []int64 // rows of each input read so far
	asm      *assembler
}

// planRun: rows [row, row+n) of input go out next.
type planRun struct {
	input  int
	row, n int64
}

func (p *planSink) run(c *cursor, from, to int) error {
	row, n := c.base+int64(from), int64(to-from)
	if l := len(p.runs) - 1; l >= 0 && p.runs[l].input == c.idx && p.runs[l].row+p.runs[l].n == row {
		p.runs[l].n += n
	} else {
		p.runs = append(p.runs, planRun{input: c.idx, row: row, n: n})
	}
	p.need[c.idx] += n
	return nil
}

func (p *planSink) chunkEnd() error {
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
		r, err := p.readers[i].read(p.ctx, n)
		if err != nil {
			return err
		}
		recs[i] = r
	}
	for _, r := range p.runs {
		off := r.row - p.consumed[r.input]
		p.asm.add(p.keys[r.input], recs[r.input], off, off+r.n)
	}
	for i := range p.need {
		p.consumed[i] += p.need[i]
		p.need[i] = 0
	}
	p.runs = p.runs[:0]
	return p.asm.chunkEnd()
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
	in     *openedInput
	schema *arrow.Schema
	flat   *arrow.Schema // the columns read by seeking: schema, less seq's
	seq    *seqReader    // nil when the input has no repeated columns
	tsName string
	mem    memory.Allocator
	next   int64 // first row not read yet
}

// read returns the next n rows as one record.
func (r *rowReader) read(ctx context.Context, n int64) (arrow.RecordBatch, error) {
	flat, err := r.readFlat(ctx, n)
	if err != nil || r.seq == nil {
		return flat, err
	}
	defer flat.Release()
	nested, err := r.seq.read(ctx, r.name, n)
	if err != nil {
		return nil, err
	}
	defer nested.Release()
	return zipColumns(r.schema, flat, nested), nil
}

// readFlat returns the next n rows of the flat columns.
func (r *rowReader) readFlat(ctx context.Context, n int64) (arrow.RecordBatch, error) {
	md := r.in.pf.MetaData()
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
	src, err := newPQSourceRG(ctx, r.in, r.flat, r.tsName, false, r.mem, rgs)
	if err != nil {
		return nil, err
	}
	defer src.close()
	if skip := r.next - before; skip > 0 {
		if err := src.rr.SeekToRow(skip); err != nil {
			return nil, inputErr("reading input", r.name, fmt.Errorf("seeking to row %d: %w", r.next, err))
		}
	}
	var pieces []arrow.RecordBatch
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	for left := n; left > 0; {
		b, ok, err := src.next(ctx)
		if err != nil {
			return nil, inputErr("reading input", r.name, err)
		}
		if !ok {
			return nil, inputErr("reading input", r.name, errors.New("data pass ended before the rows the timestamp pass planned"))
		}
		take := min(left, b.rec.NumRows())
		pieces = append(pieces, b.rec.NewSlice(0, take))
		b.rec.Release()
		left -= take
	}
	r.next += n
	if len(pieces) == 1 {
		pieces[0].Retain()
		return pieces[0], nil
	}
	return concatRecords(r.flat, pieces, r.mem)
}

func concatRecords(schema *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, schema.NumFields())
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	parts := make([]arrow.Array, len(recs))
	for c := range cols {
		for i, r := range recs {
			parts[i] = r.Column(c)
		}
		a, err := array.Concatenate(parts, mem)
		if err != nil {
			for _, done := range cols[:c] {
				done.Release()
			}
			return nil, fmt.Errorf("concatenating column %q: %w", schema.Field(c).Name, err)
		}
		cols[c] = a
	}
	out := array.NewRecordBatch(schema, cols, rows)
	for _, c := range cols {
		c.Release()
	}
	return out, nil
}
