package merge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/test/testenv"
)

// spliceShape is one kind of bin the splice must merge exactly.
type spliceShape struct {
	name       string
	wantCopies bool
	inputs     func(r *rand.Rand) []arrow.RecordBatch
	rgRows     func(i int, rec arrow.RecordBatch) int
}

func lastTs(rec arrow.RecordBatch) int64 {
	return int64(rec.Column(0).(*array.Timestamp).Value(int(rec.NumRows()) - 1))
}

func spliceShapes(sc *arrow.Schema) []spliceShape {
	const t0 = 1_700_000_000_000_000
	chain := func(n int, gap func(r *rand.Rand) int64, withTrace func(i int) bool) func(r *rand.Rand) []arrow.RecordBatch {
		return func(r *rand.Rand) []arrow.RecordBatch {
			var recs []arrow.RecordBatch
			next := int64(t0)
			for i := 0; i < n; i++ {
				rec := randRecord(r, sc, 800+r.IntN(2500), next+gap(r), 3, true, withTrace(i))
				next = lastTs(rec)
				recs = append(recs, rec)
			}
			return recs
		}
	}
	always := func(int) bool { return true }
	small := func(int, arrow.RecordBatch) int { return 300 }
	return []spliceShape{
		{"disjoint", true, chain(6, func(r *rand.Rand) int64 { return 1 + r.Int64N(1000) }, always), small},
		{"touching", true, chain(5, func(*rand.Rand) int64 { return 0 }, always), small},
		{"overlapping at the edges", true, chain(5, func(r *rand.Rand) int64 { return -r.Int64N(30) }, always), small},
		{"identical timestamps", false, func(r *rand.Rand) []arrow.RecordBatch {
			var recs []arrow.RecordBatch
			for i := 0; i < 4; i++ {
				recs = append(recs, randRecord(r, sc, 1000, t0, 0, true, true))
			}
			return recs
		}, small},
		{"added columns", true, chain(6, func(r *rand.Rand) int64 { return 1 + r.Int64N(100) }, func(i int) bool { return i >= 3 }), small},
		{"a single huge row group and late slivers inside it", false, func(r *rand.Rand) []arrow.RecordBatch {
			big := randRecord(r, sc, 20_000, t0, 3, true, true)
			recs := []arrow.RecordBatch{big}
			for i := 0; i < 3; i++ {
				recs = append(recs, randRecord(r, sc, 50, lastTs(big)-r.Int64N(200), 3, true, true))
			}
			return recs
		}, func(i int, rec arrow.RecordBatch) int {
			if i == 0 {
				return int(rec.NumRows())
			}
			return 300
		}},
	}
}

// TestSpliceMatchesKWay: on every shape the splice gives the k-way path's
// rows in its order, in pairwise disjoint files whose footers answer
// searches without false negatives and count the same groups; where row
// groups do not overlap it copies them; DuckDB reads the same rows; and a
// spliced output fed to another splice is still valid.
func TestSpliceMatchesKWay(t *testing.T) { spliceMatchesKWay(t, false) }

// TestSpliceMatchesKWayWithoutChunkSums is TestSpliceMatchesKWay on inputs
// whose footers lack the chunk sums (another writer's files, or siglake's
// from before them): the copies go through the page check instead, which
// must pass valid inputs.
func TestSpliceMatchesKWayWithoutChunkSums(t *testing.T) { spliceMatchesKWay(t, true) }

