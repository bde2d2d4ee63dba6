package rows

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestTableSchema: the timestamp becomes microseconds UTC, every field loses its metadata, the
// other columns keep their names, types, order and nullability, and the input is not modified.
func TestTableSchema(t *testing.T) {
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	seg := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Metadata: md},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true, Metadata: md},
		{Name: "code", Type: arrow.PrimitiveTypes.Int64},
	}, &md)
	got := TableSchema(seg, "timestamp")
	want := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "code", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
	if !got.Equal(want) || got.HasMetadata() {
		t.Fatalf("table schema %v, want %v", got, want)
	}
	for _, f := range got.Fields() {
		if f.HasMetadata() {
			t.Fatalf("field %s kept metadata %v", f.Name, f.Metadata)
		}
	}
	if seg.Field(0).Type.(*arrow.TimestampType).Unit != arrow.Nanosecond || !seg.Field(1).HasMetadata() {
		t.Fatalf("the segment schema was modified: %v", seg)
	}
}
