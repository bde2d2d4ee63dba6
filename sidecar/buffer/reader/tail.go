package reader

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/search"
)

// TailOptions configure Tail (`siglake tail`).
type TailOptions struct {
	Table string
	// Query is the filter and the columns; its After is ignored (Tail reads the table's marks).
	Query Query
	// Lines is how many of the newest rows (by timestamp) are printed first.
	Lines int
	// Since bounds how far back the lake is scanned for them: rows older than now-Since are
	// left out of the lake and the buffer alike. 0 scans the whole table.
	Since time.Duration
	// Follow keeps printing rows as they are sealed, polling the buffers every Interval.
	Follow   bool
	Interval time.Duration
	// JSON prints one JSON object per row instead of text.
	JSON bool
	// Attempts bounds the consistent read's retries after refusals.
	Attempts int
	Now      func() time.Time
}

// Tail prints the newest rows of a table from the lake plus the buffers without duplicates (one
// ReadConsistent), then with Follow the rows sealed since, as they come. Warnings go to errOut.
func Tail(ctx context.Context, load func(context.Context) (*table.Table, error), bs Buffers, o TailOptions, out, errOut io.Writer) error {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Lines <= 0 {
		o.Lines = 20
	}
	q, err := o.query()
	if err != nil {
		return err
	}
	fmtRow := formatter(o.JSON)
	var top *rowHeap
	add := func(rec arrow.RecordBatch) error {
		return eachRow(rec, func(ts int64) bool { return top.keeps(ts, o.Lines) }, fmtRow, func(ts int64, line string) { top.add(ts, line, o.Lines) })
	}
	lakeRead := func(_ int, t *table.Table) error {
		top = &rowHeap{}
		if t == nil {
			return nil
		}
		return newestInLake(ctx, t, q, o.Lines, func(rec arrow.RecordBatch, i int) {
			if ts := rowMicros(rec, i); top.keeps(ts, o.Lines) {
				top.add(ts, fmtRow(rec, i), o.Lines)
			}
		})
	}
	through, err := ReadConsistent(ctx, load, bs, o.Table, q, max(1, o.Attempts), lakeRead, func(_ int, rec arrow.RecordBatch) error { return add(rec) })
	if errors.Is(err, ErrNoTable) && o.Follow {
		err = nil // nothing yet: follow from the first segment sealed
	}
	if through == nil {
		through = Marks{}
	}
	if err != nil && unreachable(err) && !o.Follow {
		fmt.Fprintf(errOut, "siglake tail: %v\nsiglake tail: showing committed rows only: the rows of the last commit batch (up to commitBatch.maxAgeSecs) may be missing\n", err)
		t, lerr := load(ctx)
		if lerr != nil {
			return lerr
		}
		if t == nil {
			return fmt.Errorf("table %s is not in the catalog", o.Table)
		}
		if err = lakeRead(1, t); err == nil {
			top.print(out)
		}
		return err
	}
	if err != nil {
		return err
	}
	top.print(out)
	if !o.Follow {
		return nil
	}
	return follow(ctx, bs, o, q, through, fmtRow, out, errOut)
}

// query is o's query, from no earlier than Since ago.
func (o TailOptions) query() (Query, error) {
	q := o.Query
	if o.Since <= 0 {
		return q, nil
	}
	since := o.Now().Add(-o.Since).UTC().Truncate(time.Microsecond)
	from, _, err := q.Filter.Range()
	if err != nil {
		return q, err
	}
	if from == nil || *from < since.UnixMicro() {
		q.Filter.From = since.Format(time.RFC3339Nano)
	}
	return q, nil
}

