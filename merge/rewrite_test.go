package merge

import (
	"context"
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
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
)

var allPaths = []PathKind{PathInMemory, PathKWay, PathPageBounded, PathSplice}

// writeInput writes rec as one sorted input file of generation gen and
// returns it as an Input; a zero-row rec gives a valid empty Parquet file.
func writeInput(t testing.TB, dir string, sc *arrow.Schema, rec arrow.RecordBatch, gen, rowGroupRows int) Input {
	t.Helper()
	if rec.NumRows() == 0 {
		p := filepath.Join(dir, DataFileName(gen))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		fw, err := pqarrow.NewFileWriter(rec.Schema(), f, writer.ParquetWriterProperties(WriterOptions{}), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(p)
		return Input{Path: p, Size: st.Size(), Generation: gen}
	}
	// Inputs may lack added columns: write with the record's own schema.
	rsc := sc
	if rec.NumCols() < int64(sc.NumFields()) {
		rsc = arrow.NewSchema(sc.Fields()[:rec.NumCols()], nil)
	}
	outs, err := writer.WriteSorted(context.Background(), localFS, pathGen(dir, gen), rsc, []arrow.RecordBatch{rec},
		WriterOptions{RowGroupRows: int64(rowGroupRows), Generation: gen})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 {
		t.Fatalf("want one input file, got %d", len(outs))
	}
	return Input{Path: outs[0].Path, Size: outs[0].Size, Rows: outs[0].Rows, Generation: gen}
}

type scenario struct {
	inputs []Input
	want   []string // rows in expected order
	raws   []string // raw values present
}

// randScenario makes 1-8 sorted inputs with overlapping ranges, identical
// timestamps, nulls, some without the added column, some empty. In half the
// scenarios the inputs follow each other in time, overlapping only near
// their ends (or sharing an edge timestamp), as consecutive flushes do: the
// page-bounded path then skips the pages no other input overlaps.
func randScenario(t testing.TB, r *rand.Rand, sc *arrow.Schema, dir string) scenario {
	var s scenario
	n := 1 + r.IntN(8)
	chained := r.IntN(2) == 0
	next := int64(1_700_000_000_000_000)
	for i := 0; i < n; i++ {
		rows := r.IntN(2500)
		if r.IntN(6) == 0 {
			rows = 0
		}
		base := int64(1_700_000_000_000_000) + r.Int64N(3000)
		if chained {
			base = next - r.Int64N(20)
		}
		rec := randRecord(r, sc, rows, base, int64(1+r.IntN(4)), true, r.IntN(3) != 0)
		if rows > 0 {
			next = int64(rec.Column(0).(*array.Timestamp).Value(rows - 1))
		}
		in := writeInput(t, dir, sc, rec, r.IntN(4), 100+r.IntN(900))
		s.inputs = append(s.inputs, in)
		s.want = append(s.want, rowStrings(t, rec, sc)...)
		rec.Release()
	}
	sort.SliceStable(s.want, func(a, b int) bool { return rowTs(s.want[a]) < rowTs(s.want[b]) })
	for _, row := range s.want {
		if raw := strings.Split(row, "|")[2]; raw != "∅" {
			s.raws = append(s.raws, raw)
		}
	}
	return s
}

func TestRewritePathsAgree(t *testing.T) {
	sc := testArrowSchema(t)
	seeds := 5
	if testing.Short() {
		seeds = 3
	}
	if long() {
		seeds = 60
	}
	var spliced int64
	defer func() {
		if spliced == 0 && !t.Failed() {
			t.Errorf("the splice path copied no row group in %d scenarios", seeds)
		}
	}()
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := rand.New(rand.NewPCG(seed, 99))
		dir := t.TempDir()
		s := randScenario(t, r, sc, dir)
		wantGen := 0
		for _, in := range s.inputs {
			wantGen = max(wantGen, in.Generation+1)
		}
		opts := RewriteOptions{
			WriterOptions: WriterOptions{RowGroupRows: int64(200 + r.IntN(800)), TargetFileBytes: int64(20_000 + r.IntN(60_000)),
				Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}}},
			ChunkRows:     int64(64 + r.IntN(2000)),
			SpliceMinRows: int64(50 + r.IntN(200)),
			// The k-way path on either decoder: arrow-go's still runs for conform, filters,
			// folds and the arrow switch.
			Decoder: []Decoder{DecoderArrow, DecoderParquetGo}[seed%2],
		}
		var first []Output
		for _, path := range allPaths {
			opts.ForcePath = path
			outDir := filepath.Join(dir, "out-"+string(path))
			res, err := Rewrite(context.Background(), localFS, s.inputs, sc, pathGen(outDir, wantGen), opts)
			if err != nil {
				t.Fatalf("seed %d %s: %v", seed, path, err)
			}
			if path == PathSplice {
				spliced += res.SplicedBytes
			}
			if res.Path != path || res.BytesRead <= 0 && len(s.want) > 0 {
				t.Fatalf("seed %d: result path %s, bytes read %d", seed, res.Path, res.BytesRead)
			}
			if path == PathKWay && opts.Decoder == DecoderArrow && res.Decoder != DecoderArrow {
				t.Fatalf("seed %d: k-way asked for arrow-go decoded with %q", seed, res.Decoder)
			}
			got := checkOutputs(t, fmt.Sprintf("seed %d %s", seed, path), res.Outputs, sc, wantGen, s, path)
			if !slices.Equal(got, s.want) {
				diffRows(t, got, s.want)
				t.Fatalf("seed %d %s: rows differ (%d vs %d)", seed, path, len(got), len(s.want))
			}
			// Same rows in the same files: split points do not depend on the
			// path, except the splice's: copied row groups keep their length.
			if path == PathSplice {
				continue
			}
			if first == nil {
				first = res.Outputs
			} else if len(first) != len(res.Outputs) {
				t.Fatalf("seed %d %s: %d outputs, in-memory wrote %d", seed, path, len(res.Outputs), len(first))
			} else {
				for i := range first {
					if first[i].Rows != res.Outputs[i].Rows {
						t.Fatalf("seed %d %s: output %d has %d rows, in-memory %d", seed, path, i, res.Outputs[i].Rows, first[i].Rows)
					}
				}
			}
		}
	}
}

