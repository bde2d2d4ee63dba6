package writer

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/parquet-go/parquet-go"
)

// ValueChunk is rows in output order as parquet-go values rather than an Arrow record (the k-way
// merge that decodes with parquet-go, merge/pqdecode): each row holds the values of every leaf
// column of the output's Parquet schema, in leaf order, with the levels that schema gives them.
type ValueChunk struct {
	Rows []parquet.Row
	TS   []int64 // each row's timestamp in microseconds
}

// CanWriteValues says why the sink cannot take ValueChunks, or nil: it must encode every column
// with parquet-go (Options.Encoder), whose values they are, and its search metadata must read
// only string columns, as the Arrow rows' builder would render them.
func (s *Sink) CanWriteValues() error {
	for i, p := range s.pqgo {
		if p == nil {
			return fmt.Errorf("column %q is not encoded by parquet-go", s.schema.Field(i).Name)
		}
	}
	b := newMetaBuilder(s.meta, s.schema)
	if s.meta.wholeFile {
		return fmt.Errorf("whole-file search metadata needs Arrow rows")
	}
	for _, name := range b.GroupColumns() {
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
	if len(vc.Rows) != len(vc.TS) {
		return fmt.Errorf("a value chunk of %d rows carries %d timestamps", len(vc.Rows), len(vc.TS))
	}
	return s.writeRows(vc.TS, func(from, to int64) error { return s.encodeValues(vc, from, to) })
}

// encodeValues is encode for rows [from, to) of vc.
func (s *Sink) encodeValues(vc *ValueChunk, from, to int64) error {
	micros := vc.TS[from:to]
	if err := s.startRowGroup(micros[0]); err != nil {
		return err
	}
	rows := vc.Rows[from:to]
	nf := len(s.fields)
	offs, err := s.fieldOffsets(rows)
	if err != nil {
		return fmt.Errorf("writing %s: %w", s.cur.path, err)
	}
	field := func(k, i int) []parquet.Value { return rows[i][offs[i*(nf+1)+k]:offs[i*(nf+1)+k+1]] }
	f := s.cur
	tasks := make([]func() error, 0, nf+1)
	tasks = append(tasks, func() error {
		f.meta.AddTextRows(micros, func(k, i int) ([]byte, bool) {
			v := field(k, i)
			if len(v) == 0 || v[0].IsNull() {
				return nil, false
			}
			return v[0].ByteArray(), true
		})
		return nil
	})
	for k := range s.fields {
		tasks = append(tasks, func() error {
			c, ok := s.rg.cols[k].enc.(interface {
				WriteValues(int, func(int) []parquet.Value, int) error
			})
			if !ok {
				return fmt.Errorf("column %q: its encoder does not take parquet-go values", s.schema.Field(k).Name)
			}
			return c.WriteValues(len(rows), func(i int) []parquet.Value { return field(k, i) }, s.leafStart[k])
		})
	}
	return s.runEncode(tasks, micros)
}

// fieldOffsets returns, per row, where each top-level field's values start in it (and where
// the row ends): entry i*(fields+1)+k. A row without a value for every leaf is refused.
func (s *Sink) fieldOffsets(rows []parquet.Row) ([]int32, error) {
	nf := len(s.fields)
	offs := make([]int32, len(rows)*(nf+1))
	for i, r := range rows {
		o := offs[i*(nf+1) : (i+1)*(nf+1)]
		j := 0
		for k := 0; k < nf; k++ {
			o[k] = int32(j)
			for j < len(r) && r[j].Column() < s.leafStart[k+1] {
				j++
			}
			if j == int(o[k]) {
				return nil, fmt.Errorf("a row without values for column %q", s.schema.Field(k).Name)
			}
		}
		if j != len(r) {
			return nil, fmt.Errorf("a row with values past the schema's %d leaves", s.leafStart[nf])
		}
		o[nf] = int32(j)
	}
	return offs, nil
}
