package writer

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer/pqgo"
)

// sink writes every path's outputs. It receives rows already in output
// order, cuts them into row groups of exactly RowGroupRows rows (so split
// points depend on the row sequence alone, not on how callers batch it: all
// merge paths produce the same files), and rolls to a new file once the
// current one reaches TargetFileBytes at a row-group boundary and the
// timestamp changes, so outputs stay pairwise time-disjoint, and before the
// first row at or past each density cut (WriterOptions.cutBefore). The splice
// path also hands it whole row groups to copy (copyRowGroup); a copied row
// group ends the re-encoded row group before it, which may then be short.
//
// It lays each file out itself: "PAR1", row groups copied byte for byte
// (from inputs, or from the one-row-group files the re-encoded rows were
// encoded into, one per top-level column), the page indexes, and a footer
// made from the row groups' own metadata with offsets rebased, serialized
// by arrow-go (metadata.FileMetaData). Encoding each column into a file of
// its own lets the columns of a row group be encoded in parallel
// (Options.EncodeWorkers) while the bytes of every chunk, and so the
// file, stay what a serial encode gives: a column's pages depend on its
// values and the writer properties only.
type Sink struct {
	fs      icebergio.WriteFileIO
	newPath func(int) string
	schema  *arrow.Schema
	opts    Options
	meta    MetaMode
	tmpl    *metadata.FileMetaData // an empty file's footer: schema, column orders, created_by
	tsIdx   int
	fields  []*arrow.Schema // one schema per top-level field, for its encoder
	pqgo    []*pqgo.Plan    // per top-level field: its parquet-go plan; nil: arrow-go encodes it
	encoder Encoder         // the options' encoder, resolved (Output.Encoder)
	// leafStart is, per top-level field, its first leaf column (and the leaf count at the end),
	// with parquet-go plans for every field: the leaves WriteValues hands each encoder.
	leafStart []int
	workers   int // goroutines encoding one chunk's columns and metadata

	cur     *splicedFile
	outputs []Output
	created []string // every path Create succeeded on, removed by abort

	rg      *pendingRowGroup // re-encoded rows not yet a row group
	spare   *pendingRowGroup // the last row group's, emptied: its buffers' capacity serves the next
	closing bool             // current file is full: close it at the next timestamp change
	cuts    []int64          // density cuts not yet passed (WriterOptions.cutBefore)
	runs    density.Cuts     // all of them, to tell a new file's run
	lastTs  int64            // last timestamp of the last row group appended
	prevTs  int64            // last timestamp written, to check the order
	wrote   bool

	copiedBytes int64 // bytes of input row groups copied (not re-encoded)
}

func (s *Sink) setCuts(c density.Cuts) { s.runs, s.cuts = c, slices.Clone(c.At) }

// GroupColumns are the columns the footer counts per value (index.Builder.GroupColumns), which
// CopyRowGroup takes decoded.
func (s *Sink) GroupColumns() []string { return newMetaBuilder(s.meta, s.schema).GroupColumns() }

// CopiedBytes is the bytes of input row groups copied so far (not re-encoded).
func (s *Sink) CopiedBytes() int64 { return s.copiedBytes }

// defaultEncodeWorkers is how many goroutines encode a chunk's columns and
// metadata when Options.EncodeWorkers is 0.
const defaultEncodeWorkers = 2

// pendingRowGroup holds the re-encoded rows of the next output row group:
// per top-level field a one-row-group Parquet file in memory.
type pendingRowGroup struct {
	cols []pendingColumn
	rows int64
}

type pendingColumn struct {
	buf bytes.Buffer
	enc columnEncoder
}