func diffRows(t *testing.T, got, want []string) {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Logf("first difference at row %d:\n got  %s\n want %s", i, got[i], want[i])
			return
		}
	}
}

// checkOutputs verifies the invariants of one rewrite's outputs and returns
// their rows in order.
func checkOutputs(t *testing.T, what string, outs []Output, sc *arrow.Schema, gen int, s scenario, path PathKind) []string {
	t.Helper()
	var got []string
	for i, o := range outs {
		if o.Generation != gen {
			t.Fatalf("%s: output generation %d, want %d", what, o.Generation, gen)
		}
		if g, ok := ParseGeneration(o.Path); !ok || g != gen {
			t.Fatalf("%s: output name %s lacks generation %d", what, o.Path, gen)
		}
		if i > 0 && outs[i-1].MaxTimestamp >= o.MinTimestamp {
			t.Fatalf("%s: outputs %d and %d overlap", what, i-1, i)
		}
		rows := readFileRows(t, localFS, o.Path, sc)
		if int64(len(rows)) != o.Rows {
			t.Fatalf("%s: output %d says %d rows, holds %d", what, i, o.Rows, len(rows))
		}
		f, err := writer.DecodeFooter(o.Meta)
		if err != nil {
			t.Fatalf("%s: footer of output %d: %v", what, i, err)
		}
		nrg, ok := f.NumRowGroups()
		if !ok || nrg != o.Meta.NumRowGroups() {
			t.Fatalf("%s: footer describes %d row groups, file has %d", what, nrg, o.Meta.NumRowGroups())
		}
		if want := path == PathInMemory; f.HasInvertedIndex("trace_id") != want {
			t.Fatalf("%s: inverted index present=%v, want %v", what, !want, want)
		}
		checkSearch(t, what, f, o, rows)
		got = append(got, rows...)
	}
	return got
}