// follow prints the rows sealed above through as they come, until ctx ends.
func follow(ctx context.Context, bs Buffers, o TailOptions, q Query, through Marks, fmtRow func(arrow.RecordBatch, int) string, out, errOut io.Writer) error {
	tick := time.NewTicker(max(10*time.Millisecond, o.Interval))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		q.After = through
		next, err := bs.Read(ctx, o.Table, q, func(rec arrow.RecordBatch) error {
			return eachRow(rec, nil, fmtRow, func(_ int64, line string) { fmt.Fprintln(out, line) })
		})
		var ref *RefusedError
		switch {
		case errors.As(err, &ref):
			// Segments were committed and left the buffer between two polls: their rows are in the
			// lake, not shown here. Say so, and go on from the table's marks.
			fmt.Fprintf(errOut, "siglake tail: fell behind: %s; rows committed meanwhile are in the lake but not shown (run siglake tail again to see them; SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN makes this rarer)\n", ref.Message)
			through.Advance(ref.Marks)
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrNoTable):
			// Nothing sealed or committed yet.
		case errors.Is(err, ErrCutShort) || unreachable(err):
			fmt.Fprintf(errOut, "siglake tail: %v (retrying)\n", err)
		case err != nil:
			return err
		default:
			through = next
		}
	}
}

// unreachable reports an error reaching a buffer at all (nothing answered).
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}

// newestInLake hands fn the newest n rows of t's current snapshot that match q, newest first,
// read the way `siglake search --order desc --limit n` reads them: files pruned by manifest
// bounds and the search metadata, opened newest first, and only until n rows are found.
func newestInLake(ctx context.Context, t *table.Table, q Query, n int, fn func(rec arrow.RecordBatch, row int)) error {
	if t.CurrentSnapshot() == nil {
		return nil
	}
	sq := search.Query{From: q.Filter.From, To: q.Filter.To, Where: q.Filter.Where, Limit: n, Desc: true, Columns: q.Columns}
	cols, err := search.Columns(t, sq, search.Options{})
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Identifier(), err)
	}
	_, err = search.Run(ctx, t, sq, search.Options{}, func(rec arrow.RecordBatch, row int) (int64, error) {
		// rec also holds the columns the filter tested; print the asked ones only.
		out := project(rec, cols)
		fn(out, row)
		out.Release()
		return 0, nil
	})
	if err != nil {
		return fmt.Errorf("table %s: %w", t.Identifier(), err)
	}
	return nil
}

