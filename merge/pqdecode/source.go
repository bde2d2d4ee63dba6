package pqdecode

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/siglake/siglake/merge/input"
)

// Source streams an input's rows as parquet-go rows, batchRows at a time, never across a row
// group. Byte-array values point into the pages they were read from, which parquet-go leaves
// to the garbage collector once read (rowGroupRows detaches them), so a row held past its page
// keeps that page alive rather than being cloned; rows are never reused.
type Source struct {
	name      string
	f         *parquet.File
	rg        int // next row group to open
	rows      parquet.Rows
	batchRows int
	width     int // leaf columns: the values of a row without lists or maps
	tsLeaf    int
}

// NewSource opens in with parquet-go, reading ahead bufBytes per column. tsName is the
// timestamp column, a top-level INT64 leaf of microseconds (the output schema's; the caller
// checks the input has that schema).
func NewSource(in *input.File, tsName string, batchRows, bufBytes int64) (*Source, error) {
	size, err := in.Size()
	if err != nil {
		return nil, err
	}
	f, err := parquet.OpenFile(in.ReaderAt(), size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(int(bufBytes)))
	if err != nil {
		return nil, input.NewError("opening input with parquet-go", in.Path, err)
	}
	leaf, ok := f.Schema().Lookup(tsName)
	if !ok || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != parquet.Int64 {
		return nil, input.NewError("opening input with parquet-go", in.Path, fmt.Errorf("no top-level INT64 timestamp column %q", tsName))
	}
	return &Source{name: in.Path, f: f, batchRows: int(max(batchRows, 1)), width: len(f.Schema().Columns()), tsLeaf: leaf.ColumnIndex}, nil
}

// Next returns the next batch: up to batchRows rows of the current row group and their
// timestamps.
func (s *Source) Next(ctx context.Context) (input.Batch, bool, error) {
	for {
		if err := ctx.Err(); err != nil {
			return input.Batch{}, false, err
		}
		if s.rows == nil {
			if s.rg >= len(s.f.RowGroups()) {
				return input.Batch{}, false, nil
			}
			s.rows = s.f.RowGroups()[s.rg].Rows()
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

// read reads a batch of the open row group, closing it at its end.
func (s *Source) read() (input.Batch, error) {
	arena := make([]parquet.Value, s.batchRows*s.width)
	rows := make([]parquet.Row, s.batchRows)
	for i := range rows {
		// A row's values fit its slot unless it holds lists or maps; one that does not fit
		// grows on its own.
		rows[i] = arena[i*s.width : i*s.width : (i+1)*s.width]
	}
	n, err := s.rows.ReadRows(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		return input.Batch{}, err
	}
	if n < len(rows) || errors.Is(err, io.EOF) {
		cerr := s.rows.Close()
		s.rows = nil
		if cerr != nil {
			return input.Batch{}, cerr
		}
	}
	rows = rows[:n]
	ts := make([]int64, n)
	for i, r := range rows {
		t, ok := s.timestamp(r)
		if !ok {
			return input.Batch{}, fmt.Errorf("timestamp column has a null or missing value in row %d of the batch", i)
		}
		ts[i] = t
	}
	return input.Batch{TS: ts, Values: rows}, nil
}

// timestamp is row r's timestamp: the value of the timestamp leaf.
func (s *Source) timestamp(r parquet.Row) (int64, bool) {
	// Leaves before the timestamp are usually flat: its value sits at its leaf index.
	if s.tsLeaf < len(r) && r[s.tsLeaf].Column() == s.tsLeaf {
		v := r[s.tsLeaf]
		return v.Int64(), !v.IsNull()
	}
	for _, v := range r {
		if v.Column() == s.tsLeaf {
			return v.Int64(), !v.IsNull()
		}
	}
	return 0, false
}

// Close closes the open row group's reader.
func (s *Source) Close() error {
	if s.rows != nil {
		err := s.rows.Close()
		s.rows = nil
		return err
	}
	return nil
}