func NewSink(fs icebergio.WriteFileIO, newPath func(int) string, schema *arrow.Schema, opts Options, meta MetaMode) (*Sink, error) {
	idx := schema.FieldIndices(opts.TimestampColumn)
	if len(idx) == 0 {
		return nil, fmt.Errorf("schema has no timestamp column %q", opts.TimestampColumn)
	}
	if _, ok := schema.Field(idx[0]).Type.(*arrow.TimestampType); !ok {
		return nil, fmt.Errorf("timestamp column %q has type %s, accepted: timestamp", opts.TimestampColumn, schema.Field(idx[0]).Type)
	}
	tmpl := opts.template
	if tmpl == nil {
		var err error
		if tmpl, err = Template(schema, opts); err != nil {
			return nil, err
		}
	}
	s := &Sink{fs: fs, newPath: newPath, schema: schema, opts: opts, meta: meta, tmpl: tmpl, tsIdx: idx[0],
		workers: opts.EncodeWorkers}
	s.setCuts(opts.cutBefore)
	if s.workers <= 0 {
		// Two, as before this writer (the encoder and the search metadata
		// beside it). More, up to GOMAXPROCS, measured no faster on a shared
		// 2-core machine (docs/benchmarks.md, "k-way on (d)"); it is for a
		// measurement where cores are free to decide.
		s.workers = defaultEncodeWorkers
	}
	for _, f := range schema.Fields() {
		s.fields = append(s.fields, arrow.NewSchema([]arrow.Field{f}, nil))
	}
	if err := s.planEncoders(); err != nil {
		return nil, err
	}
	return s, nil
}

// Template returns the footer of an empty file written with schema and
// opts: the Parquet schema outputs have, which an input's row groups must
// match to be copied.
func Template(schema *arrow.Schema, opts Options) (*metadata.FileMetaData, error) {
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, writerProperties(opts), spliceArrowProps(opts))
	if err != nil {
		return nil, fmt.Errorf("preparing the footer: %w", err)
	}
	if err := fw.Close(); err != nil {
		return nil, fmt.Errorf("preparing the footer: %w", err)
	}
	return fw.FileMetadata()
}

// planEncoders plans the parquet-go encoding of each top-level column when it is the encoder;
// a column of a type it does not write stays arrow-go's.
func (s *Sink) planEncoders() error {
	s.pqgo = make([]*pqgo.Plan, len(s.fields))
	if s.encoder = s.opts.Encoder.resolve(); s.encoder != EncoderParquetGo {
		return nil
	}
	set := pqgo.Settings{PageBytes: PageBytes, DictionaryBytes: dictPageBytes, TimestampColumn: s.opts.TimestampColumn,
		RawColumn: cmp.Or(s.opts.Metadata.RawColumn, index.DefaultRawColumn), Compression: pqgoZstd{}}
	root := s.tmpl.Schema.Root()
	if root.NumFields() != len(s.fields) {
		return fmt.Errorf("the footer template has %d fields, the schema %d", root.NumFields(), len(s.fields))
	}
	for i, f := range s.schema.Fields() {
		p, err := pqgo.NewPlan(f, root.Field(i), set)
		if err != nil {
			return fmt.Errorf("planning the parquet-go encoder: %w", err)
		}
		s.pqgo[i] = p
	}
	s.leafStart = make([]int, 1, len(s.fields)+1)
	for _, p := range s.pqgo {
		if p == nil {
			s.leafStart = nil
			break
		}
		s.leafStart = append(s.leafStart, s.leafStart[len(s.leafStart)-1]+p.Leaves())
	}
	return nil
}

// newColumnEncoder starts the encoder of top-level column i for a row group, writing into buf.
func (s *Sink) newColumnEncoder(i int, buf *bytes.Buffer) (columnEncoder, error) {
	if p := s.pqgo[i]; p != nil {
		return p.NewColumn(buf), nil
	}
	return newArrowColumn(s.fields[i], buf, s.opts)
}

func spliceArrowProps(opts Options) pqarrow.ArrowWriterProperties {
	return pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(opts.Allocator), pqarrow.WithCoerceTimestamps(arrow.Microsecond))
}

// Write appends rec (conformed to the schema, sorted, and not earlier than
// any row written before) to the output.
func (s *Sink) Write(ctx context.Context, rec arrow.RecordBatch) error {
	return s.WriteParts(ctx, []arrow.RecordBatch{rec})
}

// WriteParts appends the rows of parts, in order, as Write would their concatenation: a sorted
// chunk's runs handed over as slices of the records they are in, so the rows are read where
// they lie instead of copied into one record first. Worth it only where the encoder's cost per
// array is small (TakesParts).
func (s *Sink) WriteParts(ctx context.Context, parts []arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rows := int64(0)
	for _, p := range parts {
		if ts := p.Column(s.tsIdx); ts.NullN() > 0 {
			return fmt.Errorf("timestamp column %q has %d null values", s.opts.TimestampColumn, ts.NullN())
		}
		rows += p.NumRows()
	}
	micros := make([]int64, 0, rows)
	for _, p := range parts {
		micros = input.AppendMicros(micros, p.Column(s.tsIdx))
	}
	return s.writeRows(micros, func(from, to int64) error { return s.encode(parts, from, to, micros[from:to]) })
}

