package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge/input"
)

// testIceSchema is a log table: timestamp, group column, free text, and two
// optional columns, the last one "added later" (older inputs lack it).
func testIceSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "service", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "raw", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "level", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 5, Name: "trace_id", Type: iceberg.PrimitiveTypes.String},
	)
}

func testArrowSchema(t testing.TB) *arrow.Schema {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(testIceSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

var (
	words    = []string{"error", "timeout", "GET", "POST", "/api/v1/users", "connection", "refused", "ok", "200", "500", "user=alice", "user=bob", "latency_ms=12", "äöü", "retry"}
	services = []string{"api", "db", "web", "auth", "queue"}
)

// randRecord returns n rows with timestamps from base upward in small random
// steps (sorted=true) or in random order; withTrace=false drops the last
// column to model an input written before it was added.
func randRecord(r *rand.Rand, sc *arrow.Schema, n int, base int64, spread int64, sorted, withTrace bool) arrow.RecordBatch {
	fields := sc.Fields()
	if !withTrace {
		fields = fields[:4]
	}
	rsc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, rsc)
	defer b.Release()
	ts := base
	for i := 0; i < n; i++ {
		if sorted {
			if r.IntN(3) != 0 { // many identical timestamps
				ts += r.Int64N(spread + 1)
			}
		} else {
			ts = base + r.Int64N(spread*int64(n)+1)
		}
		b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(ts))
		if r.IntN(10) == 0 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(services[r.IntN(len(services))])
		}
		if r.IntN(20) == 0 {
			b.Field(2).AppendNull()
		} else {
			k := 1 + r.IntN(6)
			parts := make([]string, k)
			for j := range parts {
				parts[j] = words[r.IntN(len(words))]
			}
			b.Field(2).(*array.StringBuilder).Append(strings.Join(parts, " ") + fmt.Sprintf(" #%d", r.IntN(1000)))
		}
		if r.IntN(4) == 0 {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.Int32Builder).Append(int32(r.IntN(6)))
		}
		if withTrace {
			if r.IntN(3) == 0 {
				b.Field(4).AppendNull()
			} else {
				b.Field(4).(*array.StringBuilder).Append(fmt.Sprintf("tr-%04x", r.IntN(500)))
			}
		}
	}
	return b.NewRecordBatch()
}

// rowStrings renders every row of rec (conformed to sc) as one string.
func rowStrings(t testing.TB, rec arrow.RecordBatch, sc *arrow.Schema) []string {
	t.Helper()
	c, err := input.Conform(rec, sc, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	out := make([]string, c.NumRows())
	for i := range out {
		var sb strings.Builder
		for j := 0; j < int(c.NumCols()); j++ {
			col := c.Column(j)
			if col.IsNull(i) {
				sb.WriteString("∅")
			} else if ta, ok := col.(*array.Timestamp); ok {
				fmt.Fprintf(&sb, "%020d", int64(ta.Value(i)))
			} else {
				sb.WriteString(col.ValueStr(i))
			}
			sb.WriteByte('|')
		}
		out[i] = sb.String()
	}
	return out
}

// readFileRows reads a whole Parquet file through FileIO as row strings.
func readFileRows(t testing.TB, fs icebergio.IO, path string, sc *arrow.Schema) []string {
	t.Helper()
	in, err := input.Open(fs, path, memory.DefaultAllocator, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	rr, err := in.Arrow.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	var rows []string
	for rr.Next() {
		rows = append(rows, rowStrings(t, rr.RecordBatch(), sc)...)
	}
	if err := rr.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return rows
}

func rowTs(row string) string { return row[:strings.IndexByte(row, '|')] }

// pathGen returns a newPath function writing under dir with proper names.
func pathGen(dir string, gen int) func(int) string {
	return func(int) string { return filepath.Join(dir, DataFileName(gen)) }
}

var localFS icebergio.WriteFileIO = icebergio.LocalFS{}

// disjointInputs writes n time-disjoint generation-0 inputs of 3,000 random rows each, in row
// groups of 1,000, into dir: the splice tests' usual bin.
func disjointInputs(t *testing.T, dir string, sc *arrow.Schema, r *rand.Rand, n int) []Input {
	t.Helper()
	var inputs []Input
	next := int64(1_700_000_000_000_000)
	for i := 0; i < n; i++ {
		rec := randRecord(r, sc, 3000, next+100, 3, true, true)
		next = lastTs(rec)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 0, 1000))
		rec.Release()
	}
	return inputs
}

// recordBytes is the size of rec's buffers.
func recordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, c := range rec.Columns() {
		for _, b := range c.Data().Buffers() {
			if b != nil {
				n += int64(b.Len())
			}
		}
	}
	return n
}

// long reports whether SIGLAKE_LONG=1 asks for the long versions of tests.
func long() bool { return os.Getenv("SIGLAKE_LONG") == "1" }

func releaseAll(recs []arrow.RecordBatch) {
	for _, r := range recs {
		if r != nil {
			r.Release()
		}
	}
}