func spliceMatchesKWay(t *testing.T, stripSums bool) {
	var duck *testenv.Duck
	t.Run("duckdb", func(t *testing.T) { duck = testenv.DuckDB(t) }) // its absence skips only the DuckDB checks
	sc := testArrowSchema(t)
	seeds := 2
	if long() {
		seeds = 20
	}
	for _, shape := range spliceShapes(sc) {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			what := fmt.Sprintf("%s seed %d", shape.name, seed)
			r := rand.New(rand.NewPCG(seed, 15))
			dir := t.TempDir()
			var s scenario
			for i, rec := range shape.inputs(r) {
				s.inputs = append(s.inputs, writeInput(t, dir, sc, rec, 1+r.IntN(3), shape.rgRows(i, rec)))
				if stripSums {
					stripChunkCRCs(t, &s.inputs[len(s.inputs)-1])
				}
				s.want = append(s.want, rowStrings(t, rec, sc)...)
				rec.Release()
			}
			sort.SliceStable(s.want, func(a, b int) bool { return rowTs(s.want[a]) < rowTs(s.want[b]) })
			gen := 0
			for _, in := range s.inputs {
				gen = max(gen, in.Generation+1)
			}
			opts := RewriteOptions{SpliceMinRows: 200, ChunkRows: 500, WriterOptions: WriterOptions{RowGroupRows: 400, TargetFileBytes: int64(30_000 + r.IntN(60_000))}}
			outs := map[PathKind]RewriteResult{}
			for _, p := range []PathKind{PathKWay, PathSplice} {
				opts.ForcePath = p
				res, err := Rewrite(context.Background(), localFS, s.inputs, sc, pathGen(filepath.Join(dir, string(p)), gen), opts)
				if err != nil {
					t.Fatalf("%s %s: %v", what, p, err)
				}
				if checks := res.verifiedRowGroups; p == PathSplice && res.SplicedBytes > 0 && (checks > 0) != stripSums {
					t.Fatalf("%s: the page check read %d row groups of inputs with sums %v", what, checks, !stripSums)
				}
				got := checkOutputs(t, what+" "+string(p), res.Outputs, sc, gen, s, p)
				if !slices.Equal(got, s.want) {
					diffRows(t, got, s.want)
					t.Fatalf("%s %s: rows differ (%d vs %d)", what, p, len(got), len(s.want))
				}
				outs[p] = res
			}
			sp := outs[PathSplice]
			if (sp.SplicedBytes > 0) != shape.wantCopies {
				t.Fatalf("%s: spliced %d bytes, want copies=%v", what, sp.SplicedBytes, shape.wantCopies)
			}
			if sp.SplicedBytes > sp.BytesWritten {
				t.Fatalf("%s: spliced %d of %d bytes written", what, sp.SplicedBytes, sp.BytesWritten)
			}
			// Left to choose, a bin that fits in memory keeps the in-memory
			// path's whole-file metadata however much of it is copyable.
			opts.ForcePath = ""
			if res, err := Rewrite(context.Background(), localFS, s.inputs, sc, pathGen(filepath.Join(dir, "chosen"), gen), opts); err != nil {
				t.Fatalf("%s: %v", what, err)
			} else if res.Path != PathInMemory {
				t.Fatalf("%s: %d of %d bytes copyable, ChoosePath took %s (%s)", what, sp.SplicedBytes, sp.BytesWritten, res.Path, res.Reason)
			}
			if a, b := groupTotals(t, outs[PathKWay].Outputs), groupTotals(t, sp.Outputs); a != b {
				t.Fatalf("%s: group counts differ:\n k-way  %s\n splice %s", what, a, b)
			}
			if duck != nil {
				checkDuckDBSame(t, duck, what, outs[PathKWay].Outputs, sp.Outputs)
			}
			if shape.name != "disjoint" || seed != 1 {
				continue
			}
			// A spliced output fed to another splice, beside a later input.
			rec := randRecord(r, sc, 900, sp.Outputs[len(sp.Outputs)-1].MaxTimestamp+10, 3, true, true)
			again := []Input{writeInput(t, dir, sc, rec, 1, 300)}
			s2 := scenario{want: slices.Clone(s.want)}
			s2.want = append(s2.want, rowStrings(t, rec, sc)...)
			rec.Release()
			for _, o := range sp.Outputs {
				again = append(again, Input{Path: o.Path, Size: o.Size, Rows: o.Rows, Generation: o.Generation})
			}
			opts.ForcePath = PathSplice
			res, err := Rewrite(context.Background(), localFS, again, sc, pathGen(filepath.Join(dir, "again"), gen+1), opts)
			if err != nil {
				t.Fatalf("%s: splicing spliced outputs: %v", what, err)
			}
			if res.SplicedBytes == 0 {
				t.Fatalf("%s: the second splice copied nothing", what)
			}
			sort.SliceStable(s2.want, func(a, b int) bool { return rowTs(s2.want[a]) < rowTs(s2.want[b]) })
			if got := checkOutputs(t, what+" again", res.Outputs, sc, gen+1, s2, PathSplice); !slices.Equal(got, s2.want) {
				diffRows(t, got, s2.want)
				t.Fatalf("%s: the second splice's rows differ", what)
			}
			if duck != nil {
				s := duck.Summarize(paths(res.Outputs))
				if len(s.Files) != len(res.Outputs) {
					t.Fatalf("%s: DuckDB read %d of %d files of the second splice", what, len(s.Files), len(res.Outputs))
				}
			}
		}
	}
}

// TestSpliceNestedColumns: map and list columns are copied and merged like
// the others.
func TestSpliceNestedColumns(t *testing.T) { spliceNestedColumns(t, false) }

