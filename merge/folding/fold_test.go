package folding

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/merge/internal/rolluptest"
)

const (
	usMinute = rolluptest.Minute
	usHour   = rolluptest.Hour
	usDay    = rolluptest.Day
)

var rollupSchema = rolluptest.Schema

var rollupFold = Fold{
	Keys:   []string{"service", "severity", "code"},
	Bucket: usMinute,
	Aggregates: []Aggregate{{"events", AggCount}, {"bytes", AggSum},
		{"latency_min", AggMin}, {"latency_max", AggMax}},
}

type rollupRow = rolluptest.Row

func ptr[T any](v T) *T { return rolluptest.Ptr(v) }

func rollupRecord(rows []rollupRow) arrow.RecordBatch { return rolluptest.Record(rows) }

// TestFoldRefusesBadSpecs names the column at fault.
func TestFoldRefusesBadSpecs(t *testing.T) {
	cases := []struct {
		f    func(*Fold)
		want string
	}{
		{func(f *Fold) { f.Aggregates = f.Aggregates[:3] }, `column "latency_max" is neither`},
		{func(f *Fold) { f.Keys = append(f.Keys, "events") }, `fold column "events": both key and aggregated`},
		{func(f *Fold) { f.Keys = []string{"service", "severity", "code", "nope"} }, `column "nope": the table has no such column`},
		{func(f *Fold) { f.Aggregates[0].Func = "count_distinct" }, `accepted: sum, min, max, count`},
		{func(f *Fold) { f.Aggregates[2].Func = AggCount }, `"latency_min": type float64 does not hold a count`},
		{func(f *Fold) { f.Bucket = 7 * usMinute }, "does not divide a day"},
		{func(f *Fold) { f.Bucket, f.Tiers = 2*usMinute, []FoldTier{{Before: 1, Bucket: 45 * usMinute}} }, "not a multiple"},
	}
	for _, c := range cases {
		f := rollupFold
		f.Aggregates = slices.Clone(f.Aggregates)
		f.Keys = slices.Clone(f.Keys)
		c.f(&f)
		_, err := Compile(f, rollupSchema, "timestamp")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("got %v, want an error with %q", err, c.want)
		}
	}
	if _, err := Compile(rollupFold, rollupSchema, "timestamp"); err != nil {
		t.Fatal(err)
	}
}

// TestFoldRefusesNarrowSums: a sum or count on an integer column narrower than a long would
// wrap, so the specification is refused naming the column and that long is accepted; min and
// max on them are kept (they never leave the column's range).
func TestFoldRefusesNarrowSums(t *testing.T) {
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32} {
		sc := arrow.NewSchema([]arrow.Field{
			{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
			{Name: "service", Type: arrow.BinaryTypes.String},
			{Name: "n", Type: typ, Nullable: true},
		}, nil)
		for _, fn := range []AggFunc{AggSum, AggCount} {
			f := Fold{Keys: []string{"service"}, Bucket: usMinute, Aggregates: []Aggregate{{"n", fn}}}
			err := CheckFold(f, sc, "timestamp")
			if err == nil || !strings.Contains(err.Error(), `"n"`) || !strings.Contains(err.Error(), "long") {
				t.Fatalf("%s of %s: got %v, want a refusal naming the column and long", fn, typ, err)
			}
		}
		for _, fn := range []AggFunc{AggMin, AggMax} {
			f := Fold{Keys: []string{"service"}, Bucket: usMinute, Aggregates: []Aggregate{{"n", fn}}}
			if err := CheckFold(f, sc, "timestamp"); err != nil {
				t.Fatalf("%s of %s: %v", fn, typ, err)
			}
		}
	}
}

