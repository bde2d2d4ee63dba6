package input

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Conform projects rec onto schema by column name: columns come out in schema
// order with schema's field metadata (the Iceberg field ids), columns of rec
// the schema does not name are dropped, and optional schema columns rec lacks
// become all-null. A type that differs from the schema's is accepted only if it
// widens losslessly (see widens); anything else is an error naming the column.
// The caller releases the result.
func Conform(rec arrow.RecordBatch, schema *arrow.Schema, mem memory.Allocator) (arrow.RecordBatch, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	if rec.Schema().Equal(schema) {
		rec.Retain()
		return rec, nil
	}
	n := int(rec.NumRows())
	cols := make([]arrow.Array, 0, schema.NumFields())
	release := func() {
		for _, c := range cols {
			c.Release()
		}
	}
	for _, f := range schema.Fields() {
		idx := rec.Schema().FieldIndices(f.Name)
		if len(idx) == 0 {
			if !f.Nullable {
				release()
				return nil, fmt.Errorf("%w: required column %q (%s) is missing", ErrSchema, f.Name, f.Type)
			}
			cols = append(cols, array.MakeArrayOfNull(mem, f.Type, n))
			continue
		}
		src := rec.Column(idx[0])
		if !f.Nullable && src.NullN() > 0 {
			release()
			return nil, fmt.Errorf("%w: column %q has %d nulls but the schema declares it required", ErrSchema, f.Name, src.NullN())
		}
		if arrow.TypeEqual(src.DataType(), f.Type) {
			src.Retain()
			cols = append(cols, src)
			continue
		}
		if !widens(src.DataType(), f.Type) {
			release()
			return nil, fmt.Errorf("%w: column %q has type %s, accepted: %s or a type that widens to it", ErrSchema, f.Name, src.DataType(), f.Type)
		}
		ctx := compute.WithAllocator(context.Background(), mem)
		out, err := compute.CastArray(ctx, src, compute.SafeCastOptions(f.Type))
		if err != nil {
			release()
			return nil, fmt.Errorf("%w: casting column %q from %s to %s: %v", ErrSchema, f.Name, src.DataType(), f.Type, err)
		}
		cols = append(cols, out)
	}
	out := array.NewRecordBatch(schema, cols, int64(n))
	release()
	return out, nil
}

// widens reports whether values of type from convert to type to without loss,
// which is what Iceberg schema evolution allows (int→long, float→double) plus
// the Arrow-only variations a reader may hand back (string views and large
// strings, dictionary-encoded strings, other timestamp units and zones).
func widens(from, to arrow.DataType) bool {
	isStr := func(t arrow.DataType) bool {
		switch t.ID() {
		case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
			return true
		}
		return false
	}
	isBin := func(t arrow.DataType) bool {
		switch t.ID() {
		case arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW:
			return true
		}
		return false
	}
	switch {
	case isStr(to):
		if d, ok := from.(*arrow.DictionaryType); ok {
			return isStr(d.ValueType)
		}
		return isStr(from)
	case isBin(to):
		return isBin(from)
	}
	switch to.ID() {
	case arrow.INT64:
		switch from.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16, arrow.UINT32:
			return true
		}
	case arrow.INT32:
		switch from.ID() {
		case arrow.INT8, arrow.INT16, arrow.UINT8, arrow.UINT16:
			return true
		}
	case arrow.FLOAT64:
		return from.ID() == arrow.FLOAT32
	case arrow.TIMESTAMP:
		return from.ID() == arrow.TIMESTAMP
	}
	return false
}
