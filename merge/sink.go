package merge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// sink receives rows already in output order, cuts them into row groups of
// exactly RowGroupRows rows (so split points depend on the row sequence alone,
// not on how callers batch it: all merge paths produce the same files), and
// rolls to a new file once the current one reaches TargetFileBytes and the
// timestamp changes. Rows are encoded into a buffered row group as they
// arrive, so the sink holds encoded pages, never a decoded row group.
type sink struct {
	fs      icebergio.WriteFileIO
	newPath func(int) string
	schema  *arrow.Schema
	opts    WriterOptions
	meta    metaMode
	tsIdx   int

	cur     *outFile
	outputs []Output
	created []string // every path Create succeeded on, removed by abort

	rgOpen  bool        // the current file has a row group that is not full
	rgRows  int64       // rows in that row group
	closing bool        // current file is full: close it at the next timestamp change
	cuts    []int64     // density cuts not yet passed (WriterOptions.cutBefore)
	runs    DensityCuts // all of them, to tell a new file's run
	lastTs  int64       // timestamp of the last row of the last full row group
	prevTs  int64       // timestamp of the last row written, to check the order
	wrote   bool
}

type outFile struct {
	path         string
	w            icebergio.FileWriter
	cw           *CountingWriter
	fw           *pqarrow.FileWriter
	meta         *metaBuilder
	rows         int64
	minTs, maxTs int64
	skipped      []string
}

func newSink(fs icebergio.WriteFileIO, newPath func(int) string, schema *arrow.Schema, opts WriterOptions, meta metaMode) (*sink, error) {
	idx := schema.FieldIndices(opts.TimestampColumn)
	if len(idx) == 0 {
		return nil, fmt.Errorf("schema has no timestamp column %q", opts.TimestampColumn)
	}
	if _, ok := schema.Field(idx[0]).Type.(*arrow.TimestampType); !ok {
		return nil, fmt.Errorf("timestamp column %q has type %s, accepted: timestamp", opts.TimestampColumn, schema.Field(idx[0]).Type)
	}
	s := &sink{fs: fs, newPath: newPath, schema: schema, opts: opts, meta: meta, tsIdx: idx[0]}
	s.setCuts(opts.cutBefore)
	return s, nil
}

func (s *sink) setCuts(c DensityCuts) { s.runs, s.cuts = c, slices.Clone(c.At) }

// pathFor names output i, whose first row is at ts: a file that starts in
// a sparse run joins the late stream when the caller names late files.
func pathFor(i int, ts int64, runs DensityCuts, newPath, latePath func(int) string) string {
	if latePath != nil && runs.SparseAt(ts) {
		return latePath(i)
	}
	return newPath(i)
}

