package testenv

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// sampleSchema covers every type the checksum supports, nested ones included.
var sampleSchema = arrow.NewSchema([]arrow.Field{
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "msg", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "n32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "u64", Type: arrow.PrimitiveTypes.Uint64},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "raw", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "attrs", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "src", Type: arrow.StructOf(
		arrow.Field{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "pid", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	), Nullable: true},
	{Name: "tsns", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8},
	{Name: "u32", Type: arrow.PrimitiveTypes.Uint32},
}, nil)

var trickyStrings = []string{"", "-", "1:-", "héllo wörld", "日本語のログ", "emoji 🎉🚀", "quote ' and \" and \\", "tab\tnew\nline", "[{(])}"}

var trickyFloats = []float64{0, math.Copysign(0, -1), 0.1, 1.0 / 3, 1e20, 1e-7, 0.0001, 0.00001, 123456789012345678,
	5e-324, math.MaxFloat64, -2.5, 100, 1e16, 1e17, 12345.678, math.Inf(1), math.Inf(-1), math.NaN()}

// sampleRecord builds n rows starting at row number base; r drives the values.
func sampleRecord(t testing.TB, base, n int, r *rand.Rand) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, sampleSchema)
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	id := b.Field(1).(*array.Int64Builder)
	msg := b.Field(2).(*array.StringBuilder)
	n32 := b.Field(3).(*array.Int32Builder)
	u64 := b.Field(4).(*array.Uint64Builder)
	f64 := b.Field(5).(*array.Float64Builder)
	f32 := b.Field(6).(*array.Float32Builder)
	ok := b.Field(7).(*array.BooleanBuilder)
	raw := b.Field(8).(*array.BinaryBuilder)
	day := b.Field(9).(*array.Date32Builder)
	tags := b.Field(10).(*array.ListBuilder)
	tagv := tags.ValueBuilder().(*array.StringBuilder)
	attrs := b.Field(11).(*array.MapBuilder)
	ak := attrs.KeyBuilder().(*array.StringBuilder)
	av := attrs.ItemBuilder().(*array.Int64Builder)
	src := b.Field(12).(*array.StructBuilder)
	host := src.FieldBuilder(0).(*array.StringBuilder)
	pid := src.FieldBuilder(1).(*array.Int32Builder)
	tsns := b.Field(13).(*array.TimestampBuilder)
	i8 := b.Field(14).(*array.Int8Builder)
	u32 := b.Field(15).(*array.Uint32Builder)

	const t0 = int64(1_735_689_600_000_000) // 2025-01-01 in microseconds
	for k := 0; k < n; k++ {
		i := base + k
		ts.Append(arrow.Timestamp(t0 + int64(r.IntN(3_600_000_000)) - int64(i%7)*1_000_003))
		id.Append(int64(i) - 1000)
		switch i % 5 {
		case 0:
			msg.AppendNull()
		default:
			msg.Append(trickyStrings[i%len(trickyStrings)] + strings.Repeat("x", r.IntN(3)))
		}
		if i%3 == 0 {
			n32.AppendNull()
		} else {
			n32.Append(int32(r.Uint32()))
		}
		u64.Append(r.Uint64()) // above 2^63 half the time: must print unsigned
		switch {
		case i%11 == 0:
			f64.AppendNull()
		case i%2 == 0:
			f64.Append(trickyFloats[i%len(trickyFloats)])
		default:
			// Random magnitudes across the whole range exercise %.17g's notation choice.
			f64.Append((r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(80)-40)))
		}
		f32.Append(float32(r.NormFloat64() * 1000))
		if i%4 == 0 {
			ok.AppendNull()
		} else {
			ok.Append(i%2 == 0)
		}
		if i%6 == 0 {
			raw.AppendNull()
		} else {
			raw.Append([]byte{byte(i), 0, 0xff, byte(r.IntN(256))})
		}
		day.Append(arrow.Date32(20_000 - i%400))
		switch i % 4 {
		case 0:
			tags.AppendNull()
		case 1:
			tags.AppendEmptyValue()
		default:
			tags.Append(true)
			tagv.Append("a" + trickyStrings[i%len(trickyStrings)])
			tagv.AppendNull()
			tagv.Append("z")
		}
		switch i % 3 {
		case 0:
			attrs.AppendNull()
		default:
			attrs.Append(true)
			for j := 0; j < i%4; j++ {
				ak.Append("k" + string(rune('a'+j)))
				if j == 1 {
					av.AppendNull()
				} else {
					av.Append(int64(j * i))
				}
			}
		}
		switch i % 7 {
		case 0:
			src.AppendNull()
		default:
			src.Append(true)
			if i%2 == 0 {
				host.AppendNull()
			} else {
				host.Append("host-é-" + string(rune('a'+i%26)))
			}
			pid.Append(int32(i))
		}
		if i%9 == 0 {
			tsns.AppendNull()
		} else {
			// Both sides of the epoch with sub-microsecond parts: the conversion to
			// microseconds must truncate toward zero on both.
			tsns.Append(arrow.Timestamp(r.Int64N(2_000_000_000_000) - 1_000_000_000_000 + int64(i%1000)))
		}
		i8.Append(int8(i))
		u32.Append(r.Uint32())
	}
	return b.NewRecordBatch()
}