// TestSpliceNestedColumnsWithoutChunkSums is TestSpliceNestedColumns through
// the page check: the inputs' footers lack the chunk sums.
func TestSpliceNestedColumnsWithoutChunkSums(t *testing.T) { spliceNestedColumns(t, true) }

func spliceNestedColumns(t *testing.T, stripSums bool) {
	sc := nestedSchema()
	r := rand.New(rand.NewPCG(8, 8))
	dir := t.TempDir()
	var inputs []Input
	for i := 0; i < 3; i++ {
		rec := nestedRecord(r, sc, 3000, int64(i))
		if i == 2 {
			// nestedRecord interleaves inputs; move the last one after the others.
			rec = shiftTimestamps(t, rec, 1_000_000_000)
		}
		inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 1000))
		rec.Release()
		if stripSums {
			stripChunkCRCs(t, &inputs[i])
		}
	}
	got := map[PathKind][]string{}
	var spliced, checks int64
	for _, p := range []PathKind{PathKWay, PathSplice} {
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(p)), 2),
			RewriteOptions{ForcePath: p, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, o := range res.Outputs {
			got[p] = append(got[p], readFileRows(t, localFS, o.Path, sc)...)
		}
		spliced += res.SplicedBytes
		checks += res.verifiedRowGroups
	}
	if spliced == 0 {
		t.Fatal("the splice copied nothing")
	}
	if (checks > 0) != stripSums {
		t.Fatalf("the page check read %d row groups of inputs with sums %v", checks, !stripSums)
	}
	if !slices.Equal(got[PathSplice], got[PathKWay]) {
		diffRows(t, got[PathSplice], got[PathKWay])
		t.Fatalf("rows differ: splice %d, k-way %d", len(got[PathSplice]), len(got[PathKWay]))
	}
}

func shiftTimestamps(t *testing.T, rec arrow.RecordBatch, by int64) arrow.RecordBatch {
	t.Helper()
	ts := rec.Column(0).(*array.Timestamp)
	b := array.NewTimestampBuilder(memory.DefaultAllocator, ts.DataType().(*arrow.TimestampType))
	for i := 0; i < ts.Len(); i++ {
		b.Append(ts.Value(i) + arrow.Timestamp(by))
	}
	col := b.NewArray()
	cols := slices.Clone(rec.Columns())
	cols[0] = col
	out := array.NewRecordBatch(rec.Schema(), cols, rec.NumRows())
	col.Release()
	rec.Release()
	return out
}