// TakesParts says whether WriteParts pays: every column is encoded by parquet-go, whose cost
// per array is a bind, where arrow-go's is a record and a write call.
func (s *Sink) TakesParts() bool { return s.leafStart != nil }

// writeRows appends rows with timestamps micros (sorted, not earlier than any row written
// before), cutting them into row groups and files; encode writes rows [from, to) of them into
// the pending row group, which it may have to start.
func (s *Sink) writeRows(micros []int64, encode func(from, to int64) error) error {
	if err := s.checkOrder(micros); err != nil {
		return err
	}
	n := int64(len(micros))
	for off := int64(0); off < n; {
		if s.closing && micros[off] != s.lastTs {
			if err := s.closeFile(); err != nil {
				return err
			}
			continue
		}
		if err := s.passCuts(micros[off]); err != nil {
			return err
		}
		rgRows := int64(0)
		if s.rg != nil {
			rgRows = s.rg.rows
		}
		end := rowGroupCut(micros, off, s.opts.RowGroupRows-rgRows, s.closing, s.lastTs)
		if len(s.cuts) > 0 {
			end = off + int64(sort.Search(int(end-off), func(i int) bool { return micros[off+int64(i)] >= s.cuts[0] }))
		}
		if err := encode(off, end); err != nil {
			return err
		}
		off = end
		if s.rg.rows == s.opts.RowGroupRows {
			if err := s.endRowGroup(micros[off-1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOrder rejects rows earlier than the last one written. The merge
// orders rows by plans made from the inputs' sort order and page indexes; a
// file that lies about either must fail the rewrite, not produce an unsorted
// output.
func (s *Sink) checkOrder(micros []int64) error {
	for _, t := range micros {
		if s.wrote && t < s.prevTs {
			return fmt.Errorf("merge produced rows out of timestamp order (%d after %d): an input's rows disagree with its sort order or page index", t, s.prevTs)
		}
		s.prevTs, s.wrote = t, true
	}
	return nil
}

// rowGroupCut is where the rows of a write from off on stop going into the
// current row group: after room rows, and, while a full file is closing,
// at the first row past its last timestamp lastTs (the file ends there).
func rowGroupCut(micros []int64, off, room int64, closing bool, lastTs int64) int64 {
	end := off + min(int64(len(micros))-off, room)
	if closing {
		j := off
		for j < end && micros[j] == lastTs {
			j++
		}
		end = j
	}
	return end
}

// passCuts closes the current file before a row at ts when a density cut
// lies at or before ts: the rows before the cut stay in the file, this row
// starts the next one (later than all of them, so the files stay disjoint).
func (s *Sink) passCuts(ts int64) error {
	if len(s.cuts) == 0 || s.cuts[0] > ts {
		return nil
	}
	for len(s.cuts) > 0 && s.cuts[0] <= ts {
		s.cuts = s.cuts[1:]
	}
	if s.cur != nil && s.cur.rows > 0 {
		return s.closeFile()
	}
	return nil
}

// encode writes rows [from, to) of parts (counted across them) into the pending row group:
// each column into its own encoder, and the search metadata, on up to s.workers goroutines.
func (s *Sink) encode(parts []arrow.RecordBatch, from, to int64, micros []int64) error {
	if err := s.startRowGroup(micros[0]); err != nil {
		return err
	}
	var sub []arrow.RecordBatch // the rows [from, to) of parts, sliced where a part is cut
	for _, p := range parts {
		n := p.NumRows()
		if to <= 0 {
			break
		}
		switch {
		case from <= 0 && to >= n && n > 0:
			p.Retain()
			sub = append(sub, p)
		case from < n && n > 0:
			sub = append(sub, p.NewSlice(max(from, 0), min(to, n)))
		}
		from, to = from-n, to-n
	}
	defer func() {
		for _, p := range sub {
			p.Release()
		}
	}()
	// The encoders and the metadata builder only read the slices, but a slice computes its
	// null count lazily (a write): do it here, once.
	for _, p := range sub {
		for _, c := range p.Columns() {
			_ = c.NullN()
		}
	}
	f := s.cur
	tasks := make([]func() error, 0, len(s.fields)+1)
	tasks = append(tasks, func() error {
		at := 0
		for _, p := range sub {
			n := int(p.NumRows())
			f.meta.AddRows(p, micros[at:at+n])
			at += n
		}
		return nil
	})
	for i := range s.fields {
		tasks = append(tasks, func() error {
			cols := make([]arrow.Array, len(sub))
			for k, p := range sub {
				cols[k] = p.Column(i)
			}
			return s.rg.cols[i].enc.WriteArrays(cols)
		})
	}
	return s.runEncode(tasks, micros)
}

// runEncode runs the tasks that encode rows with timestamps micros into the pending row group,
// then counts them.
func (s *Sink) runEncode(tasks []func() error, micros []int64) error {
	f := s.cur
	if err := runParallel(s.workers, tasks); err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if f.rows == 0 {
		f.minTs = micros[0]
	}
	f.maxTs = micros[len(micros)-1]
	n := int64(len(micros))
	f.rows += n
	s.rg.rows += n
	return nil
}

// startRowGroup opens a file (its first row at ts) and starts a row group where none is open.
func (s *Sink) startRowGroup(ts int64) error {
	if s.cur == nil {
		if err := s.openFile(ts); err != nil {
			return err
		}
	}
	if s.rg == nil {
		rg := s.spare
		s.spare = nil
		if rg == nil {
			rg = &pendingRowGroup{cols: make([]pendingColumn, len(s.fields))}
		}
		for i := range s.fields {
			enc, err := s.newColumnEncoder(i, &rg.cols[i].buf)
			if err != nil {
				for _, c := range rg.cols[:i] {
					c.enc.Abort()
				}
				return fmt.Errorf("writing %s: starting row group: %w", s.cur.path, err)
			}
			rg.cols[i].enc = enc
		}
		s.rg = rg
	}
	return nil
}

// runParallel runs tasks on up to workers goroutines (the caller's among
// them) and returns the first error; a panic in a task (a dependency's bug
// on odd input) becomes an error instead of taking the process down.
func runParallel(workers int, tasks []func() error) error {
	errs := make([]error, len(tasks))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(tasks) {
				return
			}
			func() {
				defer func() {
					if r := recover(); r != nil {
						errs[i] = input.PanicError("encoding", r)
					}
				}()
				errs[i] = tasks[i]()
			}()
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < min(workers, len(tasks)); w++ {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	work()
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// endRowGroup finishes the pending row group (last timestamp lastTs) and
// copies its columns into the current file.
func (s *Sink) endRowGroup(lastTs int64) error {
	rg := s.rg
	if rg == nil {
		return nil
	}
	s.rg = nil
	srcs := make([]RowGroupSource, len(rg.cols))
	tasks := make([]func() error, len(rg.cols))
	for i := range rg.cols {
		tasks[i] = func() error {
			c := &rg.cols[i]
			md, err := c.enc.Finish()
			if err != nil {
				return err
			}
			if md.NumRowGroups() != 1 {
				return fmt.Errorf("an encoded row group came out as %d", md.NumRowGroups())
			}
			b := c.buf.Bytes()
			srcs[i] = RowGroupSource{Name: "encoded row group", Reader: bytes.NewReader(b), Size: int64(len(b)), Meta: md}
			return nil
		}
	}
	if err := runParallel(s.workers, tasks); err != nil {
		return fmt.Errorf("writing %s: encoding row group: %w", s.cur.path, err)
	}
	if err := s.cur.appendRowGroup(srcs, 0, nil, true); err != nil {
		return err
	}
	// appendRowGroup copied the chunks and read the page indexes into buffers of its own, so the
	// encoders' buffers are free: the next row group reuses them rather than growing new ones
	// (about a row group's compressed size of garbage each, which the collector paid for).
	for i := range rg.cols {
		rg.cols[i].buf.Reset()
		rg.cols[i].enc = nil
	}
	rg.rows = 0
	s.spare = rg
	s.cur.meta.EndRowGroup()
	s.rowGroupDone(lastTs)
	return nil
}

// rowGroupDone notes a row group appended to the current file ending at
// lastTs, and whether the file is now full.
func (s *Sink) rowGroupDone(lastTs int64) {
	s.lastTs = lastTs
	if s.opts.TargetFileBytes > 0 && s.cur.cw.N >= s.opts.TargetFileBytes {
		s.closing = true
	}
}
