package pqdecode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/parquet-go/parquet-go"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
)

// testSchema: flat columns around a map with nullable values and a list, as the output's
// schema would have them.
func testSchema(tsNullable bool) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: tsNullable},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// testLayout is testSchema's layout: the map's key and value leaves are field 2, the list's
// element field 3.
var testLayout = writer.ValueLayout{LeafField: []int{0, 1, 2, 2, 3, 4}, Flat: []bool{true, true, false, false, true}}

// testRecord: n rows with maps that are null, empty or of up to 6 entries with values of up to
// 3 KB (a 256 KiB page holds a hundred rows or so, so maps run across pages), lists that are
// null, empty or with null elements; nullTS makes row nullTS-1's timestamp null.
func testRecord(r *rand.Rand, sc *arrow.Schema, n, nullTS int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	mb := b.Field(2).(*array.MapBuilder)
	kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
	lb := b.Field(3).(*array.ListBuilder)
	eb := lb.ValueBuilder().(*array.StringBuilder)
	for j := range n {
		if j == nullTS-1 {
			ts.AppendNull()
		} else {
			ts.Append(arrow.Timestamp(int64(j / 3)))
		}
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("svc-%d", r.IntN(5)))
		switch m := r.IntN(8); {
		case j == 500: // one map of 1 MiB: pages of 256 KiB
			mb.Append(true)
			for k := range 4000 {
				kb.Append(fmt.Sprintf("big%d", k))
				vb.Append(strings.Repeat("x", 256))
			}
		case m == 0:
			mb.AppendNull()
		default:
			mb.Append(true)
			for k := range m - 1 {
				kb.Append(fmt.Sprintf("k%d", k))
				if r.IntN(4) == 0 {
					vb.AppendNull()
				} else {
					vb.Append(strings.Repeat(fmt.Sprintf("v%d-%d ", j, k), 1+r.IntN(300)))
				}
			}
		}
		switch e := r.IntN(5); e {
		case 0:
			lb.AppendNull()
		default:
			lb.Append(true)
			for range e - 1 {
				if r.IntN(5) == 0 {
					eb.AppendNull()
				} else {
					eb.Append(fmt.Sprintf("tag%d", r.IntN(50)))
				}
			}
		}
		if r.IntN(10) == 0 {
			b.Field(4).AppendNull()
		} else {
			b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("row %d", j))
		}
	}
	return b.NewRecordBatch()
}

