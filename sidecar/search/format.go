package search

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// Formats are the output formats of Writer.
var Formats = []string{"table", "json", "csv"}

// Writer prints rows as a table (aligned text, a header line), JSON lines (one object per row) or
// CSV (a header line, then RFC 4180 records).
type Writer struct {
	format  string
	columns []string
	tw      *tabwriter.Writer
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
		wr.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		_, err := fmt.Fprintln(wr.tw, joinTabs(columns))
		return wr, err
	case "csv":
		wr.csv = csv.NewWriter(w)
		return wr, wr.csv.Write(columns)
	case "json":
		return wr, nil
	}
	return nil, fmt.Errorf("--format %q: accepted: table, json, csv", format)
}

func joinTabs(s []string) string {
	var b bytes.Buffer
	for i, v := range s {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(v)
	}
	return b.String()
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
	_, err := fmt.Fprintln(w.tw, joinTabs(w.line))
	return n, err
}

// Close flushes what is buffered.
func (w *Writer) Close() error {
	switch {
	case w.tw != nil:
		return w.tw.Flush()
	case w.csv != nil:
		w.csv.Flush()
		return w.csv.Error()
	}
	return nil
}

// formatMicros renders µs since the epoch as RFC 3339 UTC with six fractional digits.
func formatMicros(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02T15:04:05.000000Z")
}

// textValue is a non-null value as text: timestamps in RFC 3339, strings as is, everything else
// as Arrow prints it (maps and lists as JSON).
func textValue(a arrow.Array, i int) string {
	switch v := a.(type) {
	case *array.Timestamp:
		return formatMicros(v.Value(i).ToTime(v.DataType().(*arrow.TimestampType).Unit).UnixMicro())
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