// project is rec with only cols, in their order (those it has).
func project(rec arrow.RecordBatch, cols []string) arrow.RecordBatch {
	fields := make([]arrow.Field, 0, len(cols))
	arrs := make([]arrow.Array, 0, len(cols))
	for _, c := range cols {
		if idx := rec.Schema().FieldIndices(c); len(idx) == 1 {
			fields = append(fields, rec.Schema().Field(idx[0]))
			arrs = append(arrs, rec.Column(idx[0]))
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, rec.NumRows())
}

// rowMicros is row i's timestamp in microseconds (0 without one).
func rowMicros(rec arrow.RecordBatch, i int) int64 {
	idx := rec.Schema().FieldIndices(lake.TimestampColumn)
	if len(idx) != 1 {
		return 0
	}
	ts, ok := rec.Column(idx[0]).(*array.Timestamp)
	if !ok || !ts.IsValid(i) {
		return 0
	}
	return ts.Value(i).ToTime(ts.DataType().(*arrow.TimestampType).Unit).UnixMicro()
}

// eachRow formats the rows of rec that keep (nil: all) takes by their timestamp (microseconds).
func eachRow(rec arrow.RecordBatch, keep func(ts int64) bool, format func(arrow.RecordBatch, int) string, fn func(ts int64, line string)) error {
	idx := rec.Schema().FieldIndices(lake.TimestampColumn)
	var ts *array.Timestamp
	var unit arrow.TimeUnit
	if len(idx) == 1 {
		ts, _ = rec.Column(idx[0]).(*array.Timestamp)
		if ts != nil {
			unit = ts.DataType().(*arrow.TimestampType).Unit
		}
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		var us int64
		if ts != nil && ts.IsValid(i) {
			us = ts.Value(i).ToTime(unit).UnixMicro()
		}
		if keep == nil || keep(us) {
			fn(us, format(rec, i))
		}
	}
	return nil
}

// formatter renders a row as text (timestamp first, then column=value, logfmt quoting, nulls
// left out) or as a JSON object in column order.
func formatter(asJSON bool) func(arrow.RecordBatch, int) string {
	return func(rec arrow.RecordBatch, i int) string {
		var b strings.Builder
		if asJSON {
			b.WriteByte('{')
		}
		first := true
		for c, f := range rec.Schema().Fields() {
			col := rec.Column(c)
			if col.IsNull(i) {
				continue
			}
			var text string
			if ts, ok := col.(*array.Timestamp); ok {
				text = ts.Value(i).ToTime(ts.DataType().(*arrow.TimestampType).Unit).UTC().Format("2006-01-02T15:04:05.000000Z")
			}
			if asJSON {
				if !first {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(f.Name)
				b.Write(k)
				b.WriteByte(':')
				var v []byte
				switch m, isMap := col.(*array.Map); {
				case text != "":
					v, _ = json.Marshal(text)
				case isMap:
					v = mapJSON(m, i)
				default:
					v, _ = json.Marshal(col.GetOneForMarshal(i))
				}
				b.Write(v)
				first = false
				continue
			}
			switch {
			case text != "" && f.Name == lake.TimestampColumn:
			case text != "":
				text = f.Name + "=" + text
			default:
				text = f.Name + "=" + logfmtValue(col, i)
			}
			if !first {
				b.WriteByte(' ')
			}
			b.WriteString(text)
			first = false
		}
		if asJSON {
			b.WriteByte('}')
		}
		return b.String()
	}
}

// mapJSON renders entry i of a map column as a JSON object in entry order (keys as text).
func mapJSON(m *array.Map, i int) []byte {
	start, end := m.ValueOffsets(i)
	keys, items := m.Keys(), m.Items()
	var b strings.Builder
	b.WriteByte('{')
	for j := start; j < end; j++ {
		if j > start {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(keys.ValueStr(int(j)))
		b.Write(k)
		b.WriteByte(':')
		if items.IsNull(int(j)) {
			b.WriteString("null")
			continue
		}
		v, _ := json.Marshal(items.GetOneForMarshal(int(j)))
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String())
}

func logfmtValue(col arrow.Array, i int) string {
	var s string
	switch a := col.(type) {
	case *array.String:
		s = a.Value(i)
	case *array.LargeString:
		s = a.Value(i)
	case *array.Map:
		j := string(mapJSON(a, i))
		if strings.ContainsAny(j, " \t\n") {
			return strconv.Quote(j)
		}
		return j
	default:
		if v, err := json.Marshal(col.GetOneForMarshal(i)); err == nil {
			s = string(v)
		} else {
			s = col.ValueStr(i)
		}
		if !strings.ContainsAny(s, " \"=") {
			return s
		}
		return strconv.Quote(s)
	}
	if s == "" || strings.ContainsAny(s, " \"=\t\n") {
		return strconv.Quote(s)
	}
	return s
}

// rowHeap keeps the newest rows: a min-heap on (timestamp, arrival) of at most n entries.
type rowHeap struct {
	rows []tailRow
	seq  int
}

type tailRow struct {
	ts   int64
	seq  int
	line string
}

func (h *rowHeap) Len() int { return len(h.rows) }
func (h *rowHeap) Less(i, j int) bool {
	if h.rows[i].ts != h.rows[j].ts {
		return h.rows[i].ts < h.rows[j].ts
	}
	return h.rows[i].seq < h.rows[j].seq
}
func (h *rowHeap) Swap(i, j int) { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }
func (h *rowHeap) Push(x any)    { h.rows = append(h.rows, x.(tailRow)) }
func (h *rowHeap) Pop() any {
	x := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return x
}

// keeps says whether a row at ts would be among the newest n (formatting it is the cost).
func (h *rowHeap) keeps(ts int64, n int) bool { return h.Len() < n || ts >= h.rows[0].ts }

func (h *rowHeap) add(ts int64, line string, n int) {
	h.seq++
	heap.Push(h, tailRow{ts, h.seq, line})
	if h.Len() > n {
		heap.Pop(h)
	}
}

func (h *rowHeap) print(out io.Writer) {
	rows := append([]tailRow(nil), h.rows...)
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].ts != rows[j].ts {
			return rows[i].ts < rows[j].ts
		}
		return rows[i].seq < rows[j].seq
	})
	for _, r := range rows {
		fmt.Fprintln(out, r.line)
	}
}
