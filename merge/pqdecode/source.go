package pqdecode

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
)

// Source streams an input's rows column by column as input.Columns in the output's layout,
// batchRows rows at a time, never across a row group: each leaf column's values are read from
// its pages straight into the batch's field (leaves.go), with no rows assembled on the way.
// Byte-array values point into the pages they were read from, which are left to the garbage
// collector once read (as parquet-go's own row reader does), so a value held past its page keeps
// that page alive rather than being cloned; batches are never reused.
type Source struct {
	name      string
	f         *parquet.File
	layout    writer.ValueLayout
	first     []int // each field's first leaf; first[len(fields)] is the leaf count
	names     []string
	rg        int // next row group to open
	leaves    []leafReader
	left      int64 // rows of the open row group not yet read; leaves is nil when none is open
	batchRows int
	tsField   int
}

// NewSource opens in with parquet-go, reading ahead bufBytes per column. Its columns must lay out
// as layout (the output's: the caller checks the input has the output's Parquet schema); tsName
// is the timestamp column, a top-level INT64 leaf of microseconds.
func NewSource(in *input.File, layout writer.ValueLayout, tsName string, batchRows, bufBytes int64) (*Source, error) {
	size, err := in.Size()
	if err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(in.ReaderAt(), size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(int(bufBytes)))
	if err != nil {
		return nil, input.NewError("opening input with parquet-go", in.Path, err)
	}
	if err := sameLayout(f.Schema(), layout); err != nil {
		return nil, input.NewError("opening input with parquet-go", in.Path, err)
	}
	leaf, ok := f.Schema().Lookup(tsName)
	if !ok || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != parquet.Int64 || !layout.Flat[layout.LeafField[leaf.ColumnIndex]] {
		return nil, input.NewError("opening input with parquet-go", in.Path, fmt.Errorf("no top-level INT64 timestamp column %q", tsName))
	}
	s := &Source{name: in.Path, f: f, layout: layout, batchRows: int(max(batchRows, 1)), tsField: layout.LeafField[leaf.ColumnIndex]}
	for c, k := range layout.LeafField {
		if c == 0 || k != layout.LeafField[c-1] {
			s.first = append(s.first, c)
		}
	}
	s.first = append(s.first, len(layout.LeafField))
	for _, path := range f.Schema().Columns() {
		s.names = append(s.names, strings.Join(path, "."))
	}
	return s, nil
}

// sameLayout says how the top-level fields of schema differ from layout, or nil.
func sameLayout(schema *parquet.Schema, layout writer.ValueLayout) error {
	var l writer.ValueLayout
	for k, f := range schema.Fields() {
		l.Flat = append(l.Flat, f.Leaf() && !f.Repeated())
		for range leafCount(f) {
			l.LeafField = append(l.LeafField, k)
		}
	}
	if !slices.Equal(l.Flat, layout.Flat) || !slices.Equal(l.LeafField, layout.LeafField) {
		return fmt.Errorf("its columns (fields of leaves %v, flat %v) are not laid out as the output's (%v, %v)",
			l.LeafField, l.Flat, layout.LeafField, layout.Flat)
	}
	return nil
}

// leafCount is the number of leaf columns of n.
func leafCount(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	c := 0
	for _, f := range n.Fields() {
		c += leafCount(f)
	}
	return c
}

// Next returns the next batch: up to batchRows rows of the current row group and their
// timestamps.
func (s *Source) Next(ctx context.Context) (input.Batch, bool, error) {
	for {
		if err := ctx.Err(); err != nil {
			return input.Batch{}, false, err
		}
		if s.leaves == nil {
			if s.rg >= len(s.f.RowGroups()) {
				return input.Batch{}, false, nil
			}
			s.open(s.f.RowGroups()[s.rg])
			s.rg++
		}
		b, err := s.read()
		if err != nil {
			return input.Batch{}, false, fmt.Errorf("row group %d: %w", s.rg-1, err)
		}
		if len(b.TS) > 0 {
			return b, true, nil
		}
	}
}

// open starts reading row group g, column by column.
func (s *Source) open(g parquet.RowGroup) {
	chunks := g.ColumnChunks()
	s.leaves = make([]leafReader, len(chunks))
	for c, ch := range chunks {
		s.leaves[c] = newLeafReader(s.names[c], ch, !s.layout.Flat[s.layout.LeafField[c]])
	}
	s.left = g.NumRows()
}

// read reads a batch of the open row group, closing it at its end.
func (s *Source) read() (input.Batch, error) {
	n := int(min(int64(s.batchRows), s.left))
	cols := input.Columns{Fields: make([][]parquet.Value, len(s.layout.Flat)), Offs: make([][]int32, len(s.layout.Flat))}
	for k, flat := range s.layout.Flat {
		var err error
		if flat {
			cols.Fields[k] = make([]parquet.Value, n)
			err = s.leaves[s.first[k]].readFlat(cols.Fields[k])
		} else {
			cols.Fields[k], cols.Offs[k], err = s.readField(k, n)
		}
		if err != nil {
			return input.Batch{}, err
		}
	}
	if s.left -= int64(n); s.left == 0 {
		if err := s.Close(); err != nil {
			return input.Batch{}, err
		}
	}
	ts := make([]int64, n)
	for i, v := range cols.Fields[s.tsField] {
		if v.IsNull() {
			return input.Batch{}, fmt.Errorf("timestamp column has a null or missing value in row %d of the batch", i)
		}
		ts[i] = v.Int64()
	}
	return input.Batch{TS: ts, Cols: cols}, nil
}

// readField reads the next n rows of field k, which is not flat: its values and each row's
// offset in them (n+1 offsets). A field of several leaves (a map's keys and values) has each
// row's values of every leaf in turn, in leaf order.
func (s *Source) readField(k, n int) ([]parquet.Value, []int32, error) {
	leaves := s.leaves[s.first[k]:s.first[k+1]]
	if len(leaves) == 1 {
		return leaves[0].readRows(make([]parquet.Value, 0, n), make([]int32, 0, n+1), n)
	}
	total := 0
	for j := range leaves {
		var err error
		l := &leaves[j]
		if l.rows, l.offs, err = l.readRows(l.rows[:0], l.offs[:0], n); err != nil {
			return nil, nil, err
		}
		total += len(l.rows)
	}
	vals, offs := make([]parquet.Value, 0, total), make([]int32, 0, n+1)
	for i := range n {
		offs = append(offs, int32(len(vals)))
		for j := range leaves {
			l := &leaves[j]
			vals = append(vals, l.rows[l.offs[i]:l.offs[i+1]]...)
		}
	}
	return vals, append(offs, int32(len(vals))), nil
}

// Close closes the open row group's column readers.
func (s *Source) Close() error {
	var err error
	for i := range s.leaves {
		if cerr := s.leaves[i].close(); err == nil {
			err = cerr
		}
	}
	s.leaves = nil
	return err
}
