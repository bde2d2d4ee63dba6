package merge

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// sink receives rows already in output order, cuts them into row groups of
// exactly RowGroupRows rows (so split points depend on the row sequence alone,
// not on how callers batch it: all merge paths produce the same files), and
// rolls to a new file once the current one reaches TargetFileBytes and the
// timestamp changes.
type sink struct {
	fs      icebergio.WriteFileIO
	newPath func(int) string
	schema  *arrow.Schema
	opts    WriterOptions
	meta    metaMode
	tsIdx   int
	tsUnit  arrow.TimeUnit

	cur     *outFile
	outputs []Output
	created []string // every path Create succeeded on, removed by abort

	pending     []arrow.RecordBatch // rows of the next row group, in order
	pendingRows int64
	closing     bool  // current file is full: close it at the next timestamp change
	lastTs      int64 // timestamp of the last row handed to the current file
	haveLast    bool
}

type outFile struct {
	path         string
	w            icebergio.FileWriter
	cw           *countingWriter
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
	tt, ok := schema.Field(idx[0]).Type.(*arrow.TimestampType)
	if !ok {
		return nil, fmt.Errorf("timestamp column %q has type %s, accepted: timestamp", opts.TimestampColumn, schema.Field(idx[0]).Type)
	}
	return &sink{fs: fs, newPath: newPath, schema: schema, opts: opts, meta: meta, tsIdx: idx[0], tsUnit: tt.Unit}, nil
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
	micros := appendMicros(nil, ts)
	n := int64(len(micros))
	for off := int64(0); off < n; {
		if s.closing {
			if micros[off] != s.lastTs {
				if err := s.closeFile(); err != nil {
					return err
				}
				continue
			}
			j, limit := off, off+s.opts.RowGroupRows-s.pendingRows
			for j < n && j < limit && micros[j] == s.lastTs {
				j++
			}
			s.push(rec, off, j)
			off = j
		} else {
			take := min(n-off, s.opts.RowGroupRows-s.pendingRows)
			s.push(rec, off, off+take)
			off += take
		}
		if err := s.flushFull(micros[off-1]); err != nil {
			return err
		}
	}
	return nil
}

func (s *sink) push(rec arrow.RecordBatch, from, to int64) {
	s.pending = append(s.pending, rec.NewSlice(from, to))
	s.pendingRows += to - from
}

// flushFull writes the pending rows if they make a whole row group; last is
// the timestamp of the last pending row.
func (s *sink) flushFull(last int64) error {
	if s.pendingRows < s.opts.RowGroupRows {
		return nil
	}
	if err := s.flushRowGroup(); err != nil {
		return err
	}
	s.lastTs = last
	if s.opts.TargetFileBytes > 0 && s.cur.cw.n >= s.opts.TargetFileBytes {
		s.closing = true
	}
	return nil
}

// flushRowGroup writes all pending rows as one row group of the current file,
// opening a file if none is open.
func (s *sink) flushRowGroup() error {
	if s.pendingRows == 0 {
		return nil
	}
	defer s.dropPending()
	if s.cur == nil {
		if err := s.openFile(); err != nil {
			return err
		}
	}
	f := s.cur
	if err := f.fw.NewRowGroupChecked(); err != nil {
		return fmt.Errorf("writing %s: starting row group: %w", f.path, err)
	}
	for c := 0; c < s.schema.NumFields(); c++ {
		parts := make([]arrow.Array, len(s.pending))
		for i, r := range s.pending {
			parts[i] = r.Column(c)
		}
		ch := arrow.NewChunked(s.schema.Field(c).Type, parts)
		err := f.fw.WriteColumnChunked(ch, 0, s.pendingRows)
		ch.Release()
		if err != nil {
			return fmt.Errorf("writing %s: column %q: %w", f.path, s.schema.Field(c).Name, err)
		}
	}
	for _, r := range s.pending {
		micros := appendMicros(nil, r.Column(s.tsIdx))
		if f.rows == 0 && len(micros) > 0 {
			f.minTs = micros[0]
		}
		if len(micros) > 0 {
			f.maxTs = micros[len(micros)-1]
		}
		f.rows += int64(len(micros))
		if f.meta != nil {
			f.meta.AddRows(r, micros)
		}
	}
	if f.meta != nil {
		f.meta.EndRowGroup()
	}
	return nil
}

func (s *sink) dropPending() {
	for _, r := range s.pending {
		r.Release()
	}
	s.pending = s.pending[:0]
	s.pendingRows = 0
}

func (s *sink) openFile() error {
	p := s.newPath(len(s.outputs))
	w, err := s.fs.Create(p)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	s.created = append(s.created, p)
	cw := &countingWriter{w: w}
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

// closeFile writes the pending rows and the footer of the current file.
func (s *sink) closeFile() error {
	if err := s.flushRowGroup(); err != nil {
		return err
	}
	s.closing = false
	f := s.cur
	if f == nil {
		return nil
	}
	s.cur = nil
	if err := f.fw.AppendKeyValueMetadata(FooterGenerationKey, fmt.Sprint(s.opts.Generation)); err != nil {
		return fmt.Errorf("writing %s: footer: %w", f.path, err)
	}
	if f.meta != nil {
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
		Path: f.path, Size: f.cw.n, Rows: f.rows,
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
	s.dropPending()
	var errs []error
	if s.cur != nil {
		_ = s.cur.fw.Close()
		_ = s.cur.w.Close()
		s.cur = nil
	}
	for _, p := range s.created {
		if err := s.fs.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("removing aborted output %s: %w", p, err))
		}
	}
	s.created = nil
	s.outputs = nil
	return errors.Join(errs...)
}