// TestSpliceCorruptCopiedPageFails: damage inside a column chunk the splice
// would copy (not one it decodes) fails the merge, naming the input, with no
// output left behind: through the chunk checksums siglake's files carry
// (whether or not the page check is on: they cost nothing), and through the
// page check for a file without them (another tool's).
func TestSpliceCorruptCopiedPageFails(t *testing.T) {
	for _, withSums := range []bool{true, false} {
		t.Run(fmt.Sprintf("checksums=%v", withSums), func(t *testing.T) {
			sc := testArrowSchema(t)
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(3, 4))
			inputs := disjointInputs(t, dir, sc, r, 3)
			bad := inputs[1].Path
			if !withSums {
				rewriteFooter(t, bad, func(md *metadata.FileMetaData) {
					kvs := md.FileMetaData.KeyValueMetadata[:0]
					for _, kv := range md.FileMetaData.KeyValueMetadata {
						if kv.Key != chunksum.Key {
							kvs = append(kvs, kv)
						}
					}
					md.FileMetaData.KeyValueMetadata = kvs
				})
			}
			b, err := os.ReadFile(bad)
			if err != nil {
				t.Fatal(err)
			}
			pf, err := file.NewParquetReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if got := chunksum.RowGroupSums(pf.MetaData()) != nil; got != withSums {
				t.Fatalf("input has chunk checksums: %v, want %v", got, withSums)
			}
			cc, err := pf.MetaData().RowGroup(1).ColumnChunk(2) // raw: neither the timestamp nor a group column
			if err != nil {
				t.Fatal(err)
			}
			mid := cc.DataPageOffset() + cc.TotalCompressedSize()/2
			for i := mid; i < mid+16; i++ {
				b[i] ^= 0x5a
			}
			if err := os.WriteFile(bad, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			for _, unverified := range []bool{false, true} {
				res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(out, 1),
					RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, SpliceUnverified: unverified, WriterOptions: WriterOptions{RowGroupRows: 1000}})
				if unverified && !withSums {
					break // checked below
				}
				if err == nil {
					t.Fatalf("unverified %v: merge succeeded with %d outputs", unverified, len(res.Outputs))
				}
				if !strings.Contains(err.Error(), bad) {
					t.Errorf("error does not name the input: %v", err)
				}
				if withSums && !strings.Contains(err.Error(), "checksum") {
					t.Errorf("error does not say the checksum differs: %v", err)
				}
				if left, _ := os.ReadDir(out); len(left) != 0 {
					t.Fatalf("%d output files left behind", len(left))
				}
			}
			if withSums {
				return
			}
			// Unverified and without checksums, the damage is copied on: what
			// SIGLAKE_MERGE_SPLICE_VERIFY=off trades for another tool's files.
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(out, 1),
				RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, SpliceUnverified: true, WriterOptions: WriterOptions{RowGroupRows: 1000}})
			if err != nil {
				t.Fatalf("unverified splice: %v", err)
			}
			from := cc.DataPageOffset()
			if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < from {
				from = cc.DictionaryPageOffset()
			}
			damaged := b[from : from+cc.TotalCompressedSize()]
			carried := false
			for _, o := range res.Outputs {
				ob, err := os.ReadFile(o.Path)
				if err != nil {
					t.Fatal(err)
				}
				sums := chunksum.RowGroupSums(o.Meta)
				for rg := 0; rg < o.Meta.NumRowGroups(); rg++ {
					c, err := o.Meta.RowGroup(rg).ColumnChunk(2)
					if err != nil {
						t.Fatal(err)
					}
					at := c.DataPageOffset()
					if c.HasDictionaryPage() && c.DictionaryPageOffset() > 0 && c.DictionaryPageOffset() < at {
						at = c.DictionaryPageOffset()
					}
					if !bytes.Equal(ob[at:at+c.TotalCompressedSize()], damaged) {
						continue
					}
					carried = true
					if sums != nil && sums[rg] != nil {
						t.Errorf("output row group %d carries the damaged chunk and a checksum vouching for it", rg)
					}
				}
			}
			if !carried {
				t.Fatal("the unverified splice did not carry the damaged column chunk into its output byte for byte")
			}
		})
	}
}

