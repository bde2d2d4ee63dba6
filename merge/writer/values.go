package writer

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"

	"github.com/siglake/siglake/merge/input"
)

// ValueChunk is rows in output order as parquet-go values rather than an Arrow record (the k-way
// merge that decodes with parquet-go, merge/pqdecode), laid out by top-level field as the
// encoders and the metadata builder read them (input.Columns).
type ValueChunk struct {
	TS []int64 // each row's timestamp in microseconds
	input.Columns
}

// ValueLayout is how rows map to a sink's top-level fields: per leaf column its field, per field
// whether it is flat.
type ValueLayout struct {
	LeafField []int
	Flat      []bool
}

// NewValueChunk returns an empty chunk of layout l with room for rows rows.
func NewValueChunk(l ValueLayout, rows int) *ValueChunk {
	vc := &ValueChunk{TS: make([]int64, 0, rows), Columns: input.Columns{Fields: make([][]parquet.Value, len(l.Flat)), Offs: make([][]int32, len(l.Flat))}}
	for k, flat := range l.Flat {
		vc.Fields[k] = make([]parquet.Value, 0, rows)
		if !flat {
			vc.Offs[k] = make([]int32, 1, rows+1)
		}
	}
	return vc
}

// Rows is how many rows the chunk holds.
func (vc *ValueChunk) Rows() int { return len(vc.TS) }

// AppendRun appends rows [from, to) of src, whose timestamps are ts, field by field: a copy of
// each field's values (not of their bytes) and, for a field that is not flat, its row offsets
// moved to where the values land. src must have the chunk's layout.
func (vc *ValueChunk) AppendRun(src *input.Columns, ts []int64, from, to int) {
	for k, vals := range src.Fields {
		o := src.Offs[k]
		switch {
		case o == nil && to == from+1:
			// Most runs of inputs that overlap throughout are one row long: a store, not a copy.
			vc.Fields[k] = append(vc.Fields[k], vals[from])
			continue
		case o == nil:
			vc.Fields[k] = append(vc.Fields[k], vals[from:to]...)
			continue
		}
		shift := int32(len(vc.Fields[k])) - o[from]
		vc.Fields[k] = append(vc.Fields[k], vals[o[from]:o[to]]...)
		for _, off := range o[from+1 : to+1] {
			vc.Offs[k] = append(vc.Offs[k], off+shift)
		}
	}
	vc.TS = append(vc.TS, ts[from:to]...)
}

// ValueLayout is the layout of the ValueChunks the sink takes; CanWriteValues must have said yes.
func (s *Sink) ValueLayout() ValueLayout {
	l := ValueLayout{Flat: make([]bool, len(s.fields))}
	for k, p := range s.pqgo {
		l.Flat[k] = p.Flat()
		for range p.Leaves() {
			l.LeafField = append(l.LeafField, k)
		}
	}
	return l
}

// CanWriteValues says why the sink cannot take ValueChunks, or nil: it must encode every column
// with parquet-go (Options.Encoder), whose values they are, and its search metadata must read
// only flat string columns, as the Arrow rows' builder would render them.
func (s *Sink) CanWriteValues() error {
	for i, p := range s.pqgo {
		if p == nil {
			return fmt.Errorf("column %q is not encoded by parquet-go", s.schema.Field(i).Name)
		}
	}
	if s.meta.wholeFile {
		return fmt.Errorf("whole-file search metadata needs Arrow rows")
	}
	for _, name := range newMetaBuilder(s.meta, s.schema).GroupColumns() {
		f, _ := s.schema.FieldsByName(name)
		if id := f[0].Type.ID(); id != arrow.STRING && id != arrow.LARGE_STRING {
			return fmt.Errorf("group column %q has type %s, not a string", name, f[0].Type)
		}
	}
	return nil
}

// WriteValues is Write for rows as parquet-go values; CanWriteValues must have said yes.
func (s *Sink) WriteValues(ctx context.Context, vc *ValueChunk) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.writeRows(vc.TS, func(from, to int64) error { return s.encodeValues(vc, from, to) })
}

// encodeValues is encode for rows [from, to) of vc.
func (s *Sink) encodeValues(vc *ValueChunk, from, to int64) error {
	micros := vc.TS[from:to]
	if err := s.startRowGroup(micros[0]); err != nil {
		return err
	}
	f := s.cur
	tasks := make([]func() error, 0, len(s.fields)+1)
	tasks = append(tasks, func() error {
		f.meta.AddTextRows(micros, func(k, i int) ([]byte, bool) {
			if vc.Offs[k] != nil {
				return nil, false // group and raw columns are flat strings (CanWriteValues)
			}
			v := vc.Fields[k][from+int64(i)]
			if v.IsNull() {
				return nil, false
			}
			return v.ByteArray(), true
		})
		return nil
	})
	for k := range s.fields {
		tasks = append(tasks, func() error {
			c, ok := s.rg.cols[k].enc.(interface {
				WriteValues([]parquet.Value, int) error
			})
			if !ok {
				return fmt.Errorf("column %q: its encoder does not take parquet-go values", s.schema.Field(k).Name)
			}
			return c.WriteValues(vc.Field(k, from, to), s.leafStart[k])
		})
	}
	return s.runEncode(tasks, micros)
}
