package merge

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge/writer"
)

func TestDataFileNameRoundTrip(t *testing.T) {
	for _, g := range []int{0, 1, 3, 42, 12345} {
		name := DataFileName(g)
		got, ok := ParseGeneration("s3://bucket/tbl/data/p=1/" + name)
		if !ok || got != g {
			t.Fatalf("ParseGeneration(%q) = %d, %v; want %d", name, got, ok, g)
		}
	}
	for _, bad := range []string{"", "x.parquet", "00000-0-abc.parquet", "g-1.parquet", "gx1-abc.parquet", "g0001-abc.avro"} {
		if g, ok := ParseGeneration(bad); ok {
			t.Fatalf("ParseGeneration(%q) = %d, true; want false", bad, g)
		}
	}
	if DataFileName(1) == DataFileName(1) {
		t.Fatal("DataFileName must be unique per call")
	}
}

func TestWriteSortedSortsSplitsAndKeepsRows(t *testing.T) {
	sc := testArrowSchema(t)
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, seed))
		var recs []arrow.RecordBatch
		var want []string
		for i := 0; i < 1+r.IntN(4); i++ {
			rec := randRecord(r, sc, r.IntN(3000), 1_700_000_000_000_000, 5, r.IntN(2) == 0, r.IntN(2) == 0)
			defer rec.Release()
			recs = append(recs, rec)
			want = append(want, rowStrings(t, rec, sc)...)
		}
		// The expected order: stable by timestamp over the concatenation.
		sort.SliceStable(want, func(a, b int) bool { return tsLess(rowTs(want[a]), rowTs(want[b])) })

		dir := t.TempDir()
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, recs,
			WriterOptions{RowGroupRows: 500, TargetFileBytes: 20_000, Generation: 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 && len(outs) != 0 {
			t.Fatalf("seed %d: no rows but %d outputs", seed, len(outs))
		}
		var got []string
		for i, o := range outs {
			rows := readFileRows(t, localFS, o.Path, sc)
			if int64(len(rows)) != o.Rows || o.Meta.NumRows != o.Rows {
				t.Fatalf("seed %d: output %d reports %d rows, holds %d", seed, i, o.Rows, len(rows))
			}
			st, err := os.Stat(o.Path)
			if err != nil || st.Size() != o.Size {
				t.Fatalf("seed %d: output %d size %d, file %v %v", seed, i, o.Size, st.Size(), err)
			}
			if i > 0 && outs[i-1].MaxTimestamp >= o.MinTimestamp {
				t.Fatalf("seed %d: outputs %d and %d overlap: max %d >= min %d", seed, i-1, i, outs[i-1].MaxTimestamp, o.MinTimestamp)
			}
			if g, ok := ParseGeneration(o.Path); !ok || g != 0 {
				t.Fatalf("seed %d: output name %s does not carry generation 0", seed, o.Path)
			}
			got = append(got, rows...)
			df, err := table.DataFileFromMetadata(table.DataFileArgs{
				Schema: testIceSchema(), Format: iceberg.ParquetFile, Metadata: o.Meta,
				FilePath: o.Path, FileSize: o.Size, Content: iceberg.EntryContentData, FormatVersion: 2,
			})
			if err != nil {
				t.Fatalf("seed %d: DataFileFromMetadata: %v", seed, err)
			}
			if df.Count() != o.Rows {
				t.Fatalf("seed %d: DataFile count %d, want %d", seed, df.Count(), o.Rows)
			}
		}
		if !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Logf("first diff at %d:\n got  %s\n want %s", i, got[i], want[i])
					break
				}
			}
			t.Fatalf("seed %d: rows differ: got %d rows, want %d", seed, len(got), len(want))
		}
		t.Logf("seed %d: %d rows in %d files", seed, len(want), len(outs))
		if len(want) > 4000 && len(outs) < 2 {
			t.Fatalf("seed %d: %d rows did not split at a 20 kB target", seed, len(want))
		}
	}
}

func tsLess(a, b string) bool { return a < b } // zero-padded non-negative micros sort lexically

func TestWriteSortedRejectsBadSchema(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(1, 2))
	rec := randRecord(r, sc, 10, 0, 3, true, true)
	defer rec.Release()
	_, err := writer.WriteSorted(context.Background(), localFS, pathGen(t.TempDir(), 0), sc, []arrow.RecordBatch{rec},
		WriterOptions{TimestampColumn: "nope"})
	if err == nil {
		t.Fatal("want error for a missing timestamp column")
	}
}

// failingFS fails every write after limit bytes, like a store that drops the
// connection mid-upload.
type failingFS struct {
	icebergio.LocalFS
	limit int64
}

type failingWriter struct {
	icebergio.FileWriter
	left *int64
}

func (f failingFS) Create(name string) (icebergio.FileWriter, error) {
	w, err := f.LocalFS.Create(name)
	if err != nil {
		return nil, err
	}
	left := f.limit
	return failingWriter{FileWriter: w, left: &left}, nil
}