// TestArrowGoPiecesTheSpliceUses pins what the splice relies on in arrow-go:
// a column chunk's bytes are [dictionary or first data page offset,
// +total_compressed_size), chunks of a row group are contiguous from its
// file_offset, offset indexes point inside their chunk, and the exported
// footer and offset-index types round-trip through their serializers. An
// upgrade that changes any of it must fail here, not in production.
func TestArrowGoPiecesTheSpliceUses(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	rec := randRecord(rand.New(rand.NewPCG(1, 2)), sc, 5000, 1_700_000_000_000_000, 3, true, true)
	in := writeInput(t, dir, sc, rec, 0, 2000)
	rec.Release()
	b, err := os.ReadFile(in.Path)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.MetaData()
	for rg := range md.RowGroups {
		pos := *md.RowGroups[rg].FileOffset
		for j, c := range md.RowGroups[rg].Columns {
			start := c.MetaData.DataPageOffset
			if d := c.MetaData.DictionaryPageOffset; d != nil && *d < start {
				start = *d
			}
			if start != pos {
				t.Fatalf("row group %d column %d starts at %d, the previous chunk ended at %d", rg, j, start, pos)
			}
			pos += c.MetaData.TotalCompressedSize
			oi := metadata.NewOffsetIndex(b[*c.OffsetIndexOffset:*c.OffsetIndexOffset+int64(*c.OffsetIndexLength)], nil, nil)
			ob := &metadata.OffsetIndexBuilder{}
			for _, loc := range oi.GetPageLocations() {
				if loc.Offset < start || loc.Offset+int64(loc.CompressedPageSize) > pos {
					t.Fatalf("row group %d column %d: page at %d outside its chunk [%d, %d)", rg, j, loc.Offset, start, pos)
				}
				_ = ob.AddPage(loc.Offset+7, loc.FirstRowIndex, loc.CompressedPageSize)
			}
			_ = ob.Finish(0)
			var buf bytes.Buffer
			if _, err := ob.WriteTo(&buf, nil); err != nil {
				t.Fatal(err)
			}
			back := metadata.NewOffsetIndex(buf.Bytes(), nil, nil).GetPageLocations()
			for k, loc := range oi.GetPageLocations() {
				if back[k].Offset != loc.Offset+7 || back[k].FirstRowIndex != loc.FirstRowIndex || back[k].CompressedPageSize != loc.CompressedPageSize {
					t.Fatalf("offset index did not round-trip: %v -> %v", loc, back[k])
				}
			}
		}
	}
	var buf bytes.Buffer
	if _, err := md.WriteTo(&buf, nil); err != nil {
		t.Fatal(err)
	}
	back, err := metadata.NewFileMetaData(buf.Bytes(), nil)
	if err != nil || !back.Equals(md) {
		t.Fatalf("footer did not round-trip (%v)", err)
	}
	// The inner group names of maps and lists are part of each leaf's path,
	// which splice.SameParquetSchema compares and copied chunks take from the output.
	nsc := nestedSchema()
	nrec := nestedRecord(rand.New(rand.NewPCG(1, 3)), nsc, 50, 0)
	nin := writeInput(t, dir, nsc, nrec, 1, 50)
	nrec.Release()
	npf, err := file.OpenParquetFile(nin.Path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer npf.Close()
	var got []string
	for j := 0; j < npf.MetaData().Schema.NumColumns(); j++ {
		got = append(got, npf.MetaData().Schema.Column(j).ColumnPath().String())
		if cc := npf.MetaData().RowGroups[0].Columns[j]; strings.Join(cc.MetaData.PathInSchema, ".") != got[j] {
			t.Fatalf("column %d: chunk path %v, schema path %s", j, cc.MetaData.PathInSchema, got[j])
		}
	}
	if want := "timestamp service attributes.key_value.key attributes.key_value.value tags.list.element raw"; strings.Join(got, " ") != want {
		t.Fatalf("leaf paths %q, want %q", strings.Join(got, " "), want)
	}
}

func paths(outs []Output) []string {
	var ps []string
	for _, o := range outs {
		ps = append(ps, o.Path)
	}
	return ps
}

// groupTotals sums the group-count entries of outs, as text.
func groupTotals(t *testing.T, outs []Output) string {
	t.Helper()
	sum := map[string]int64{}
	for _, o := range outs {
		f, err := writer.DecodeFooter(o.Meta)
		if err != nil {
			t.Fatal(err)
		}
		_, values, rows, ok := f.Groups()
		if !ok {
			return "no group counts"
		}
		for i, v := range values {
			k := "∅"
			if v[0] != nil {
				k = *v[0]
			}
			sum[k] += rows[i]
		}
	}
	return fmt.Sprint(sum)
}

// checkDuckDBSame: DuckDB reads the same rows from both sets of outputs, and
// each spliced file's row count and time bounds are what we recorded.
func checkDuckDBSame(t *testing.T, duck *testenv.Duck, what string, want, got []Output) {
	t.Helper()
	a, b := duck.Summarize(paths(want)), duck.Summarize(paths(got))
	if a.Checksum != b.Checksum {
		t.Fatalf("%s: DuckDB row checksum of the spliced files %d, of the k-way files %d", what, b.Checksum, a.Checksum)
	}
	for i, f := range b.Files {
		o := got[i]
		mn, err1 := f.Min()
		mx, err2 := f.Max()
		if f.Rows != o.Rows || err1 != nil || err2 != nil || mn != o.MinTimestamp || mx != o.MaxTimestamp {
			t.Fatalf("%s: DuckDB sees %s with %d rows [%s, %s], we wrote %d rows [%d, %d]", what, f.Path, f.Rows, f.MinText, f.MaxText, o.Rows, o.MinTimestamp, o.MaxTimestamp)
		}
	}
}

// TestSpliceMemoryIndependentOfInputSize: the splice's peak allocation does
// not grow with the row groups it copies (DESIGN promise 4): copies stream
// through a fixed buffer, and what it decodes of them is one row group's
// timestamp and group columns.
func TestSpliceMemoryIndependentOfInputSize(t *testing.T) {
	sc := testArrowSchema(t)
	var peaks, decoded [2]int64
	for si, perInput := range testSizes {
		dir := t.TempDir()
		r := rand.New(rand.NewPCG(9, uint64(si)))
		var inputs []Input
		next := int64(1_700_000_000_000_000)
		for i := 0; i < 4; i++ {
			rec := randRecord(r, sc, perInput, next+10, 3, true, true)
			next = lastTs(rec)
			decoded[si] += recordBytes(rec)
			inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 8192))
			rec.Release()
		}
		alloc := newPeakAllocator()
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 2),
			RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 4096, WriterOptions: WriterOptions{RowGroupRows: 8192, Allocator: alloc}})
		if err != nil {
			t.Fatal(err)
		}
		if res.SplicedBytes == 0 {
			t.Fatal("the splice copied nothing")
		}
		if left := alloc.cur.Load(); left > 512*int64(len(res.Outputs)*64) {
			t.Errorf("%d bytes still allocated after the rewrite (leak)", left)
		}
		peaks[si] = alloc.peak.Load()
	}
	t.Logf("decoded input %v bytes, splice peak allocated %v bytes", decoded, peaks)
	if growth, inputGrowth := peaks[1]-peaks[0], decoded[1]-decoded[0]; growth > inputGrowth/20 {
		t.Errorf("splice peak grew with the input: %d -> %d bytes (+%d, more than 1/20 of the input's +%d)", peaks[0], peaks[1], growth, inputGrowth)
	}
}

