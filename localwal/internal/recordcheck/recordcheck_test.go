package recordcheck

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// arrowValidate is Arrow's own full validation, the oracle Full
// must agree with (a panic inside it is a rejection, as in Full).
func arrowValidate(rec arrow.RecordBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow validation panicked: %v", p)
		}
	}()
	return array.ValidateRecordFull(rec)
}

// stringCase is a string array from raw buffers, as a corrupt segment can
// carry them.
type stringCase struct {
	offsets  []int32
	values   string
	validity []byte // nil: no bitmap
	offset   int    // the array's slice offset
	length   int
	nulls    int
}

func (c stringCase) data() arrow.ArrayData {
	ob := make([]byte, 4*len(c.offsets))
	for i, o := range c.offsets {
		binary.LittleEndian.PutUint32(ob[4*i:], uint32(o))
	}
	var vb *memory.Buffer
	if c.validity != nil {
		vb = memory.NewBufferBytes(c.validity)
	}
	return array.NewData(arrow.BinaryTypes.String, c.length,
		[]*memory.Buffer{vb, memory.NewBufferBytes(ob), memory.NewBufferBytes([]byte(c.values))}, nil, c.nulls, c.offset)
}

// records are the ways a string array reaches Full: as a column,
// and as the values of a map<string,string> column (one entry per string;
// map keys cannot be null, so they are valid strings).
// Arrow's constructors panic on some corrupt layouts (so does its IPC reader,
// which turns that into an error before validation): then there is none.
func (c stringCase) records() (recs []arrow.RecordBatch) {
	defer func() {
		if recover() != nil {
			recs = nil
		}
	}()
	sd := c.data()
	defer sd.Release()
	col := array.MakeFromData(sd)
	defer col.Release()
	plain := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}}, nil),
		[]arrow.Array{col}, int64(col.Len()))

	mt := arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String)
	n := max(c.length, 0)
	kb := array.NewStringBuilder(memory.DefaultAllocator)
	defer kb.Release()
	for range n {
		kb.Append("k")
	}
	keys := kb.NewStringArray()
	defer keys.Release()
	entries := array.NewData(mt.Elem(), n, []*memory.Buffer{nil}, []arrow.ArrayData{keys.Data(), sd}, 0, 0)
	defer entries.Release()
	lo := make([]byte, 8)
	binary.LittleEndian.PutUint32(lo[4:], uint32(n))
	md := array.NewData(mt, 1, []*memory.Buffer{nil, memory.NewBufferBytes(lo)}, []arrow.ArrayData{entries}, 0, 0)
	defer md.Release()
	m := array.MakeFromData(md)
	defer m.Release()
	nested := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "attributes", Type: mt, Nullable: true}}, nil),
		[]arrow.Array{m}, 1)
	return []arrow.RecordBatch{plain, nested}
}

// sameVerdict fails unless Full and Arrow's full validation both
// accept or both reject every record of c, and returns whether they accept
// (one false when Arrow cannot even build c).
func sameVerdict(t testing.TB, c stringCase) (accepted []bool) {
	t.Helper()
	recs := c.records()
	if recs == nil {
		return []bool{false}
	}
	for _, rec := range recs {
		ours, theirs := Full(rec), arrowValidate(rec)
		if (ours == nil) != (theirs == nil) {
			t.Fatalf("%+v as %s: Full %v, Arrow %v", c, rec.Schema().Field(0).Type, ours, theirs)
		}
		accepted = append(accepted, ours == nil)
		rec.Release()
	}
	return accepted
}

