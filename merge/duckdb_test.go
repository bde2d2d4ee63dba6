package merge

import (
	"context"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/test/testenv"
)

// TestDuckDBReadsOutputs: DuckDB, a reader we did not write, reads every
// output of every path with the rows we meant: per-file row counts and
// timestamp bounds, and the row checksum of all outputs equals that of the
// input rows.
func TestDuckDBReadsOutputs(t *testing.T) {
	duck := testenv.DuckDB(t)
	if duck == nil {
		return
	}
	sc := testArrowSchema(t)
	seeds := uint64(1)
	if long() {
		seeds = 6
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		r := rand.New(rand.NewPCG(seed, 1234))
		dir := t.TempDir()
		var inputs []Input
		var want []arrow.RecordBatch
		for i := 0; i < 2+r.IntN(4); i++ {
			base := 1_700_000_000_000_000 + r.Int64N(2000)
			if i == 0 {
				base -= 100_000 // before the others: the splice copies it
			}
			rec := randRecord(r, sc, 500+r.IntN(3000), base, 3, true, r.IntN(2) == 0)
			inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 700))
			c, err := input.Conform(rec, sc, memory.DefaultAllocator)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, c)
			rec.Release()
		}
		wantSum, err := testenv.RowChecksum(want)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range allPaths {
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(path)), 2),
				RewriteOptions{ForcePath: path, ChunkRows: 900, SpliceMinRows: 100, WriterOptions: WriterOptions{RowGroupRows: 1000, TargetFileBytes: 40_000,
					Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}}}})
			if err != nil {
				t.Fatal(err)
			}
			if path == PathSplice && res.SplicedBytes == 0 {
				t.Fatalf("seed %d: the splice copied nothing", seed)
			}
			var files []string
			for _, o := range res.Outputs {
				files = append(files, o.Path)
			}
			s := duck.Summarize(files)
			if s.Checksum != wantSum {
				t.Fatalf("seed %d %s: DuckDB row checksum %d, input rows %d", seed, path, s.Checksum, wantSum)
			}
			for i, f := range s.Files {
				o := res.Outputs[i]
				mn, err1 := f.Min()
				mx, err2 := f.Max()
				if f.Rows != o.Rows || err1 != nil || err2 != nil || mn != o.MinTimestamp || mx != o.MaxTimestamp {
					t.Fatalf("seed %d %s: DuckDB sees %s with %d rows [%s, %s], we wrote %d rows [%d, %d]",
						seed, path, f.Path, f.Rows, f.MinText, f.MaxText, o.Rows, o.MinTimestamp, o.MaxTimestamp)
				}
			}
		}
		for _, w := range want {
			w.Release()
		}
	}
}