// TestSpliceRenamedNestedColumn: a renamed map column leaves every leaf and
// its levels as they were, so only the group names tell the schemas apart.
// Inputs of the old name must not be copied under the new one: the splice
// writes what the k-way path writes, and every chunk's path is the footer's.
func TestSpliceRenamedNestedColumn(t *testing.T) {
	sc := nestedSchema()
	r := rand.New(rand.NewPCG(8, 9))
	dir := t.TempDir()
	var inputs []Input
	for i := 0; i < 2; i++ {
		rec := nestedRecord(r, sc, 3000, 0)
		rec = shiftTimestamps(t, rec, int64(i)*1_000_000_000)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 1000))
		rec.Release()
	}
	fields := slices.Clone(sc.Fields())
	fields[2].Name = "attrs"
	renamed := arrow.NewSchema(fields, nil)
	got := map[PathKind][]string{}
	for _, p := range []PathKind{PathKWay, PathSplice} {
		res, err := Rewrite(context.Background(), localFS, inputs, renamed, pathGen(filepath.Join(dir, string(p)), 2),
			RewriteOptions{ForcePath: p, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, o := range res.Outputs {
			got[p] = append(got[p], readFileRows(t, localFS, o.Path, renamed)...)
			for rg := range o.Meta.RowGroups {
				for j, c := range o.Meta.RowGroups[rg].Columns {
					if want := o.Meta.Schema.Column(j).ColumnPath(); !slices.Equal(c.MetaData.PathInSchema, want) {
						t.Fatalf("%s: row group %d column %d has path %v, the schema says %v", p, rg, j, c.MetaData.PathInSchema, want)
					}
				}
			}
		}
		if p == PathSplice && res.SplicedBytes != 0 {
			t.Errorf("the splice copied %d bytes of inputs with the old column name", res.SplicedBytes)
		}
	}
	if !slices.Equal(got[PathSplice], got[PathKWay]) {
		diffRows(t, got[PathSplice], got[PathKWay])
		t.Fatalf("rows differ: splice %d, k-way %d", len(got[PathSplice]), len(got[PathKWay]))
	}
}

// rewriteFooter replaces the footer of the Parquet file at p with edit's
// change of it; the bytes before the footer stay where they are.
func rewriteFooter(t *testing.T, p string, edit func(md *metadata.FileMetaData)) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.MetaData()
	footerLen := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	body := b[:len(b)-8-footerLen]
	edit(md)
	var buf bytes.Buffer
	if _, err := md.WriteTo(&buf, nil); err != nil {
		t.Fatal(err)
	}
	out := append(slices.Clone(body), buf.Bytes()...)
	out = binary.LittleEndian.AppendUint32(out, uint32(buf.Len()))
	out = append(out, "PAR1"...)
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSpliceMisalignedBloomNotCopied: an input whose row-group bloom entries
// are as many as its row groups but in the wrong order (entries 0 and 1
// swapped) must not lend row group 1's bloom to a copy of row group 0: the
// output would then prune rows it holds.
func TestSpliceMisalignedBloomNotCopied(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 6))
	inputs := disjointInputs(t, dir, sc, r, 2)
	rewriteFooter(t, inputs[0].Path, func(md *metadata.FileMetaData) {
		f, err := writer.DecodeFooter(md)
		if err != nil {
			t.Fatal(err)
		}
		n, ok := f.NumRowGroups()
		if !ok || n != md.NumRowGroups() || n < 2 {
			t.Fatalf("input has %d row-group entries for %d row groups", n, md.NumRowGroups())
		}
		order := []int{1, 0}
		for rg := 2; rg < n; rg++ {
			order = append(order, rg)
		}
		e := binary.AppendUvarint(nil, uint64(n))
		for _, rg := range order {
			info, _ := f.RowGroupInfo(rg)
			e = binary.AppendVarint(e, info.MinMicros)
			e = binary.AppendVarint(e, info.MaxMicros)
			e = binary.AppendUvarint(e, uint64(info.Rows))
			e = append(e, f.RowGroupBloom(rg)...)
		}
		found := false
		for _, kv := range md.FileMetaData.KeyValueMetadata {
			if kv.Key == index.KeyRowGroups {
				v := base64.StdEncoding.EncodeToString(e)
				kv.Value, found = &v, true
			}
		}
		if !found {
			t.Fatal("input has no row-group bloom entry")
		}
	})
	inputs[0].Size = fileSize(t, inputs[0].Path)
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 1),
		RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SplicedBytes == 0 {
		t.Fatal("the splice copied nothing")
	}
	for _, o := range res.Outputs {
		f, err := writer.DecodeFooter(o.Meta)
		if err != nil {
			t.Fatal(err)
		}
		checkSearch(t, "misaligned bloom", f, o, readFileRows(t, localFS, o.Path, sc))
	}
}

