package localwal

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal/internal/ipcmsg"
)

// The metadata guard must accept everything a real Arrow writer produces:
// wide schemas, deep nesting, every type with vectors or strings in its
// metadata, field and schema metadata.
func TestGuardAcceptsRealSchemas(t *testing.T) {
	md := arrow.NewMetadata([]string{"k1", "k2"}, []string{"v1", "a longer value"})
	nested := arrow.DataType(arrow.PrimitiveTypes.Int64)
	for i := 0; i < 20; i++ {
		nested = arrow.StructOf(arrow.Field{Name: fmt.Sprintf("s%d", i), Type: arrow.ListOf(nested), Nullable: true})
	}
	fields := []arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, Metadata: md},
		{Name: "local", Type: &arrow.TimestampType{Unit: arrow.Second, TimeZone: "America/Argentina/Buenos_Aires"}, Nullable: true},
		{Name: "nested", Type: nested, Nullable: true},
		{Name: "map", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
		{Name: "sparse", Type: arrow.SparseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}, {Name: "b", Type: arrow.BinaryTypes.String, Nullable: true}}, []arrow.UnionTypeCode{5, 9}), Nullable: true},
		{Name: "dense", Type: arrow.DenseUnionOf([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, []arrow.UnionTypeCode{3}), Nullable: true},
		{Name: "dict", Type: &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, Nullable: true},
		{Name: "fsl", Type: arrow.FixedSizeListOf(3, arrow.PrimitiveTypes.Int8), Nullable: true},
		{Name: "dec", Type: &arrow.Decimal128Type{Precision: 20, Scale: 4}, Nullable: true},
		{Name: "view", Type: arrow.BinaryTypes.StringView, Nullable: true},
		{Name: "large", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	}
	for i := 0; i < 1000; i++ {
		fields = append(fields, arrow.Field{Name: fmt.Sprintf("attr_%04d", i), Type: arrow.BinaryTypes.String, Nullable: true})
	}
	schema := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for row := 0; row < 3; row++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(row))
		for i := 1; i < len(fields); i++ {
			b.Field(i).AppendNull()
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	data := rawSegment(t, schema, nil, rec, rec)
	if at, err := ipcmsg.CheckStream(data); err != nil {
		t.Fatalf("guard rejected a real stream at %d: %v", at, err)
	}
	seg, err := Decode(testName, data, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Release()
	if seg.Rows != 6 || seg.Schema.NumFields() != len(fields) {
		t.Fatalf("rows %d fields %d", seg.Rows, seg.Schema.NumFields())
	}
}

// Metadata that claims a huge vector is refused before Arrow allocates it.
func TestGuardRejectsLyingVector(t *testing.T) {
	rec := newLogGen(1, t0).Batch(memory.DefaultAllocator, 2)
	defer rec.Release()
	data := rawSegment(t, logSchema, nil, rec)
	// The schema's fields vector length is the uint32 8 (the column count)
	// somewhere in the first message's metadata; make every such word huge.
	metaEnd := 8 + int(uint32(data[4])|uint32(data[5])<<8|uint32(data[6])<<16|uint32(data[7])<<24)
	hit := false
	for i := 8; i+4 <= metaEnd; i += 4 {
		if data[i] == byte(logSchema.NumFields()) && data[i+1] == 0 && data[i+2] == 0 && data[i+3] == 0 {
			bad := append([]byte(nil), data...)
			bad[i+3] = 0x40 // about a billion fields
			if _, err := ipcmsg.CheckStream(bad); err != nil {
				hit = true
				wantReason(t, testName, bad, ReadOptions{}, ReasonCorrupt)
			}
		}
	}
	if !hit {
		t.Fatal("no lying vector length was caught")
	}
}
