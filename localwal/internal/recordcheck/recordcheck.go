// Package recordcheck validates a decoded Arrow record batch as Arrow's full
// validation does, rejecting exactly what it rejects, only faster on string
// columns: the WAL reader runs it on every batch before the drain sees it.
package recordcheck

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
)

// Full runs Arrow's full validation (array.ValidateRecordFull) and
// rejects exactly what it rejects, but checks the UTF-8 of string columns a
// buffer at a time instead of a value at a time: for log rows, whose values
// are a few bytes each, that per-value check was most of the drain's
// validation cost. Every other check is Arrow's own.
//
// arrow-go v18.8.0's String.ValidateFull slices values before it has checked
// that a middle offset is in range, so a corrupt offset could panic inside
// the validator; a panic in any validator is turned into the error it
// should have been.
func Full(rec arrow.RecordBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow validation panicked: %v", p)
		}
	}()
	for i, col := range rec.Columns() {
		if err := validateFull(col); err != nil {
			return fmt.Errorf("column %d (%s): %w", i, rec.Schema().Field(i).Name, err)
		}
	}
	return nil
}

// validateFull is array.ValidateFull(arr). Arrow's full validation of an
// array is, for it and every child: the layout and structure checks of
// array.Validate, the null count against the validity bitmap, and the type's
// own ValidateFull (plus dictionary and extension checks, which the types
// taken here do not have). So a tree of strings, structs, lists and maps
// (a map<string,string> of attributes) gets array.Validate for the whole
// tree, then the null counts and the types' full checks node by node, with
// the strings' one done by validStrings; any other type is left to Arrow
// whole.
func validateFull(arr arrow.Array) error {
	if !fastTypes(arr.DataType()) {
		return array.ValidateFull(arr)
	}
	if err := array.Validate(arr); err != nil {
		return err
	}
	return fullChecks(arr)
}

// fastTypes reports whether t contains a string and is built only of the
// types fullChecks walks itself.
func fastTypes(t arrow.DataType) bool {
	var str bool
	var walk func(t arrow.DataType) bool
	walk = func(t arrow.DataType) bool {
		switch t := t.(type) {
		case *arrow.StringType:
			str = true
			return true
		case *arrow.StructType, *arrow.ListType, *arrow.MapType:
			for _, f := range t.(arrow.NestedType).Fields() {
				if !walk(f.Type) {
					return false
				}
			}
			return true
		case arrow.ExtensionType, *arrow.DictionaryType:
			return false
		case arrow.FixedWidthDataType, *arrow.BinaryType:
			return true
		}
		return false
	}
	return walk(t) && str
}

// fullChecks is what array.ValidateFull adds to array.Validate, for a tree
// fastTypes accepts.
func fullChecks(arr arrow.Array) error {
	data := arr.Data()
	if err := nullCount(data); err != nil {
		return err
	}
	switch a := arr.(type) {
	case *array.String:
		return validStrings(a)
	case *array.Struct, *array.List, *array.Map:
		if err := arr.(array.Validator).ValidateFull(); err != nil {
			return err
		}
	default:
		return array.ValidateFull(arr)
	}
	fields := arr.DataType().(arrow.NestedType).Fields()
	for i, cd := range data.Children() {
		child := array.MakeFromData(cd)
		err := fullChecks(child)
		child.Release()
		if err != nil {
			return fmt.Errorf("field %q: %w", fields[i].Name, err)
		}
	}
	return nil
}

// nullCount is Arrow's check that a known null count matches the validity
// bitmap (its validateNullCount, unexported).
func nullCount(data arrow.ArrayData) error {
	want := data.NullN()
	if want == array.UnknownNullCount {
		return nil
	}
	got := 0
	if bufs := data.Buffers(); len(bufs) > 0 && bufs[0] != nil {
		got = data.Len() - bitutil.CountSetBits(bufs[0].Bytes(), data.Offset(), data.Len())
	}
	if got != want {
		return fmt.Errorf("arrow/array: null count value (%d) does not match actual number of nulls in array (%d)", want, got)
	}
	return nil
}

// validStrings is String.ValidateFull after String.Validate passed: offsets
// non-negative and non-decreasing, and every value (null slots included)
// valid UTF-8. The values of a string array lie back to back, so they are
// all valid exactly when the bytes from the first offset to the last are
// valid UTF-8 and every offset between falls on the start of a rune (a byte
// that is not a continuation byte, 10xxxxxx) or on the end: a valid whole
// cut only at rune starts gives valid pieces, and valid pieces put together
// are a valid whole that each starts at a rune start.
func validStrings(a *array.String) error {
	data := a.Data()
	n := data.Len()
	if n == 0 {
		return nil
	}
	// Validate checked that the offsets buffer holds offset+length+1 values
	// and that the first and last fall inside the values buffer.
	offs := arrow.Int32Traits.CastFromBytes(data.Buffers()[1].Bytes())[data.Offset() : data.Offset()+n+1]
	var vals []byte
	if b := data.Buffers()[2]; b != nil {
		vals = b.Bytes()
	}
	if offs[0] < 0 {
		return fmt.Errorf("arrow/array: string offset at index %d is negative: %d", data.Offset(), offs[0])
	}
	for i := 1; i < len(offs); i++ {
		if offs[i] < offs[i-1] {
			return fmt.Errorf("arrow/array: string offsets are not monotonically non-decreasing at index %d: %d < %d",
				data.Offset()+i, offs[i], offs[i-1])
		}
	}
	end := offs[n]
	ok := utf8.Valid(vals[offs[0]:end])
	for i := 1; ok && i < n; i++ {
		ok = offs[i] == end || vals[offs[i]]&0xC0 != 0x80
	}
	if ok {
		return nil
	}
	for i := 1; i < len(offs); i++ { // name the first bad value, as Arrow does
		if v := vals[offs[i-1]:offs[i]]; !utf8.Valid(v) {
			return fmt.Errorf("arrow/array: string at index %d is not valid utf8: %s", data.Offset()+i-1, v)
		}
	}
	return fmt.Errorf("arrow/array: string values are not valid utf8") // unreachable: see above
}