func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestSpliceExternalChunkNotCopied: a column chunk whose file_path names
// another file has offsets into that file; the splice must not copy the
// bytes at those offsets in this one.
func TestSpliceExternalChunkNotCopied(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 6))
	inputs := disjointInputs(t, dir, sc, r, 2)
	opts := RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}}
	all, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "all"), 1), opts)
	if err != nil {
		t.Fatal(err)
	}
	var srcMD *metadata.FileMetaData
	rewriteFooter(t, inputs[0].Path, func(md *metadata.FileMetaData) {
		other := "elsewhere.parquet"
		md.RowGroups[1].Columns[2].FilePath = &other
		srcMD = md
	})
	inputs[0].Size = fileSize(t, inputs[0].Path)
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 1), opts)
	if err != nil {
		t.Fatal(err)
	}
	rg1 := srcMD.RowGroup(1).TotalCompressedSize()
	if res.SplicedBytes == 0 || res.SplicedBytes > all.SplicedBytes-rg1 {
		t.Fatalf("spliced %d bytes; all row groups are %d, the one with an external chunk %d", res.SplicedBytes, all.SplicedBytes, rg1)
	}
	// The writer refuses one too, should a plan ever let it through: writer.TestAppendRowGroupRefusesExternalChunk.
}

// TestSpliceCutsInsideACopyableRowGroup: a density cut inside a row group
// the splice could copy makes it re-encoded, and the outputs are cut before
// the first row at or past the cut, as the sink cuts them.
func TestSpliceCutsInsideACopyableRowGroup(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(9, 6))
	var inputs []Input
	var cut int64
	next := int64(1_700_000_000_000_000)
	for i := 0; i < 2; i++ {
		rec := randRecord(r, sc, 3000, next+100, 3, true, true)
		if i == 0 {
			cut = rec.Column(0).(*array.Timestamp).Value(1500).ToTime(arrow.Microsecond).UnixMicro()
		}
		next = lastTs(rec)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 0, 1000))
		rec.Release()
	}
	opts := RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}}
	all, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "all"), 1), opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.WriterOptions = opts.WriterOptions.WithCutBefore(density.Cuts{At: []int64{cut}})
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "cut"), 1), opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.SplicedBytes == 0 || res.SplicedBytes >= all.SplicedBytes {
		t.Fatalf("spliced %d bytes with the cut, %d without: the row group holding it was copied", res.SplicedBytes, all.SplicedBytes)
	}
	var got, want []string
	cutAt := -1
	for i, o := range res.Outputs {
		got = append(got, readFileRows(t, localFS, o.Path, sc)...)
		if o.MinTimestamp >= cut && (i == 0 || res.Outputs[i-1].MaxTimestamp < cut) {
			cutAt = i
		}
	}
	if cutAt <= 0 {
		t.Fatalf("outputs %v: none starts at the cut %d", describe(res.Outputs), cut)
	}
	for _, o := range all.Outputs {
		want = append(want, readFileRows(t, localFS, o.Path, sc)...)
	}
	if !slices.Equal(got, want) {
		diffRows(t, got, want)
		t.Fatal("rows differ")
	}
}