// write appends rec (conformed to the schema, sorted, and not earlier than any
// row written before) to the output.
func (s *sink) write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ts := rec.Column(s.tsIdx)
	if ts.NullN() > 0 {
		return fmt.Errorf("timestamp column %q has %d null values", s.opts.TimestampColumn, ts.NullN())
	}
	micros := appendMicros(make([]int64, 0, ts.Len()), ts)
	// The merge orders rows by plans made from the inputs' sort order and
	// page indexes; a file that lies about either must fail the rewrite,
	// not produce an unsorted output.
	for _, t := range micros {
		if s.wrote && t < s.prevTs {
			return fmt.Errorf("merge produced rows out of timestamp order (%d after %d): an input's rows disagree with its sort order or page index", t, s.prevTs)
		}
		s.prevTs, s.wrote = t, true
	}
	n := int64(len(micros))
	for off := int64(0); off < n; {
		if s.closing && micros[off] != s.lastTs {
			if err := s.closeFile(); err != nil {
				return err
			}
			continue
		}
		if len(s.cuts) > 0 && s.cuts[0] <= micros[off] {
			// A density cut: rows before it stay in the current file, this
			// row starts the next one (it is later than all of them, so the
			// files stay disjoint).
			for len(s.cuts) > 0 && s.cuts[0] <= micros[off] {
				s.cuts = s.cuts[1:]
			}
			if s.cur != nil && s.cur.rows > 0 {
				if err := s.closeFile(); err != nil {
					return err
				}
			}
		}
		end := rowGroupCut(micros, off, s.opts.RowGroupRows-s.rgRows, s.closing, s.lastTs)
		if len(s.cuts) > 0 {
			end = off + int64(sort.Search(int(end-off), func(i int) bool { return micros[off+int64(i)] >= s.cuts[0] }))
		}
		if err := s.append(rec, off, end, micros[off:end]); err != nil {
			return err
		}
		off = end
		if s.rgRows == s.opts.RowGroupRows {
			s.cur.meta.EndRowGroup()
			s.rgOpen, s.rgRows = false, 0
			s.lastTs = micros[off-1]
			if s.opts.TargetFileBytes > 0 && s.cur.fw.TotalCompressedBytes() >= s.opts.TargetFileBytes {
				s.closing = true
			}
		}
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

// append encodes rows [from, to) of rec into the current row group.
func (s *sink) append(rec arrow.RecordBatch, from, to int64, micros []int64) error {
	if s.cur == nil {
		if err := s.openFile(micros[0]); err != nil {
			return err
		}
	}
	f := s.cur
	if !s.rgOpen {
		if err := f.fw.NewBufferedRowGroupChecked(); err != nil {
			return fmt.Errorf("writing %s: starting row group: %w", f.path, err)
		}
		s.rgOpen, s.rgRows = true, 0
	}
	part := rec.NewSlice(from, to)
	defer part.Release()
	// The search metadata is built beside the encoder: both only read part.
	// A slice computes its null count lazily (a write); do it here, once.
	for _, c := range part.Columns() {
		_ = c.NullN()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	var metaPanic any
	go func() {
		defer wg.Done()
		defer func() { metaPanic = recover() }()
		f.meta.AddRows(part, micros)
	}()
	err := f.fw.WriteBuffered(part)
	wg.Wait()
	if metaPanic != nil {
		return fmt.Errorf("writing %s: building search metadata: %v", f.path, metaPanic)
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.path, err)
	}
	if f.rows == 0 {
		f.minTs = micros[0]
	}
	f.maxTs = micros[len(micros)-1]
	f.rows += to - from
	s.rgRows += to - from
	return nil
}

func (s *sink) openFile(firstTs int64) error {
	p := pathFor(len(s.outputs), firstTs, s.runs, s.newPath, s.opts.LatePath)
	w, err := s.fs.Create(p)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	s.created = append(s.created, p)
	cw := &CountingWriter{W: w}
	aprops := pqarrow.NewArrowWriterProperties(
		pqarrow.WithAllocator(s.opts.Allocator),
		pqarrow.WithCoerceTimestamps(arrow.Microsecond),
	)
	fw, err := pqarrow.NewFileWriter(s.schema, cw, writerProperties(s.opts), aprops)
	if err != nil {
		_ = w.Close()
		return fmt.Errorf("starting Parquet writer for %s: %w", p, err)
	}
	s.cur = &outFile{path: p, w: w, cw: cw, fw: fw, meta: newMetaBuilder(s.meta, s.schema)}
	return nil
}

// closeFile writes the last row group and the footer of the current file.
func (s *sink) closeFile() error {
	s.closing = false
	f := s.cur
	if f == nil {
		return nil
	}
	if s.rgOpen {
		f.meta.EndRowGroup()
		s.rgOpen = false
	}
	s.rgRows = 0 // a density cut closes a file inside a row group
	s.cur = nil
	if err := f.fw.AppendKeyValueMetadata(FooterGenerationKey, fmt.Sprint(s.opts.Generation)); err != nil {
		return fmt.Errorf("writing %s: footer: %w", f.path, err)
	}
	{
		kv, skipped, err := f.meta.Finish()
		f.skipped = skipped
		if err != nil {
			return fmt.Errorf("writing %s: search metadata: %w", f.path, err)
		}
		for _, e := range kv {
			if err := f.fw.AppendKeyValueMetadata(e.Key, e.Value); err != nil {
				return fmt.Errorf("writing %s: footer key %s: %w", f.path, e.Key, err)
			}
		}
	}
	if err := f.fw.Close(); err != nil {
		_ = f.w.Close()
		return fmt.Errorf("writing %s: closing Parquet writer: %w", f.path, err)
	}
	if err := f.w.Close(); err != nil {
		return fmt.Errorf("writing %s: closing file: %w", f.path, err)
	}
	md, err := f.fw.FileMetadata()
	if err != nil {
		return fmt.Errorf("writing %s: reading back footer: %w", f.path, err)
	}
	s.outputs = append(s.outputs, Output{
		Path: f.path, Size: f.cw.N, Rows: f.rows,
		MinTimestamp: f.minTs, MaxTimestamp: f.maxTs,
		Generation: s.opts.Generation, Meta: md, SkippedIndexes: f.skipped,
	})
	return nil
}

// finish closes the last file and returns the outputs; on error it aborts.
func (s *sink) finish() ([]Output, error) {
	if err := s.closeFile(); err != nil {
		s.abort()
		return nil, err
	}
	return s.outputs, nil
}

// abort closes and removes every file this sink created. It is best effort:
// a file it cannot remove is left for orphan collection, and is never
// returned to the caller, so it is never committed.
func (s *sink) abort() error {
	var errs []error
	if s.cur != nil {
		_ = s.cur.fw.Close()
		_ = s.cur.w.Close()
		s.cur = nil
	}
	s.rgOpen, s.closing = false, false
	for _, p := range s.created {
		if err := s.fs.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("removing aborted output %s: %w", p, err))
		}
	}
	s.created = nil
	s.outputs = nil
	return errors.Join(errs...)
}
