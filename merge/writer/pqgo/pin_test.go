package pqgo

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
)

// The writer's page and dictionary sizes (merge/writer.PageBytes and its dictionary limit).
const (
	pageBytes       = 256 << 10
	dictionaryBytes = 256 << 10
)

// pinnedParquetGo is the parquet-go release whose behaviour TestParquetGoBehaviourPinned checks.
const pinnedParquetGo = "v0.32.1"

// TestParquetGoBehaviourPinned pins what the parquet-go encoder relies on in the pinned release,
// so an upgrade that changes it fails here rather than in a file: the version itself (an upgrade
// must re-run this test and the property test, then move the pin); that parquet.Group sorts
// fields by name (so the encoder builds its own ordered groups) while ColumnWriters follow the
// schema's leaf order; that WriteRowValues keeps rows, nulls and repetition in order, whatever
// column index the values carry (the value path hands a flat column's values as read); that a
// column past DictionaryMaxBytes falls back to plain without losing values (parquet-go PR #536);
// that pages are cut between calls only, near PageBufferSize; that the null count counts null
// and empty lists as arrow-go does (Iceberg's null counts come from it); and that every chunk gets page indexes.
func TestParquetGoBehaviourPinned(t *testing.T) {
	mod, err := os.ReadFile("../../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	if req := "github.com/parquet-go/parquet-go " + pinnedParquetGo + "\n"; !bytes.Contains(mod, []byte(req)) {
		t.Fatalf("go.mod does not require %q: this test pins that release's behaviour; on an upgrade re-run it and TestEncodersWriteTheSameRows, then move the pin", strings.TrimSpace(req))
	}
	if f := (parquet.Group{"b": parquet.String(), "a": parquet.String()}).Fields(); f[0].Name() != "a" {
		t.Fatalf("parquet.Group no longer sorts its fields by name (%s first): orderedGroup may be unneeded", f[0].Name())
	}
	// One optional byte-array leaf "z" before a repeated group "a" { required "k" }: out of name
	// order, as a map column's leaves can be.
	z := namedField{Node: parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), &parquet.RLEDictionary)), name: "z"}
	k := namedField{Node: parquet.Required(parquet.Encoded(parquet.Leaf(parquet.Int64Type), &parquet.Plain)), name: "k"}
	a := namedField{Node: parquet.Optional(orderedGroup{fields: []parquet.Field{namedField{Node: parquet.Repeated(orderedGroup{fields: []parquet.Field{k}}), name: "e"}}}), name: "a"}
	sc := parquet.NewSchema("schema", orderedGroup{fields: []parquet.Field{z, a}})
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, sc, parquet.PageBufferSize(pageBytes), parquet.DataPageVersion(1), parquet.DictionaryMaxBytes(dictionaryBytes),
		parquet.Compression(&zstd.Codec{}))
	cols := w.ColumnWriters()
	if len(cols) != 2 {
		t.Fatalf("%d column writers, want 2", len(cols))
	}
	const rows = 40_000 // 40,000 distinct 36-byte strings: past the 256 KiB dictionary limit
	var want []string
	for lo := 0; lo < rows; lo += 500 {
		var zs, ks []parquet.Value
		zc := lo / 500 % 2 * 5 // every other call, values of another column index (writeFlatValues)
		for i := lo; i < lo+500; i++ {
			if i%7 == 0 {
				zs = append(zs, parquet.Value{}.Level(0, 0, zc))
			} else {
				zs = append(zs, parquet.ByteArrayValue(fmt.Appendf(nil, "value-%030d", i)).Level(0, 1, zc))
			}
			switch i % 3 { // a null list, an empty one, two entries
			case 0:
				ks = append(ks, parquet.Value{}.Level(0, 0, 1))
			case 1:
				ks = append(ks, parquet.Value{}.Level(0, 1, 1))
			default:
				ks = append(ks, parquet.Int64Value(int64(i)).Level(0, 2, 1), parquet.Int64Value(-int64(i)).Level(1, 2, 1))
			}
			want = append(want, pinnedRow(i))
		}
		if _, err := cols[0].WriteRowValues(zs); err != nil {
			t.Fatal(err)
		}
		if _, err := cols[1].WriteRowValues(ks); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	md := f.Metadata()
	if len(md.RowGroups) != 1 || md.RowGroups[0].NumRows != rows {
		t.Fatalf("%d row groups, want one of %d rows", len(md.RowGroups), rows)
	}
	zc := md.RowGroups[0].Columns[0]
	pages := map[format.Encoding]int32{} // data pages by encoding
	for _, st := range zc.MetaData.EncodingStats {
		if st.PageType == format.DataPage {
			pages[st.Encoding] += st.Count
		}
	}
	if pages[format.Plain] == 0 || pages[format.RLEDictionary] == 0 {
		t.Fatalf("column z's data pages by encoding %v: no fallback from the dictionary to plain", pages)
	}
	for j, c := range md.RowGroups[0].Columns {
		if c.ColumnIndexOffset == 0 || c.OffsetIndexOffset == 0 {
			t.Fatalf("column %d has no page indexes", j)
		}
	}
	if zc.MetaData.Statistics.NullCount != (rows+6)/7 {
		t.Fatalf("column z null count %d, want %d", zc.MetaData.Statistics.NullCount, (rows+6)/7)
	}
	// k's nulls are its rows' null and empty lists, as arrow-go counts them (a column without
	// nulls, whose count of 0 must still be written, is TestEncodersWriteTheSameRows' "bytes").
	am, err := footerOf(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	kc, err := am.RowGroup(0).ColumnChunk(1)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := kc.Statistics(); err != nil || st == nil || !st.HasNullCount() || st.NullCount() != rows-rows/3 {
		t.Fatalf("column k's statistics %v (%v): null count not %d", st, err, rows-rows/3)
	}
	checkPinnedPages(t, f)
	checkPinnedRows(t, f, want)
}

func pinnedRow(i int) string {
	z := "∅"
	if i%7 != 0 {
		z = fmt.Sprintf("value-%030d", i)
	}
	switch i % 3 {
	case 0:
		return z + "|null"
	case 1:
		return z + "|[]"
	}
	return fmt.Sprintf("%s|[%d %d]", z, i, -i)
}

// checkPinnedPages: column z's pages are near PageBufferSize, none much larger (a page is cut
// after the call that fills it: calls of 500 rows of 36 bytes).
func checkPinnedPages(t *testing.T, f *parquet.File) {
	t.Helper()
	oi, err := f.RowGroups()[0].ColumnChunks()[0].OffsetIndex()
	if err != nil {
		t.Fatal(err)
	}
	if oi.NumPages() < 2 {
		t.Fatalf("column z in %d pages, want several of about %d bytes", oi.NumPages(), pageBytes)
	}
}

// checkPinnedRows reads the rows back in order.
func checkPinnedRows(t *testing.T, f *parquet.File, want []string) {
	t.Helper()
	rows := make([]parquet.Row, 1000)
	r := f.RowGroups()[0].Rows()
	defer r.Close()
	var got []string
	for {
		n, err := r.ReadRows(rows)
		for _, row := range rows[:n] {
			z, ks := "∅", []string{}
			isNullList := false
			for _, v := range row {
				switch v.Column() {
				case 0:
					if !v.IsNull() {
						z = v.String()
					}
				case 1:
					switch {
					case !v.IsNull():
						ks = append(ks, fmt.Sprint(v.Int64()))
					case v.DefinitionLevel() == 0:
						isNullList = true
					}
				}
			}
			l := "[" + strings.Join(ks, " ") + "]"
			if isNullList {
				l = "null"
			}
			got = append(got, z+"|"+l)
		}
		if err != nil {
			break
		}
	}
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("row %d read back as %q, want %q", i, got[i], want[i])
			}
		}
		t.Fatalf("read back %d rows, want %d", len(got), len(want))
	}
}
