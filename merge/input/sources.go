package input

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"
)

// PQSource streams an input's rows (or only its timestamps) in batches,
// conformed to the output schema.
type PQSource struct {
	in     *File
	rr     pqarrow.RecordReader
	schema *arrow.Schema // conform target; nil for timestamp-only
	tsName string
	tsIdx  int // in the record the reader returns
	mem    memory.Allocator
}

// NewPQSource reads the columns of in that schema names (all of them when
// tsOnly is false, just the timestamp column otherwise).
func NewPQSource(ctx context.Context, in *File, schema *arrow.Schema, tsName string, tsOnly bool, mem memory.Allocator) (*PQSource, error) {
	return NewPQSourceRG(ctx, in, schema, tsName, tsOnly, mem, nil)
}

// NewPQSourceRG is NewPQSource over the row groups rgs only (nil = all).
func NewPQSourceRG(ctx context.Context, in *File, schema *arrow.Schema, tsName string, tsOnly bool, mem memory.Allocator, rgs []int) (*PQSource, error) {
	fsc, err := in.Arrow.Schema()
	if err != nil {
		return nil, NewError("reading schema of input", in.Path, err)
	}
	tsIdx := fsc.FieldIndices(tsName)
	if len(tsIdx) == 0 {
		return nil, NewError("reading schema of input", in.Path, fmt.Errorf("no timestamp column %q", tsName))
	}
	var cols []int
	if tsOnly {
		cols = LeafIndices(in, tsName)
	} else {
		for _, f := range schema.Fields() {
			if idx := fsc.FieldIndices(f.Name); len(idx) > 0 {
				cols = append(cols, LeafIndices(in, f.Name)...)
			}
		}
	}
	rr, err := in.Arrow.GetRecordReader(ctx, cols, rgs)
	if err != nil {
		return nil, NewError("reading input", in.Path, err)
	}
	s := &PQSource{in: in, rr: rr, tsName: tsName, mem: mem}
	if !tsOnly {
		s.schema = schema
	}
	s.tsIdx = rr.Schema().FieldIndices(tsName)[0]
	return s, nil
}

// LeafIndices returns the Parquet leaf column indices of a top-level column:
// one for a primitive column, every leaf below it for a nested one (a map's
// keys and values, a list's elements).
func LeafIndices(in *File, name string) []int {
	sc := in.Parquet.MetaData().Schema
	var out []int
	for i := 0; i < sc.NumColumns(); i++ {
		if p := sc.Column(i).ColumnPath(); len(p) > 0 && p[0] == name {
			out = append(out, i)
		}
	}
	return out
}

// SeekToRow moves the reader to row (of the row groups it reads).
func (s *PQSource) SeekToRow(row int64) error { return s.rr.SeekToRow(row) }

func (s *PQSource) Next(ctx context.Context) (Batch, bool, error) {
	if !s.rr.Next() {
		if err := s.rr.Err(); err != nil {
			return Batch{}, false, err
		}
		return Batch{}, false, nil
	}
	rec := s.rr.RecordBatch()
	ts := rec.Column(s.tsIdx)
	if _, ok := ts.DataType().(*arrow.TimestampType); !ok {
		return Batch{}, false, fmt.Errorf("timestamp column %q has type %s, accepted: timestamp", s.tsName, ts.DataType())
	}
	if ts.NullN() > 0 {
		return Batch{}, false, fmt.Errorf("timestamp column %q has null values", s.tsName)
	}
	micros := AppendMicros(make([]int64, 0, ts.Len()), ts)
	if s.schema == nil {
		return Batch{TS: micros}, true, nil
	}
	c, err := Conform(rec, s.schema, s.mem)
	if err != nil {
		return Batch{}, false, err
	}
	return Batch{Rec: c, TS: micros}, true, nil
}

func (s *PQSource) Close() error {
	s.rr.Release()
	return nil
}

// MemSource replays batches already in memory.
type MemSource struct {
	Batches []Batch
}

func (s *MemSource) Next(context.Context) (Batch, bool, error) {
	if len(s.Batches) == 0 {
		return Batch{}, false, nil
	}
	b := s.Batches[0]
	s.Batches = s.Batches[1:]
	return b, true, nil
}

func (s *MemSource) Close() error {
	for _, b := range s.Batches {
		if b.Rec != nil {
			b.Rec.Release()
		}
	}
	s.Batches = nil
	return nil
}

// batch is one decoded piece of an input: its rows (nil for a
// timestamp-only source) and their timestamps in microseconds.
type Batch struct {
	Rec arrow.RecordBatch
	TS  []int64
	// Cols are the rows decoded by parquet-go instead of Rec (merge/pqdecode), column by
	// column. Their values are never reused, so a run of them may be held past the batch.
	Cols Columns
}

// Columns are rows as parquet-go values laid out by top-level field, as the encoders and the
// metadata builder read them (writer.ValueChunk): Fields[k] holds field k's values of every row
// in row order (each row's values of the field's leaves, in leaf order, with the levels of the
// output's Parquet schema); row i's are Fields[k][Offs[k][i]:Offs[k][i+1]], or Fields[k][i] for
// a flat field (one leaf, not repeated), whose Offs[k] is nil.
type Columns struct {
	Fields [][]parquet.Value
	Offs   [][]int32
}

// Field is field k's values of rows [from, to).
func (c *Columns) Field(k int, from, to int64) []parquet.Value {
	if o := c.Offs[k]; o != nil {
		return c.Fields[k][o[from]:o[to]]
	}
	return c.Fields[k][from:to]
}

// source yields an input's rows in file order. next returns ok=false at the
// end. The caller owns (and releases) the returned record.
type Source interface {
	Next(ctx context.Context) (b Batch, ok bool, err error)
	Close() error
}

// AppendMicros appends the values of a timestamp array as microseconds.
func AppendMicros(dst []int64, col arrow.Array) []int64 {
	a := col.(*array.Timestamp)
	unit := col.DataType().(*arrow.TimestampType).Unit
	vals := a.TimestampValues()
	for _, v := range vals {
		dst = append(dst, ToMicros(int64(v), unit))
	}
	return dst
}

func ToMicros(v int64, unit arrow.TimeUnit) int64 {
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