// TestSpliceOutputPageIndexes reads a spliced output's page indexes as a
// reader does: every chunk's offset index lists contiguous pages that fill
// the chunk from its first data page to its end, starting at row 0, and the
// timestamp column index's page bounds are the first and last timestamps of
// the rows each page holds, for copied and re-encoded row groups alike.
func TestSpliceOutputPageIndexes(t *testing.T) {
	sc := testArrowSchema(t)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, 6))
	var inputs []Input
	next := int64(1_700_000_000_000_000)
	for i := 0; i < 2; i++ {
		rec := randRecord(r, sc, 3000, next+100, 3, true, true)
		next = lastTs(rec)
		inputs = append(inputs, writeInput(t, dir, sc, rec, 0, 1000))
		rec.Release()
	}
	// A sliver inside the last row group of the second input, which is then re-encoded.
	rec := randRecord(r, sc, 50, next-200, 1, true, true)
	inputs = append(inputs, writeInput(t, dir, sc, rec, 0, 1000))
	rec.Release()
	res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 1),
		RewriteOptions{ForcePath: PathSplice, SpliceMinRows: 500, WriterOptions: WriterOptions{RowGroupRows: 1000}})
	if err != nil {
		t.Fatal(err)
	}
	if res.SplicedBytes == 0 || res.SplicedBytes == res.BytesWritten {
		t.Fatalf("spliced %d of %d bytes: want copied and re-encoded row groups", res.SplicedBytes, res.BytesWritten)
	}
	for _, o := range res.Outputs {
		pf, err := file.OpenParquetFile(o.Path, false)
		if err != nil {
			t.Fatal(err)
		}
		fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		pir := pf.GetPageIndexReader()
		for rg := 0; rg < pf.NumRowGroups(); rg++ {
			rpi, err := pir.RowGroup(rg)
			if err != nil {
				t.Fatal(err)
			}
			rows := pf.MetaData().RowGroup(rg).NumRows()
			for j, c := range pf.MetaData().RowGroups[rg].Columns {
				oi, err := rpi.GetOffsetIndex(j)
				if err != nil || oi == nil {
					t.Fatalf("%s row group %d column %d: no offset index (%v)", o.Path, rg, j, err)
				}
				locs := oi.GetPageLocations()
				start := c.MetaData.DataPageOffset
				if d := c.MetaData.DictionaryPageOffset; d != nil && *d < start {
					start = *d
				}
				end := start + c.MetaData.TotalCompressedSize
				if len(locs) == 0 || locs[0].Offset != c.MetaData.DataPageOffset || locs[0].FirstRowIndex != 0 {
					t.Fatalf("%s row group %d column %d: first page %v, chunk's first data page at %d", o.Path, rg, j, locs, c.MetaData.DataPageOffset)
				}
				for k := 1; k < len(locs); k++ {
					if locs[k].Offset != locs[k-1].Offset+int64(locs[k-1].CompressedPageSize) || locs[k].FirstRowIndex <= locs[k-1].FirstRowIndex {
						t.Fatalf("%s row group %d column %d: pages %v and %v are not contiguous", o.Path, rg, j, locs[k-1], locs[k])
					}
				}
				if last := locs[len(locs)-1]; last.Offset+int64(last.CompressedPageSize) != end || last.FirstRowIndex >= rows {
					t.Fatalf("%s row group %d column %d: last page %v, chunk ends at %d", o.Path, rg, j, last, end)
				}
				if j != 0 {
					continue
				}
				ci, err := rpi.GetColumnIndex(0)
				if err != nil || ci == nil {
					t.Fatalf("%s row group %d: no timestamp column index (%v)", o.Path, rg, err)
				}
				tbl, err := fr.ReadRowGroups(context.Background(), []int{0}, []int{rg})
				if err != nil {
					t.Fatal(err)
				}
				col, err := array.Concatenate(tbl.Column(0).Data().Chunks(), memory.DefaultAllocator)
				tbl.Release()
				if err != nil {
					t.Fatal(err)
				}
				ts := col.(*array.Timestamp)
				mins, maxs := ci.GetMinValues(), ci.GetMaxValues()
				for k, l := range locs {
					last := rows - 1
					if k+1 < len(locs) {
						last = locs[k+1].FirstRowIndex - 1
					}
					lo, hi := int64(binary.LittleEndian.Uint64(mins[k])), int64(binary.LittleEndian.Uint64(maxs[k]))
					if lo != int64(ts.Value(int(l.FirstRowIndex))) || hi != int64(ts.Value(int(last))) {
						t.Fatalf("%s row group %d page %d: column index [%d, %d], rows [%d, %d]", o.Path, rg, k, lo, hi, ts.Value(int(l.FirstRowIndex)), ts.Value(int(last)))
					}
				}
				col.Release()
			}
		}
		pf.Close()
	}
}
