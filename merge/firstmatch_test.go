package merge

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/merge/rowfilter"
)

// TestFilterRecordFirstMatch: with FirstMatch a row takes the first class whose columns match and
// is dropped only before that class's cutoff; a Keep class is never dropped, and a later class
// never sees rows an earlier one took (retention's precedence).
func TestFilterRecordFirstMatch(t *testing.T) {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "severity", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	type row struct {
		ts  int64
		sev string // "" = null
	}
	rows := []row{{10, "debug"}, {60, "debug"}, {120, "debug"}, {10, "error"}, {10, "info"}, {60, "info"}, {10, ""}, {60, ""}}
	for _, r := range rows {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(r.ts))
		if r.sev == "" {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(r.sev)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	c := func(v int64) *int64 { return &v }
	f := &rowfilter.Filter{FirstMatch: true, Predicates: []rowfilter.Predicate{
		{Columns: []rowfilter.ColumnIn{{Column: "severity", Values: []string{"error"}}}, Keep: true},
		{Columns: []rowfilter.ColumnIn{{Column: "severity", Values: []string{"debug"}}}, To: c(100)},
		{To: c(50)}, // the table's period: every other row
	}}
	out, dropped, err := FilterRecord(rec, "timestamp", f, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	var kept []row
	ts := out.Column(0).(*array.Timestamp)
	sev := out.Column(1).(*array.String)
	for i := 0; i < int(out.NumRows()); i++ {
		r := row{ts: int64(ts.Value(i))}
		if !sev.IsNull(i) {
			r.sev = sev.Value(i)
		}
		kept = append(kept, r)
	}
	want := []row{{120, "debug"}, {10, "error"}, {60, "info"}, {60, ""}}
	if len(kept) != len(want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
	for i := range want {
		if kept[i] != want[i] {
			t.Fatalf("kept %v, want %v", kept, want)
		}
	}
	if dropped[0] != 0 || dropped[1] != 2 || dropped[2] != 2 {
		t.Fatalf("dropped per class %v, want [0 2 2]", dropped)
	}
	// Without FirstMatch the same predicates are an OR: a Keep predicate never matches, and the
	// rows before 50 go whatever their severity, like the debug rows before 100.
	f.FirstMatch = false
	out2, _, err := FilterRecord(rec, "timestamp", f, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer out2.Release()
	if out2.NumRows() != 3 { // 120 debug, 60 info, 60 null
		t.Fatalf("OR filter kept %d rows, want 3", out2.NumRows())
	}
}