// writeTestFile writes rec in row groups of rowGroupRows rows (the last may be shorter) and
// opens it.
func writeTestFile(t *testing.T, dir string, rec arrow.RecordBatch, rowGroupRows int64) *input.File {
	t.Helper()
	p := filepath.Join(dir, fmt.Sprintf("in-%d.parquet", rowGroupRows))
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	fw, err := pqarrow.NewFileWriter(rec.Schema(), f, writer.ParquetWriterProperties(writer.Options{RowGroupRows: rowGroupRows}), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.WriteBuffered(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	in, err := input.Open(icebergio.LocalFS{}, p, memory.DefaultAllocator, 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return in
}

// rowReaderRows are the rows of each row group of in as parquet-go's own row reader assembles
// them: what the column reading must give.
func rowReaderRows(t *testing.T, in *input.File) [][]parquet.Row {
	t.Helper()
	size, err := in.Size()
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(in.ReaderAt(), size)
	if err != nil {
		t.Fatal(err)
	}
	var groups [][]parquet.Row
	for _, g := range f.RowGroups() {
		rr := g.Rows()
		var rows []parquet.Row
		for {
			buf := make([]parquet.Row, 100)
			n, err := rr.ReadRows(buf)
			rows = append(rows, buf[:n]...)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		_ = rr.Close()
		groups = append(groups, rows)
	}
	return groups
}

// TestSourceReadsTheRowReadersRows: reading columns, the source gives each row group's rows as
// parquet-go's row reader assembles them (every value with its levels, a map's keys and values
// interleaved row by row, null and empty maps and lists, null elements), its batches never cross
// a row group (row groups ending mid-batch, a last row group of one row), whatever the batch
// length, in files written by arrow-go and by parquet-go. Neither writer cuts a row across pages
// (not one page of these files starts inside a row, even under a map of 1 MiB), so rows cut
// across reads of values (nestedReadValues of 1 and 5) stand in for rows across pages: the
// reading goes from one page to the next in the same loop.
func TestSourceReadsTheRowReadersRows(t *testing.T) {
	defer func(n int) { nestedReadValues = n }(nestedReadValues)
	r := rand.New(rand.NewPCG(36, 4))
	sc := testSchema(false)
	rec := testRecord(r, sc, 1201, 0)
	defer rec.Release()
	dir := t.TempDir()
	for _, rgRows := range []int64{400, 7} { // 1201 = 3 x 400 + 1 = 171 x 7 + 4
		arrowIn := writeTestFile(t, dir, rec, rgRows)
		for _, in := range []*input.File{arrowIn, rewriteWithParquetGo(t, arrowIn, rgRows)} {
			want := rowReaderRows(t, in)
			if rgRows == 400 && (len(want) != 4 || len(want[3]) != 1) {
				t.Fatalf("%s: want row groups of 400, 400, 400 and 1 rows, got %d row groups", in.Path, len(want))
			}
			for _, batchRows := range []int64{1, 3, 1000} {
				for _, readValues := range []int{1, 5, 1024} {
					nestedReadValues = readValues
					label := fmt.Sprintf("%s: batches of %d, %d values a read", filepath.Base(in.Path), batchRows, readValues)
					checkSource(t, label, in, want, batchRows)
				}
			}
		}
	}
}

// TestSourceRefusesANullTimestamp: a null timestamp (an input whose timestamp column is
// optional) stops the merge with an error naming the row group and the row, as the row reader
// did, rather than merging the row at time zero (row 24: the 5th of row group 1's first batch).
func TestSourceRefusesANullTimestamp(t *testing.T) {
	r := rand.New(rand.NewPCG(36, 5))
	rec := testRecord(r, testSchema(true), 50, 25)
	defer rec.Release()
	in := writeTestFile(t, t.TempDir(), rec, 20)
	src, err := NewSource(in, testLayout, "timestamp", 8, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for rows := 0; ; {
		b, ok, err := src.Next(context.Background())
		if err != nil {
			if want := "row group 1: timestamp column has a null or missing value in row 4 of the batch"; err.Error() != want {
				t.Fatalf("error %q, want %q", err, want)
			}
			return
		}
		if !ok || rows >= 24 {
			t.Fatalf("read %d rows and no error, want one at row 25", rows+len(b.TS))
		}
		rows += len(b.TS)
	}
}

// TestSourceRefusesAnotherLayout: an input whose columns would not land in the output's fields
// (here a map where the output has a flat column) is refused when opened, naming the input.
func TestSourceRefusesAnotherLayout(t *testing.T) {
	rec := testRecord(rand.New(rand.NewPCG(36, 6)), testSchema(false), 10, 0)
	defer rec.Release()
	in := writeTestFile(t, t.TempDir(), rec, 10)
	other := writer.ValueLayout{LeafField: []int{0, 1, 2, 3, 4, 5}, Flat: []bool{true, true, true, true, false, true}}
	_, err := NewSource(in, other, "timestamp", 8, 64<<10)
	if err == nil || !strings.Contains(err.Error(), in.Path) || !strings.Contains(err.Error(), "not laid out as the output's") {
		t.Fatalf("error %v, want one naming %s and the layouts", err, in.Path)
	}
}

// checkSource reads in with a Source of batchRows and compares each batch with want's rows.
func checkSource(t *testing.T, label string, in *input.File, want [][]parquet.Row, batchRows int64) {
	t.Helper()
	src, err := NewSource(in, testLayout, "timestamp", batchRows, 64<<10)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	defer src.Close()
	g, i := 0, 0 // row group and row of the next row
	for {
		b, ok, err := src.Next(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if !ok {
			break
		}
		for g < len(want) && i == len(want[g]) {
			g, i = g+1, 0
		}
		if g == len(want) || i+len(b.TS) > len(want[g]) || len(b.TS) > int(batchRows) {
			t.Fatalf("%s: a batch of %d rows at row %d of row group %d crosses its end", label, len(b.TS), i, g)
		}
		for j := range b.TS {
			var got parquet.Row
			for k := range testLayout.Flat {
				got = append(got, b.Cols.Field(k, int64(j), int64(j+1))...)
			}
			if w := want[g][i]; !got.Equal(w) || b.TS[j] != w[0].Int64() {
				t.Fatalf("%s: row %d of row group %d:\n got  %v (timestamp %d)\n want %v", label, i, g, got, b.TS[j], w)
			}
			i++
		}
	}
	if g < len(want)-1 || i != len(want[len(want)-1]) {
		t.Fatalf("%s: ended at row %d of row group %d", label, i, g)
	}
}

// rewriteWithParquetGo writes in's rows again with parquet-go's writer, in row groups of
// rowGroupRows and pages of 4 KiB, which it cuts inside rows.
func rewriteWithParquetGo(t *testing.T, in *input.File, rowGroupRows int64) *input.File {
	t.Helper()
	size, _ := in.Size()
	f, err := parquet.OpenFile(in.ReaderAt(), size)
	if err != nil {
		t.Fatal(err)
	}
	p := strings.TrimSuffix(in.Path, ".parquet") + "-pqgo.parquet"
	out, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(out, f.Schema(), parquet.PageBufferSize(4<<10), parquet.MaxRowsPerRowGroup(rowGroupRows))
	for _, g := range rowReaderRows(t, in) {
		if _, err := w.WriteRows(g); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_ = out.Close()
	in2, err := input.Open(icebergio.LocalFS{}, p, memory.DefaultAllocator, 4096)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in2.Close() })
	return in2
}
