// Package output prints search results as a table (aligned, streaming after its first block),
// JSON lines or CSV.
package output

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/siglake/siglake/sidecar/rows"
)

// Formats are the output formats of Writer.
var Formats = []string{"table", "json", "csv"}

// Writer prints rows as a table (aligned text, a header line), JSON lines (one object per row) or
// CSV (a header line, then RFC 4180 records).
type Writer struct {
	format  string
	columns []string
	table   *tableWriter
	csv     *csv.Writer
	out     io.Writer
	idx     map[*arrow.Schema][]int // per record schema, the column of each output column (-1: absent)
	line    []string
}

// NewWriter starts output of columns in format.
func NewWriter(w io.Writer, format string, columns []string) (*Writer, error) {
	wr := &Writer{format: format, columns: columns, out: w, idx: map[*arrow.Schema][]int{}, line: make([]string, len(columns))}
	switch format {
	case "table":
		wr.table = &tableWriter{out: w, header: columns}
		return wr, nil
	case "csv":
		wr.csv = csv.NewWriter(w)
		return wr, wr.csv.Write(columns)
	case "json":
		return wr, nil
	}
	return nil, fmt.Errorf("--format %q: accepted: table, json, csv", format)
}

// tableBlock is how many rows the table holds before it prints: the column widths are fixed
// from the header and the first block, so output streams and memory stays at one block.
const tableBlock = 1000

// tableWriter prints aligned columns two spaces apart. Rows after the first block are padded to
// the first block's widths; a longer value pushes the rest of its line, never the next lines.
type tableWriter struct {
	out    io.Writer
	header []string
	widths []int // nil until the first block is printed
	block  [][]string
	buf    bytes.Buffer
}

func (t *tableWriter) row(cells []string) error {
	if t.widths == nil {
		t.block = append(t.block, slices.Clone(cells))
		if len(t.block) < tableBlock {
			return nil
		}
		return t.flush()
	}
	return t.print(cells)
}

// flush fixes the widths if they are not yet and prints what is held.
func (t *tableWriter) flush() error {
	if t.widths == nil {
		t.widths = make([]int, len(t.header))
		for _, line := range append([][]string{t.header}, t.block...) {
			for i, c := range line {
				t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c))
			}
		}
		if err := t.print(t.header); err != nil {
			return err
		}
	}
	for _, line := range t.block {
		if err := t.print(line); err != nil {
			return err
		}
	}
	t.block = nil
	return nil
}

func (t *tableWriter) print(cells []string) error {
	t.buf.Reset()
	for i, c := range cells {
		t.buf.WriteString(c)
		if i < len(cells)-1 {
			t.buf.WriteString(strings.Repeat(" ", max(t.widths[i]-utf8.RuneCountInString(c), 0)+2))
		}
	}
	t.buf.WriteByte('\n')
	_, err := t.out.Write(t.buf.Bytes())
	return err
}

func (w *Writer) columnsOf(sc *arrow.Schema) []int {
	if idx, ok := w.idx[sc]; ok {
		return idx
	}
	idx := make([]int, len(w.columns))
	for i, c := range w.columns {
		idx[i] = -1
		if f := sc.FieldIndices(c); len(f) == 1 {
			idx[i] = f[0]
		}
	}
	w.idx[sc] = idx
	return idx
}

// Row prints row i of rec and returns the size of its values as text (ReturnedBytes).
func (w *Writer) Row(rec arrow.RecordBatch, i int) (int64, error) {
	idx := w.columnsOf(rec.Schema())
	var n int64
	if w.format == "json" {
		var b bytes.Buffer
		b.WriteByte('{')
		for k, c := range w.columns {
			if k > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(c)
			b.Write(name)
			b.WriteByte(':')
			if idx[k] < 0 || rec.Column(idx[k]).IsNull(i) {
				b.WriteString("null")
				continue
			}
			v, text, err := jsonValue(rec.Column(idx[k]), i)
			if err != nil {
				return 0, fmt.Errorf("column %s: %w", c, err)
			}
			n += int64(len(text))
			b.Write(v)
		}
		b.WriteString("}\n")
		_, err := w.out.Write(b.Bytes())
		return n, err
	}
	for k := range w.columns {
		w.line[k] = ""
		if idx[k] >= 0 && !rec.Column(idx[k]).IsNull(i) {
			w.line[k] = textValue(rec.Column(idx[k]), i)
		}
		n += int64(len(w.line[k]))
	}
	if w.csv != nil {
		return n, w.csv.Write(w.line)
	}
	return n, w.table.row(w.line)
}

// Close flushes what is buffered.
func (w *Writer) Close() error {
	switch {
	case w.table != nil:
		return w.table.flush()
	case w.csv != nil:
		w.csv.Flush()
		return w.csv.Error()
	}
	return nil
}

// textValue is a non-null value as text: timestamps in RFC 3339, strings as is, everything else
// as Arrow prints it (maps and lists as JSON).
func textValue(a arrow.Array, i int) string {
	switch v := a.(type) {
	case *array.Timestamp:
		return rows.FormatMicros(v.Value(i).ToTime(v.DataType().(*arrow.TimestampType).Unit).UnixMicro())
	case *array.String:
		return v.Value(i)
	case *array.LargeString:
		return v.Value(i)
	case *array.Int64:
		return strconv.FormatInt(v.Value(i), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(v.Value(i)), 10)
	case *array.Boolean:
		return strconv.FormatBool(v.Value(i))
	}
	return a.ValueStr(i)
}

// jsonValue is a non-null value as JSON, and its text (textValue).
func jsonValue(a arrow.Array, i int) ([]byte, string, error) {
	text := textValue(a, i)
	switch a.(type) {
	case *array.Timestamp, *array.String, *array.LargeString:
		b, err := json.Marshal(text)
		return b, text, err
	}
	b, err := json.Marshal(a.GetOneForMarshal(i))
	return b, text, err
}