func writeParquet(t testing.TB, path string, recs ...arrow.RecordBatch) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Small row groups so the reader crosses group boundaries.
	w, err := pqarrow.NewFileWriter(sampleSchema, f,
		parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(700)),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRowTextEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	rec := sampleRecord(t, 0, 16, r)
	defer rec.Release()
	cases := []struct {
		row  int
		cols []string
		want string
	}{
		{0, []string{"id", "msg", "n32"}, "5:-1000--"},
		{1, []string{"msg", "ok"}, "1:-5:false"},
		{3, []string{"tags", "attrs"}, "23:[14:ahéllo wörld-1:z]-"},
		{5, []string{"attrs"}, "9:{2:ka1:0}"},
		{7, []string{"attrs"}, "22:{2:ka1:02:kb-2:kc2:14}"},
		{4, []string{"tags", "attrs"}, "-2:{}"},
		{1, []string{"src", "day"}, "16:(9:host-é-b1:1)5:19999"},
		{2, []string{"src", "raw"}, "6:(-1:2)8:0200FF" + rawByte(t, rec, 2)},
		{0, []string{"tags", "src"}, "--"},
		{6, []string{"f64"}, "6:0.0001"},
		{12, []string{"f64"}, "3:100"},
		{2, []string{"f64"}, "19:0.10000000000000001"},
	}
	for _, c := range cases {
		got, err := RowText(rec, c.row, c.cols...)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("row %d %v: got %q, want %q", c.row, c.cols, got, c.want)
		}
	}
}

func rawByte(t testing.TB, rec arrow.RecordBatch, row int) string {
	v := rec.Column(8).(*array.Binary).Value(row)
	const hexdigits = "0123456789ABCDEF"
	return string([]byte{hexdigits[v[3]>>4], hexdigits[v[3]&15]})
}

func TestRowChecksumOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	a, b := sampleRecord(t, 0, 300, r), sampleRecord(t, 300, 200, r)
	defer a.Release()
	defer b.Release()
	ab, err := RowChecksum([]arrow.RecordBatch{a, b})
	if err != nil {
		t.Fatal(err)
	}
	ba, err := RowChecksum([]arrow.RecordBatch{b, a})
	if err != nil {
		t.Fatal(err)
	}
	if ab != ba {
		t.Fatalf("checksum depends on batch order: %d vs %d", ab, ba)
	}
	only, err := RowChecksum([]arrow.RecordBatch{a})
	if err != nil {
		t.Fatal(err)
	}
	if only == ab {
		t.Fatalf("dropping 200 rows left the checksum unchanged")
	}
	if _, err := RowChecksum([]arrow.RecordBatch{a}, "nope"); err == nil {
		t.Fatal("unknown column accepted")
	}
}