// nullsSchema has the nested shapes whose nulls a writer can get wrong: a
// map with null values, a list with null elements, a struct with nullable
// children, and a string column that is null in every row.
func nullsSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "attributes", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		{Name: "resource", Type: arrow.StructOf(
			arrow.Field{Name: "host", Type: arrow.BinaryTypes.String, Nullable: true},
			arrow.Field{Name: "pid", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		), Nullable: true},
		{Name: "never", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "raw", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// nullsRecord: n rows of nullsSchema from base upward, about a third of
// every nullable value null.
func nullsRecord(r *rand.Rand, sc *arrow.Schema, n int, base int64) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	ts := b.Field(0).(*array.TimestampBuilder)
	svc := b.Field(1).(*array.StringBuilder)
	mb := b.Field(2).(*array.MapBuilder)
	kb, vb := mb.KeyBuilder().(*array.StringBuilder), mb.ItemBuilder().(*array.StringBuilder)
	lb := b.Field(3).(*array.ListBuilder)
	eb := lb.ValueBuilder().(*array.StringBuilder)
	sb := b.Field(4).(*array.StructBuilder)
	host, pid := sb.FieldBuilder(0).(*array.StringBuilder), sb.FieldBuilder(1).(*array.Int64Builder)
	never := b.Field(5).(*array.StringBuilder)
	raw := b.Field(6).(*array.StringBuilder)
	null := func() bool { return r.IntN(3) == 0 }
	t := base
	for j := 0; j < n; j++ {
		t += r.Int64N(3)
		ts.Append(arrow.Timestamp(t))
		svc.Append(services[r.IntN(len(services))])
		if null() {
			mb.AppendNull()
		} else {
			mb.Append(true)
			for k := 0; k < r.IntN(4); k++ {
				kb.Append(fmt.Sprintf("k%d", k))
				if null() {
					vb.AppendNull()
				} else {
					vb.Append(fmt.Sprintf("v%d", r.IntN(50)))
				}
			}
		}
		if null() {
			lb.AppendNull()
		} else {
			lb.Append(true)
			for k := 0; k < r.IntN(4); k++ {
				if null() {
					eb.AppendNull()
				} else {
					eb.Append(fmt.Sprintf("tag%d", r.IntN(20)))
				}
			}
		}
		if null() {
			sb.AppendNull()
		} else {
			sb.Append(true)
			if null() {
				host.AppendNull()
			} else {
				host.Append(fmt.Sprintf("host-%d", r.IntN(9)))
			}
			if null() {
				pid.AppendNull()
			} else {
				pid.Append(r.Int64N(1 << 20))
			}
		}
		never.AppendNull()
		raw.Append(fmt.Sprintf("row %d at %d", j, t))
	}
	return b.NewRecordBatch()
}

// checkChunkCRCs: every sum an output records is the CRC-32C of the bytes
// of its chunk.
func checkChunkCRCs(t *testing.T, what string, o Output) {
	t.Helper()
	b, err := os.ReadFile(o.Path)
	if err != nil {
		t.Fatal(err)
	}
	sums := chunksum.RowGroupSums(o.Meta)
	if sums == nil {
		t.Fatalf("%s: %s records no chunk sums", what, o.Path)
	}
	for rg, cols := range sums {
		if cols == nil {
			t.Fatalf("%s: %s row group %d has no sums", what, o.Path, rg)
		}
		for j, want := range cols {
			cm := o.Meta.RowGroups[rg].Columns[j].MetaData
			from := chunksum.Start(cm.DataPageOffset, cm.DictionaryPageOffset)
			if got := crc32.Checksum(b[from:from+cm.TotalCompressedSize], chunksum.Table); got != want {
				t.Fatalf("%s: %s row group %d column %d: CRC-32C %08x, the footer records %08x", what, o.Path, rg, j, got, want)
			}
		}
	}
}

// TestDuckDBReadsNestedOutputs: DuckDB reads the nested columns of every
// path's outputs (1 and 3 encoding goroutines, and writer.WriteSorted's) with the
// input's rows, nulls at every level included; and every chunk sum an
// output records is the CRC-32C of that chunk's bytes.
func TestDuckDBReadsNestedOutputs(t *testing.T) {
	duck := testenv.DuckDB(t)
	if duck == nil {
		return
	}
	sc := nullsSchema()
	r := rand.New(rand.NewPCG(31, 31))
	dir := t.TempDir()
	var inputs []Input
	var recs []arrow.RecordBatch
	for i := 0; i < 3; i++ {
		base := int64(1_700_000_000_000_000) + int64(i)*1000
		if i == 2 {
			base += 1_000_000_000 // after the others: the splice copies it
		}
		rec := nullsRecord(r, sc, 2500, base)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 700))
		recs = append(recs, rec)
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	wantSum, err := testenv.RowChecksum(recs)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, outs []Output) {
		t.Helper()
		s := duck.Summarize(paths(outs))
		if s.Checksum != wantSum || len(s.Files) != len(outs) {
			t.Fatalf("%s: DuckDB read %d of %d files, row checksum %d, input rows %d", what, len(s.Files), len(outs), s.Checksum, wantSum)
		}
		for _, o := range outs {
			checkChunkCRCs(t, what, o)
		}
	}
	for _, workers := range []int{1, 3} {
		for _, path := range allPaths {
			what := fmt.Sprintf("%s, %d encoders", path, workers)
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, fmt.Sprintf("%s-%d", path, workers)), 2),
				RewriteOptions{ForcePath: path, ChunkRows: 600, SpliceMinRows: 300, WriterOptions: WriterOptions{RowGroupRows: 1000, TargetFileBytes: 60_000, EncodeWorkers: workers}})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if path == PathSplice && res.SplicedBytes == 0 {
				t.Fatalf("%s: the splice copied nothing", what)
			}
			check(what, res.Outputs)
		}
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(filepath.Join(dir, fmt.Sprintf("sorted-%d", workers)), 0), sc, recs,
			WriterOptions{RowGroupRows: 1000, TargetFileBytes: 60_000, EncodeWorkers: workers})
		if err != nil {
			t.Fatalf("WriteSorted, %d encoders: %v", workers, err)
		}
		check(fmt.Sprintf("WriteSorted, %d encoders", workers), outs)
	}
}
