package merge

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// pqSource streams an input's rows (or only its timestamps) in batches,
// conformed to the output schema.
type pqSource struct {
	in     *openedInput
	rr     pqarrow.RecordReader
	schema *arrow.Schema // conform target; nil for timestamp-only
	tsName string
	tsIdx  int // in the record the reader returns
	mem    memory.Allocator
}

// newPQSource reads the columns of in that schema names (all of them when
// tsOnly is false, just the timestamp column otherwise).
func newPQSource(ctx context.Context, in *openedInput, schema *arrow.Schema, tsName string, tsOnly bool, mem memory.Allocator) (*pqSource, error) {
	return newPQSourceRG(ctx, in, schema, tsName, tsOnly, mem, nil)
}

// newPQSourceRG is newPQSource over the row groups rgs only (nil = all).
func newPQSourceRG(ctx context.Context, in *openedInput, schema *arrow.Schema, tsName string, tsOnly bool, mem memory.Allocator, rgs []int) (*pqSource, error) {
	fsc, err := in.fr.Schema()
	if err != nil {
		return nil, inputErr("reading schema of input", in.path, err)
	}
	tsIdx := fsc.FieldIndices(tsName)
	if len(tsIdx) == 0 {
		return nil, inputErr("reading schema of input", in.path, fmt.Errorf("no timestamp column %q", tsName))
	}
	var cols []int
	if tsOnly {
		cols = leafIndices(in, tsName)
	} else {
		for _, f := range schema.Fields() {
			if idx := fsc.FieldIndices(f.Name); len(idx) > 0 {
				cols = append(cols, leafIndices(in, f.Name)...)
			}
		}
	}
	rr, err := in.fr.GetRecordReader(ctx, cols, rgs)
	if err != nil {
		return nil, inputErr("reading input", in.path, err)
	}
	s := &pqSource{in: in, rr: rr, tsName: tsName, mem: mem}
	if !tsOnly {
		s.schema = schema
	}
	s.tsIdx = rr.Schema().FieldIndices(tsName)[0]
	return s, nil
}

// leafIndices returns the Parquet leaf column indices of a top-level column:
// one for a primitive column, every leaf below it for a nested one (a map's
// keys and values, a list's elements).
func leafIndices(in *openedInput, name string) []int {
	sc := in.pf.MetaData().Schema
	var out []int
	for i := 0; i < sc.NumColumns(); i++ {
		if p := sc.Column(i).ColumnPath(); len(p) > 0 && p[0] == name {
			out = append(out, i)
		}
	}
	return out
}

func (s *pqSource) next(ctx context.Context) (batch, bool, error) {
	if !s.rr.Next() {
		if err := s.rr.Err(); err != nil {
			return batch{}, false, err
		}
		return batch{}, false, nil
	}
	rec := s.rr.RecordBatch()
	ts := rec.Column(s.tsIdx)
	if _, ok := ts.DataType().(*arrow.TimestampType); !ok {
		return batch{}, false, fmt.Errorf("timestamp column %q has type %s, accepted: timestamp", s.tsName, ts.DataType())
	}
	if ts.NullN() > 0 {
		return batch{}, false, fmt.Errorf("timestamp column %q has null values", s.tsName)
	}
	micros := appendMicros(make([]int64, 0, ts.Len()), ts)
	if s.schema == nil {
		return batch{ts: micros}, true, nil
	}
	c, err := Conform(rec, s.schema, s.mem)
	if err != nil {
		return batch{}, false, err
	}
	return batch{rec: c, ts: micros}, true, nil
}

func (s *pqSource) close() error {
	s.rr.Release()
	return nil
}

// memSource replays batches already in memory.
type memSource struct {
	batches []batch
}

func (s *memSource) next(context.Context) (batch, bool, error) {
	if len(s.batches) == 0 {
		return batch{}, false, nil
	}
	b := s.batches[0]
	s.batches = s.batches[1:]
	return b, true, nil
}

func (s *memSource) close() error {
	for _, b := range s.batches {
		if b.rec != nil {
			b.rec.Release()
		}
	}
	s.batches = nil
	return nil
}