// checkSearch: for substrings and tokens of the file's raw values, and for
// absent ones, pruning with the footer then evaluating rows gives the same
// rows as evaluating every row (what a stripped file gives).
func checkSearch(t *testing.T, what string, f *index.Footer, o Output, rows []string) {
	t.Helper()
	stripped, _ := index.Decode(nil)
	rgStart := make([]int, 0, o.Meta.NumRowGroups()+1)
	n := 0
	for i := 0; i < o.Meta.NumRowGroups(); i++ {
		rgStart = append(rgStart, n)
		n += int(o.Meta.RowGroup(i).NumRows())
	}
	rgStart = append(rgStart, n)
	raws := make([]string, len(rows))
	toks := make([][]string, len(rows))
	for i, row := range rows {
		raws[i] = strings.Split(row, "|")[2]
		toks[i] = tokens(raws[i])
	}
	queries := []string{"zzqx", "connection refused", "user=carol"}
	for i := range rows {
		if i%211 != 0 {
			continue
		}
		raw := raws[i]
		if raw == "∅" || len(raw) < 4 {
			continue
		}
		queries = append(queries, raw[1:4], raw[len(raw)-4:], raw)
	}
	eval := func(ft *index.Footer, q string, token bool) []int {
		var hits []int
		for rg := 0; rg+1 < len(rgStart); rg++ {
			if token && !ft.RowGroupMayContainToken(rg, q) || !token && !ft.RowGroupMayContainSubstring(rg, q) {
				continue
			}
			for i := rgStart[rg]; i < rgStart[rg+1]; i++ {
				raw := raws[i]
				if raw == "∅" {
					continue
				}
				if token && slices.Contains(toks[i], q) || !token && strings.Contains(raw, q) {
					hits = append(hits, i)
				}
			}
		}
		return hits
	}
	for _, q := range queries {
		for _, token := range []bool{false, true} {
			a, b := eval(f, q, token), eval(stripped, q, token)
			if !slices.Equal(a, b) {
				t.Fatalf("%s: query %q (token=%v): %d hits with metadata, %d without", what, q, token, len(a), len(b))
			}
			if len(a) > 0 && (!token && !f.MayContainSubstring(q) || token && !f.MayContainToken(q)) {
				t.Fatalf("%s: file-level answer no for present %q", what, q)
			}
		}
	}
	if len(rows) > 0 && (!f.MayContainTime(o.MinTimestamp, o.MinTimestamp+1) || !f.MayContainTime(o.MaxTimestamp, o.MaxTimestamp+1)) {
		t.Fatalf("%s: time range answered no", what)
	}
}

