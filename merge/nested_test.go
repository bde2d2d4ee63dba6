package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestPageBoundedNestedColumns: inputs whose map and list columns span many pages, merged in
// small chunks so the data pass's reads start in the middle of those pages. arrow-go cannot
// seek there (nested.go); the page-bounded path must still give the k-way path's rows.
func TestPageBoundedNestedColumns(t *testing.T) {
	sc := nestedSchema()
	r := rand.New(rand.NewPCG(7, 7))
	dir := t.TempDir()
	var inputs []Input
	const rows = 12_000 // about 4 pages of map data per input (writer.PageBytes is 256 KiB)
	for i := 0; i < 3; i++ {
		rec := nestedRecord(r, sc, rows, int64(i))
		inputs = append(inputs, writeInput(t, dir, sc, rec, 1, rows))
		rec.Release()
	}
	got := map[PathKind][]string{}
	for _, path := range []PathKind{PathKWay, PathPageBounded} {
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(path)), 2),
			RewriteOptions{ForcePath: path, ChunkRows: 700, SpliceMinRows: 100})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, o := range res.Outputs {
			got[path] = append(got[path], readFileRows(t, localFS, o.Path, sc)...)
		}
	}
	if len(got[PathKWay]) != 3*rows {
		t.Fatalf("k-way wrote %d rows, want %d", len(got[PathKWay]), 3*rows)
	}
	diffRows(t, got[PathPageBounded], got[PathKWay])
}

// nestedSchema has a map and a list column beside the usual ones.
func nestedSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// nestedRecord: n rows sorted by timestamp (input i interleaves with the others), each with a
// map of 4 to 8 entries and a list of up to 5 elements, some null.
func nestedRecord(r *rand.Rand, sc *arrow.Schema, n int, i int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	svc := b.Field(1).(*array.StringBuilder)
	mb := b.Field(2).(*array.MapBuilder)
	kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
	lb := b.Field(3).(*array.ListBuilder)
	eb := lb.ValueBuilder().(*array.StringBuilder)
	raw := b.Field(4).(*array.StringBuilder)
	for j := 0; j < n; j++ {
		ts.Append(arrow.Timestamp(int64(j)*3 + i))
		svc.Append(fmt.Sprintf("svc-%d", r.IntN(5)))
		if r.IntN(10) == 0 {
			mb.AppendNull()
		} else {
			mb.Append(true)
			for k := 0; k < 4+r.IntN(5); k++ {
				kb.Append(fmt.Sprintf("key%d", k))
				vb.Append(fmt.Sprintf("value-%d-%d", j, r.Uint32()))
			}
		}
		if r.IntN(7) == 0 {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := 0; k < r.IntN(6); k++ {
				eb.Append(fmt.Sprintf("tag%d", r.IntN(100)))
			}
		}
		raw.Append(fmt.Sprintf("row %d of input %d", j, i))
	}
	return b.NewRecordBatch()
}