func TestRowChecksumMatchesDuckDB(t *testing.T) {
	duck := DuckDB(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	recs := []arrow.RecordBatch{sampleRecord(t, 0, 1500, r), sampleRecord(t, 1500, 1000, r), sampleRecord(t, 2500, 700, r)}
	for _, rec := range recs {
		defer rec.Release()
	}
	files := []string{filepath.Join(dir, "a.parquet"), filepath.Join(dir, "b.parquet")}
	writeParquet(t, files[0], recs[0], recs[1])
	writeParquet(t, files[1], recs[2])

	want, err := RowChecksum(recs)
	if err != nil {
		t.Fatal(err)
	}
	s := duck.Summarize(files)
	if s.Rows != 3200 || len(s.Files) != 2 || s.Files[0].Rows != 2500 || s.Files[1].Rows != 700 {
		t.Fatalf("DuckDB row counts: total %d, files %+v", s.Rows, s.Files)
	}
	if s.Checksum != want {
		t.Errorf("checksum over all columns: DuckDB %d, Go (arrow records) %d", s.Checksum, want)
		explainMismatch(t, duck, recs[0], files[0])
	}
	var fromFiles RowSum
	for _, f := range files {
		fs, err := ParquetRowSum(f)
		if err != nil {
			t.Fatal(err)
		}
		fromFiles.Sum += fs.Sum
		fromFiles.Rows += fs.Rows
	}
	if fromFiles.Sum != want || fromFiles.Rows != 3200 {
		t.Errorf("checksum of the files read back by arrow-go: %d over %d rows, want %d over 3200", fromFiles.Sum, fromFiles.Rows, want)
	}

	// Per-file bounds of the timestamp column, as microseconds.
	for i, rr := range [][]arrow.RecordBatch{{recs[0], recs[1]}, {recs[2]}} {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for _, rec := range rr {
			for _, v := range rec.Column(0).(*array.Timestamp).Values() {
				lo, hi = min(lo, int64(v)), max(hi, int64(v))
			}
		}
		gotLo, err1 := s.Files[i].Min()
		gotHi, err2 := s.Files[i].Max()
		if err1 != nil || err2 != nil || gotLo != lo || gotHi != hi {
			t.Errorf("file %d bounds: DuckDB [%s, %s], want [%d, %d]", i, s.Files[i].MinText, s.Files[i].MaxText, lo, hi)
		}
	}

	// A column subset, in a different order than the file's.
	cols := []string{"msg", "id", "attrs"}
	wantSub, err := RowChecksum(recs, cols...)
	if err != nil {
		t.Fatal(err)
	}
	sub := duck.SummarizeWith(files, SummaryOptions{Column: "id", ChecksumColumns: cols})
	if sub.Checksum != wantSub || wantSub == want {
		t.Errorf("checksum over %v: DuckDB %d, Go %d (all columns %d)", cols, sub.Checksum, wantSub, want)
	}
	if sub.Files[1].MinText != "1500" || sub.Files[1].MaxText != "2199" {
		t.Errorf("id bounds of file 1: [%s, %s], want [1500, 2199]", sub.Files[1].MinText, sub.Files[1].MaxText)
	}
}

// explainMismatch finds the first column whose checksum differs, to make a failure
// point at the encoding that drifted.
func explainMismatch(t *testing.T, duck *Duck, rec arrow.RecordBatch, file string) {
	onlyA := t.TempDir() + "/one.parquet"
	writeParquet(t, onlyA, rec)
	for _, f := range rec.Schema().Fields() {
		g, _ := RowChecksum([]arrow.RecordBatch{rec}, f.Name)
		d := duck.SummarizeWith([]string{onlyA}, SummaryOptions{ChecksumColumns: []string{f.Name}})
		if g != d.Checksum {
			row, _ := RowText(rec, 1, f.Name)
			t.Errorf("column %s differs (Go %d, DuckDB %d); Go text of row 1: %q", f.Name, g, d.Checksum, row)
		}
	}
}

func TestDuckDBEmptyAndQuery(t *testing.T) {
	duck := DuckDB(t)
	if s := duck.Summarize(nil); s.Rows != 0 || s.Checksum != 0 || len(s.Files) != 0 {
		t.Errorf("empty summary: %+v", s)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "q.parquet")
	r := rand.New(rand.NewPCG(7, 8))
	rec := sampleRecord(t, 0, 50, r)
	defer rec.Release()
	writeParquet(t, path, rec)
	rows := duck.Query("SELECT count(*) AS n, count(msg) AS msgs, min(id) AS lo FROM read_parquet('" + path + "')")
	if len(rows) != 1 {
		t.Fatalf("rows: %v", rows)
	}
	if got := rows[0]["n"]; got != "50" {
		t.Errorf("count(*) = %#v, want \"50\"", got)
	}
	if got := rows[0]["msgs"]; got != "40" {
		t.Errorf("count(msg) = %#v, want \"40\" (every fifth is null)", got)
	}
	if got := rows[0]["lo"]; got != "-1000" {
		t.Errorf("min(id) = %#v, want \"-1000\"", got)
	}
}