// tokens splits raw the way the token blooms do, written independently.
func tokens(raw string) []string {
	return strings.FieldsFunc(raw, func(r rune) bool {
		return !(r >= 0x80 || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
}

func TestChoosePath(t *testing.T) {
	b := Budget{MemoryBytes: 300 << 20, MaxFanIn: 32, StreamBytesPerInput: 4 << 20}
	for _, c := range []struct {
		est  int64
		fan  int
		want PathKind
	}{
		{50 << 20, 4, PathInMemory},
		{100 << 20, 40, PathInMemory}, // small bins fit whatever the fan-in
		{200 << 20, 8, PathKWay},
		{10 << 30, 32, PathKWay},
		{10 << 30, 33, PathPageBounded},
		{10 << 30, 8, PathKWay},
	} {
		got, reason := ChoosePath(c.est, c.fan, b)
		if got != c.want || reason == "" {
			t.Errorf("ChoosePath(%d, %d) = %s (%s), want %s", c.est, c.fan, got, reason, c.want)
		}
	}
	b.StreamBytesPerInput = 64 << 20
	if got, _ := ChoosePath(10<<30, 8, b); got != PathPageBounded {
		t.Errorf("wide rows: got %s, want page-bounded", got)
	}
	// Mostly copyable bins that would stream splice, as long as the rest
	// streams within the budget.
	b.StreamBytesPerInput = 4 << 20
	for _, c := range []struct {
		copyable, total int64
		fan             int
		want            PathKind
	}{
		{60, 100, 8, PathSplice},
		{60, 100, 33, PathPageBounded}, // the re-encoded rest cannot stream
		{40, 100, 8, PathKWay},
		{0, 0, 8, PathKWay},
	} {
		b.SpliceBytes, b.InputBytes = c.copyable<<20, c.total<<20
		if got, reason := ChoosePath(10<<30, c.fan, b); got != c.want || reason == "" {
			t.Errorf("splice %d of %d MiB, fan-in %d: got %s (%s), want %s", c.copyable, c.total, c.fan, got, reason, c.want)
		}
	}
	// A bin that fits in memory keeps the in-memory path's whole-file
	// metadata, however much of it the splice could copy.
	b.SpliceBytes, b.InputBytes = 60<<20, 100<<20
	if got, _ := ChoosePath(10<<20, 4, b); got != PathInMemory {
		t.Errorf("a small mostly disjoint bin: got %s, want in-memory", got)
	}
	if got, reason := ChoosePath(1<<20, 2, Budget{MemoryBytes: 1 << 30, MaxFanIn: 8, StreamBytesPerInput: 1, SpliceBytes: 60, InputBytes: 100}); got != PathInMemory {
		t.Errorf("a bin that fits in memory: got %s (%s), want in-memory", got, reason)
	}
}

func TestMemoryBudget(t *testing.T) {
	const max64 = int64(^uint64(0) >> 1)
	for _, c := range []struct {
		gomem, cg int64
		want      int64
	}{
		{0, 0, DefaultUnlimitedBudget},
		{max64, 0, DefaultUnlimitedBudget},
		{1 << 30, 0, (1 << 30) * 4 / 10},
		{0, 2 << 30, (2 << 30) * 4 / 10},
		{4 << 30, 2 << 30, (2 << 30) * 4 / 10},
		{70 << 20, 0, minBudget},
		{10 << 20, 0, 5 << 20}, // the floor never exceeds a small pod's limit
	} {
		if got := MemoryBudget(c.gomem, c.cg, DefaultMergeFraction); got != c.want {
			t.Errorf("MemoryBudget(%d, %d) = %d, want %d", c.gomem, c.cg, got, c.want)
		}
	}
	for in, want := range map[string]int64{"max\n": 0, "1073741824\n": 1 << 30, "9223372036854771712": 0} {
		if got, ok := parseCgroupLimit(in); !ok || got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, %v", in, got, ok)
		}
	}
	if DefaultMemoryBudget() <= 0 {
		t.Fatal("DefaultMemoryBudget is not positive")
	}
}

// TestPageBoundedSkipsIsolatedPages: inputs that follow each other in time
// overlap only at their ends; the page-bounded timestamp pass takes the other
// pages' rows from the page index, and the rows come out as the k-way path
// writes them. The inputs are listed latest first and some share their edge
// timestamp, so ties between a skipped page and another input's first row
// must go to the input listed first.
func TestPageBoundedSkipsIsolatedPages(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	var ins []Input
	var total int64
	shared := 0
	next := int64(1_700_000_000_000_000)
	for i := 0; i < 6; i++ {
		overlap := []int64{0, 0, 30}[i%3]
		rec := randRecord(r, sc, 3000, next-overlap, 3, true, true)
		ts := rec.Column(0).(*array.Timestamp)
		if i > 0 && int64(ts.Value(0)) == next {
			shared++
		}
		next = int64(ts.Value(2999))
		ins = append([]Input{writeInput(t, dir, sc, rec, 0, 250)}, ins...) // one timestamp page per row group
		total += rec.NumRows()
		rec.Release()
	}
	if shared == 0 {
		t.Fatal("test setup: no two inputs share an edge timestamp")
	}
	rows := map[PathKind][]string{}
	for _, path := range []PathKind{PathKWay, PathPageBounded} {
		out := filepath.Join(dir, "out-"+string(path))
		res, err := Rewrite(context.Background(), localFS, ins, sc, pathGen(out, 1), RewriteOptions{ForcePath: path, ChunkRows: 700})
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, o := range res.Outputs {
			rows[path] = append(rows[path], readFileRows(t, localFS, o.Path, sc)...)
		}
		if path == PathPageBounded && (res.tsSkipped < total/2 || res.tsSkipped >= total) {
			t.Fatalf("timestamp pass took %d of %d rows from the page index, want most but not all", res.tsSkipped, total)
		}
	}
	if int64(len(rows[PathKWay])) != total || !slices.Equal(rows[PathKWay], rows[PathPageBounded]) {
		diffRows(t, rows[PathPageBounded], rows[PathKWay])
		t.Fatalf("page-bounded rows differ from k-way's (%d vs %d rows)", len(rows[PathPageBounded]), len(rows[PathKWay]))
	}
}