// TestValidateStringsLikeArrow: the buffer-at-a-time UTF-8 check accepts and
// rejects exactly what Arrow's per-value one does, for string columns and
// strings nested in a map, on the corruptions that matter.
func TestValidateStringsLikeArrow(t *testing.T) {
	for _, c := range []struct {
		name string
		c    stringCase
		ok   bool
	}{
		{"ascii", stringCase{offsets: []int32{0, 3, 3, 8}, values: "abcdefgh", length: 3}, true},
		{"multibyte", stringCase{offsets: []int32{0, 2, 5, 9}, values: "é€😀", length: 3}, true},
		{"invalid byte in a value", stringCase{offsets: []int32{0, 3, 6}, values: "ab\xffdef", length: 2}, false},
		{"invalid byte in a null slot", stringCase{offsets: []int32{0, 3, 6}, values: "abc\xfeef", validity: []byte{0b01}, length: 2, nulls: 1}, false},
		// The whole buffer is valid UTF-8, but an offset cuts é into two invalid values.
		{"offset inside a rune", stringCase{offsets: []int32{0, 1, 2}, values: "é", length: 2}, false},
		{"offset inside a 4-byte rune", stringCase{offsets: []int32{0, 3, 6}, values: "a😀b", length: 2}, false},
		{"empty values at the end", stringCase{offsets: []int32{0, 2, 2, 2}, values: "é", length: 3}, true},
		{"empty value inside a rune", stringCase{offsets: []int32{0, 1, 1, 2}, values: "é", length: 3}, false},
		{"non-decreasing violated", stringCase{offsets: []int32{0, 4, 2, 6}, values: "abcdef", length: 3}, false},
		{"negative first offset", stringCase{offsets: []int32{-1, 2, 3}, values: "abc", length: 2}, false},
		// Arrow's validator panics here (a middle offset past the values).
		{"middle offset out of range", stringCase{offsets: []int32{0, 100, 3}, values: "abc", length: 2}, false},
		{"last offset out of range", stringCase{offsets: []int32{0, 2, 9}, values: "abc", length: 2}, false},
		{"offsets buffer too short", stringCase{offsets: []int32{0, 2}, values: "abc", length: 2}, false},
		{"sliced: bad value outside the slice", stringCase{offsets: []int32{0, 1, 3, 5}, values: "\xffbcde", offset: 1, length: 2}, true},
		{"sliced: bad value inside the slice", stringCase{offsets: []int32{0, 1, 3, 5}, values: "a\xffcde", offset: 1, length: 2}, false},
		{"bad bytes after the last offset", stringCase{offsets: []int32{0, 2, 3}, values: "abc\xff\xff", length: 2}, true},
		{"continuation byte after the last offset", stringCase{offsets: []int32{0, 1}, values: "é", length: 1}, false},
		{"null count mismatch", stringCase{offsets: []int32{0, 1, 2}, values: "ab", validity: []byte{0b11}, length: 2, nulls: 1}, false},
		{"unknown null count", stringCase{offsets: []int32{0, 1, 2}, values: "ab", validity: []byte{0b01}, length: 2, nulls: array.UnknownNullCount}, true},
		{"empty array", stringCase{values: "\xff"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i, ok := range sameVerdict(t, c.c) {
				if ok != c.ok {
					t.Errorf("record %d: accepted %v, want %v", i, ok, c.ok)
				}
			}
		})
	}
}

// FuzzValidateStrings: on any string buffers, Full and Arrow's full
// validation agree (FuzzReadSegment covers the same through whole segments).
func FuzzValidateStrings(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 2, 0, 0, 0}, []byte("é"), []byte(nil), uint8(0), uint8(1), int16(0))
	f.Add([]byte{0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}, []byte("é"), []byte{1}, uint8(0), uint8(2), int16(1))
	f.Add([]byte{0, 0, 0, 0, 3, 0, 0, 0, 6, 0, 0, 0}, []byte("a😀b"), []byte(nil), uint8(1), uint8(1), int16(0))
	f.Fuzz(func(t *testing.T, offsets, values, validity []byte, off, length uint8, nulls int16) {
		offs := make([]int32, len(offsets)/4)
		for i := range offs {
			offs[i] = int32(binary.LittleEndian.Uint32(offsets[4*i:]))
		}
		if validity != nil && len(validity) == 0 {
			validity = nil
		}
		n := int(length) % 16
		sameVerdict(t, stringCase{offsets: offs, values: string(values), validity: validity, offset: int(off) % 8, length: n,
			nulls: max(int(nulls)%(n+2), array.UnknownNullCount)})
	})
}