// TestFoldSumOverflowFails: a long sum past the long range fails the fold instead of wrapping.
func TestFoldSumOverflowFails(t *testing.T) {
	c, err := Compile(rollupFold, rollupSchema, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	fo := NewFolder(c, rollupSchema, memory.DefaultAllocator, 1024)
	fo.SetOut(func(rec arrow.RecordBatch) error { return nil })
	row := rollupRow{TS: 5 * usMinute, Service: ptr("api"), Bytes: ptr(int64(math.MaxInt64 - 10))}
	small := row
	small.TS, small.Bytes = row.TS+1, ptr(int64(11))
	rec := rollupRecord([]rollupRow{row, small})
	defer rec.Release()
	err = fo.Write(rec)
	if err == nil || !strings.Contains(err.Error(), `"bytes" overflows`) {
		t.Fatalf("got %v, want an overflow error for bytes", err)
	}
}

// poisonAllocator overwrites every buffer it frees, as an allocator that reuses memory would.
type poisonAllocator struct{ memory.GoAllocator }

func (a *poisonAllocator) Free(b []byte) {
	for i := range b {
		b[i] = 'X'
	}
}

func (a *poisonAllocator) Reallocate(size int, b []byte) []byte {
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// TestFoldKeysOutliveInput: a group's string keys are copies, not views into the input
// record's buffers, which are released before the bucket is written.
func TestFoldKeysOutliveInput(t *testing.T) {
	c, err := Compile(rollupFold, rollupSchema, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	fo := NewFolder(c, rollupSchema, memory.DefaultAllocator, 1024)
	fo.SetOut(func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			got = append(got, rec.Column(1).(*array.String).Value(i)+"/"+rec.Column(2).(*array.String).Value(i))
		}
		return nil
	})
	b := array.NewRecordBuilder(&poisonAllocator{}, rollupSchema)
	b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(5 * usMinute))
	b.Field(1).(*array.StringBuilder).Append("billing")
	b.Field(2).(*array.StringBuilder).Append("warn")
	for f := 3; f < 8; f++ {
		b.Field(f).AppendNull()
	}
	rec := b.NewRecordBatch()
	b.Release()
	if err := fo.Write(rec); err != nil {
		t.Fatal(err)
	}
	rec.Release() // the input's buffers are freed (and overwritten) before the bucket is written
	if err := fo.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "billing/warn" {
		t.Fatalf("folded keys %q, want billing/warn", got)
	}
}

// TestFoldBucketInKeyOrder: a bucket's folded rows come out in key order (nulls first), not in
// the order of an encoding that sorts shorter strings first.
func TestFoldBucketInKeyOrder(t *testing.T) {
	c, err := Compile(rollupFold, rollupSchema, "timestamp")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	fo := NewFolder(c, rollupSchema, memory.DefaultAllocator, 1024)
	fo.SetOut(func(rec arrow.RecordBatch) error {
		for i := 0; i < int(rec.NumRows()); i++ {
			got = append(got, rec.Column(1).ValueStr(i)+"|"+rec.Column(2).ValueStr(i)+"|"+rec.Column(3).ValueStr(i))
		}
		return nil
	})
	var rows []rollupRow
	for _, k := range []struct {
		svc, sev *string
		code     int32
	}{{ptr("b"), ptr("x"), 2}, {ptr("aa"), ptr("x"), 2}, {ptr("a\x00"), ptr("x"), 2}, {ptr("a"), ptr("x"), 2},
		{ptr("a"), nil, 2}, {ptr("a"), ptr("x"), -1}, {nil, ptr("x"), 2}, {ptr("b"), ptr("x"), 2}} {
		rows = append(rows, rollupRow{TS: 5*usMinute + int64(len(rows)), Service: k.svc, Severity: k.sev, Code: ptr(k.code)})
	}
	rec := rollupRecord(rows)
	defer rec.Release()
	if err := fo.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fo.Flush(); err != nil {
		t.Fatal(err)
	}
	want := []string{"(null)|x|2", "a|(null)|2", "a|x|-1", "a|x|2", "a\x00|x|2", "aa|x|2", "b|x|2"}
	if !slices.Equal(got, want) {
		t.Fatalf("bucket rows %q, want %q", got, want)
	}
}
