package writer

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icebergio "github.com/apache/iceberg-go/io"
)

// writtenFile writes rows rows of three columns in row groups of rgRows with WriteSorted and
// returns the file's bytes and footer.
func writtenFile(t *testing.T, rows, rgRows int) (string, []byte, *metadata.FileMetaData) {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond}},
		{Name: "service", Type: arrow.BinaryTypes.String},
		{Name: "raw", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := 0; i < rows; i++ {
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(1_700_000_000_000_000 + int64(i)))
		b.Field(1).(*array.StringBuilder).Append("svc")
		b.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("line %d", i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	p := filepath.Join(t.TempDir(), "in.parquet")
	if _, err := WriteSorted(context.Background(), icebergio.LocalFS{}, func(int) string { return p }, sc,
		[]arrow.RecordBatch{rec}, Options{RowGroupRows: int64(rgRows)}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return p, data, pf.MetaData()
}

// TestAppendRowGroupOrdinalOverflow: Parquet's row-group ordinal is an
// int16; a file that would need a larger one fails with an error saying so
// instead of writing a wrapped ordinal.
func TestAppendRowGroupOrdinalOverflow(t *testing.T) {
	p, b, md := writtenFile(t, 100, 100)
	src := RowGroupSource{Name: p, Reader: bytes.NewReader(b), Size: int64(len(b)), Meta: md}
	body := *md.FileMetaData
	f := &splicedFile{path: "out.parquet", cw: &CountingWriter{W: io.Discard}, md: &metadata.FileMetaData{FileMetaData: &body, Schema: md.Schema}}
	body.RowGroups = slices.Repeat(md.FileMetaData.RowGroups[:1], 32767)
	if err := f.appendRowGroup([]RowGroupSource{src}, 0, nil, true); err != nil {
		t.Fatalf("row group 32768 (ordinal 32767): %v", err)
	}
	err := f.appendRowGroup([]RowGroupSource{src}, 0, nil, true)
	if err == nil || !strings.Contains(err.Error(), "row groups in one file") {
		t.Fatalf("row group 32769: %v", err)
	}
}

// TestAppendRowGroupRefusesExternalChunk: a row group with a column chunk in
// another file is never copied, should a splice plan ever let one through
// (merge's TestSpliceExternalChunkNotCopied shows the plan does not).
func TestAppendRowGroupRefusesExternalChunk(t *testing.T) {
	p, b, md := writtenFile(t, 2000, 1000)
	other := "elsewhere.parquet"
	md.RowGroups[1].Columns[2].FilePath = &other
	f := &splicedFile{cw: &CountingWriter{W: io.Discard}, md: md}
	err := f.appendRowGroup([]RowGroupSource{{Name: p, Reader: bytes.NewReader(b), Size: int64(len(b)), Meta: md}}, 1, nil, false)
	if err == nil || !strings.Contains(err.Error(), "another file") {
		t.Fatalf("copying a row group with an external chunk: %v", err)
	}
}