func (w failingWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > *w.left {
		return 0, errors.New("injected write failure")
	}
	*w.left -= int64(len(p))
	return w.FileWriter.Write(p)
}

func TestWriteSortedRemovesOutputsOnFailure(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(3, 4))
	rec := randRecord(r, sc, 20_000, 0, 3, true, true)
	defer rec.Release()
	for _, limit := range []int64{0, 100, 30_000} {
		dir := t.TempDir()
		outs, err := writer.WriteSorted(context.Background(), failingFS{limit: limit}, pathGen(dir, 1), sc, []arrow.RecordBatch{rec},
			WriterOptions{RowGroupRows: 1000, TargetFileBytes: 20_000, Generation: 1})
		if err == nil {
			t.Fatalf("limit %d: want error, got %d outputs", limit, len(outs))
		}
		left, _ := os.ReadDir(dir)
		if len(left) != 0 {
			t.Fatalf("limit %d: %d files left behind after failure: %v", limit, len(left), err)
		}
	}
}

// TestDictionaryFallsBackAt256KiB: a column of distinct values (trace ids)
// gets a dictionary page of at most 256 KiB (file-format.md), then plain
// pages, with either encoder.
func TestDictionaryFallsBackAt256KiB(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(1, 1))
	rec := randRecord(r, sc, 60_000, 1_700_000_000_000_000, 3, true, true)
	defer rec.Release()
	// Replace trace_id by distinct 32-byte hex ids: about 1.9 MB of values.
	b := array.NewStringBuilder(memory.DefaultAllocator)
	for i := 0; i < int(rec.NumRows()); i++ {
		b.Append(fmt.Sprintf("%016x%016x", r.Uint64(), r.Uint64()))
	}
	ids := b.NewArray()
	b.Release()
	defer ids.Release()
	cols := slices.Clone(rec.Columns())
	cols[4] = ids
	rec2 := array.NewRecordBatch(sc, cols, rec.NumRows())
	defer rec2.Release()
	for _, enc := range writer.Encoders {
		dir := t.TempDir()
		outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, 0), sc, []arrow.RecordBatch{rec2},
			WriterOptions{Metadata: MetadataOptions{RawColumn: "raw"}, Encoder: enc})
		if err != nil {
			t.Fatal(err)
		}
		cc, err := outs[0].Meta.RowGroup(0).ColumnChunk(4)
		if err != nil {
			t.Fatal(err)
		}
		if !cc.HasDictionaryPage() {
			t.Fatalf("%s: trace_id has no dictionary page", enc)
		}
		if n := cc.DataPageOffset() - cc.DictionaryPageOffset(); n > 256<<10 {
			t.Fatalf("%s: trace_id dictionary page takes %d bytes, want at most 256 KiB", enc, n)
		}
		if !plainAfterDictionary(outs, "trace_id") {
			t.Fatalf("%s: trace_id encodings %v: no plain pages after the dictionary filled", enc, cc.Encodings())
		}
	}
}

// TestWriteSortedReleasingGathersInChunks writes a batch shaped like a WAL's
// (records mostly in order, some shuffled) of many chunks, and checks the
// rows come out in stable timestamp order, every record is released, and the
// writer's own allocations stay a fraction of the batch: it gathers a chunk
// at a time instead of making a sorted copy of everything.
func TestWriteSortedReleasingGathersInChunks(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(3, 3))
	var recs []arrow.RecordBatch
	var want []string
	var input int64
	for i := 0; i < 96; i++ {
		rec := randRecord(r, sc, 2000, 1_700_000_000_000_000+int64(i)*10_000, 10, i%8 != 0, i%3 != 0)
		recs = append(recs, rec)
		want = append(want, rowStrings(t, rec, sc)...)
		input += recordBytes(rec)
	}
	sort.SliceStable(want, func(a, b int) bool { return tsLess(rowTs(want[a]), rowTs(want[b])) })
	mem := newPeakAllocator()
	dir := t.TempDir()
	outs, err := writer.WriteSortedReleasing(context.Background(), localFS, pathGen(dir, 0), sc, recs,
		WriterOptions{RowGroupRows: 8192, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	for i, rec := range recs {
		if rec != nil {
			t.Fatalf("record %d not released", i)
		}
	}
	var got []string
	for _, o := range outs {
		got = append(got, readFileRows(t, localFS, o.Path, sc)...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("rows differ: got %d rows, want %d in stable timestamp order", len(got), len(want))
	}
	t.Logf("%d rows, %d decoded bytes in; writer peak %d bytes", len(want), input, mem.peak.Load())
	if peak := mem.peak.Load(); peak > input/3 {
		t.Fatalf("writer peak %d bytes for a %d-byte batch: more than a third of it", peak, input)
	}
}
