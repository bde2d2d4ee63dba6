package input

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// The page-bounded data pass re-opens each input per chunk and seeks to the chunk's first row.
// arrow-go (v18.8) cannot seek into the middle of a page of a repeated column (a list's or a
// map's leaves): its column reader decodes the whole page's repetition levels while skipping
// but only the skipped rows' definition levels, so the next read fails with "number of decoded
// rep/def levels did not match". Columns with repeated leaves are therefore read by a reader
// that stays open and only moves forward (the data pass reads each input's rows in order); the
// flat columns keep the seek, which holds no reader between chunks.

// SeqReader reads the nested columns of one input forward, n rows at a time.
type SeqReader struct {
	src     *PQSource
	schema  *arrow.Schema     // the timestamp plus the nested columns
	pending arrow.RecordBatch // rows read from src but not returned yet
}

// SplitNested returns the columns of schema that in stores with repeated leaves, and schema
// without them. nested is nil when there are none.
func SplitNested(in *File, schema *arrow.Schema, tsName string) (nested, flat *arrow.Schema) {
	sc := in.Parquet.MetaData().Schema
	repeated := map[string]bool{}
	for i := 0; i < sc.NumColumns(); i++ {
		if c := sc.Column(i); c.MaxRepetitionLevel() > 0 {
			repeated[c.ColumnPath()[0]] = true
		}
	}
	if len(repeated) == 0 {
		return nil, schema
	}
	var nf, ff []arrow.Field
	for _, f := range schema.Fields() {
		switch {
		case f.Name == tsName:
			nf, ff = append(nf, f), append(ff, f)
		case repeated[f.Name]:
			nf = append(nf, f)
		default:
			ff = append(ff, f)
		}
	}
	if len(nf) == 1 { // the input's repeated columns are not in the output schema
		return nil, schema
	}
	md := schema.Metadata()
	return arrow.NewSchema(nf, &md), arrow.NewSchema(ff, &md)
}

func NewSeqReader(ctx context.Context, in *File, nested *arrow.Schema, tsName string, mem memory.Allocator) (*SeqReader, error) {
	src, err := NewPQSource(ctx, in, nested, tsName, false, mem)
	if err != nil {
		return nil, err
	}
	return &SeqReader{src: src, schema: nested}, nil
}

// read returns the next n rows.
func (s *SeqReader) Read(ctx context.Context, name string, n int64) (arrow.RecordBatch, error) {
	var pieces []arrow.RecordBatch
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	for left := n; left > 0; {
		if s.pending == nil {
			b, ok, err := s.src.Next(ctx)
			if err != nil {
				return nil, NewError("reading input", name, err)
			}
			if !ok {
				return nil, NewError("reading input", name, errors.New("data pass ended before the rows the timestamp pass planned"))
			}
			s.pending = b.Rec
		}
		take := min(left, s.pending.NumRows())
		pieces = append(pieces, s.pending.NewSlice(0, take))
		if take == s.pending.NumRows() {
			s.pending.Release()
			s.pending = nil
		} else {
			rest := s.pending.NewSlice(take, s.pending.NumRows())
			s.pending.Release()
			s.pending = rest
		}
		left -= take
	}
	if len(pieces) == 1 {
		pieces[0].Retain()
		return pieces[0], nil
	}
	return ConcatRecords(s.schema, pieces, s.src.mem)
}

func (s *SeqReader) Close() {
	if s.pending != nil {
		s.pending.Release()
		s.pending = nil
	}
	_ = s.src.Close()
}

// ZipColumns builds a record of schema from flat and nested, which hold its columns between
// them (the timestamp is in both; flat's is used).
func ZipColumns(schema *arrow.Schema, flat, nested arrow.RecordBatch) arrow.RecordBatch {
	cols := make([]arrow.Array, schema.NumFields())
	for i, f := range schema.Fields() {
		if idx := flat.Schema().FieldIndices(f.Name); len(idx) > 0 {
			cols[i] = flat.Column(idx[0])
		} else {
			cols[i] = nested.Column(nested.Schema().FieldIndices(f.Name)[0])
		}
	}
	return array.NewRecordBatch(schema, cols, flat.NumRows())
}

// ConcatRecords concatenates recs (of schema) into one record.
func ConcatRecords(schema *arrow.Schema, recs []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
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
