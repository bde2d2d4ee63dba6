package merge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/merge/rowfilter"
)

// randFilter draws 1-3 predicates over service (IN), level (=) and a time
// window, and returns the filter and an independent evaluator over the
// rendered rows of rowStrings (ts|service|raw|level|trace_id|).
func randFilter(r *rand.Rand, base int64) (*rowfilter.Filter, func(row string) bool) {
	f := &rowfilter.Filter{}
	type pred struct {
		svcs     []string
		level    string
		from, to int64
	}
	var ps []pred
	for n := 1 + r.IntN(3); n > 0; n-- {
		var p rowfilter.Predicate
		var q pred
		if r.IntN(4) != 0 {
			for _, s := range services {
				if r.IntN(3) == 0 {
					q.svcs = append(q.svcs, s)
				}
			}
			if len(q.svcs) == 0 {
				q.svcs = []string{services[r.IntN(len(services))]}
			}
			p.Columns = append(p.Columns, rowfilter.ColumnIn{Column: "service", Values: q.svcs})
		}
		if r.IntN(3) == 0 {
			q.level = strconv.Itoa(r.IntN(6))
			p.Columns = append(p.Columns, rowfilter.ColumnIn{Column: "level", Values: []string{q.level}})
		}
		q.from, q.to = -1<<62, 1<<62
		if r.IntN(2) == 0 {
			q.from = base + r.Int64N(3000)
			p.From = &q.from
		}
		if r.IntN(2) == 0 {
			q.to = base + r.Int64N(6000)
			p.To = &q.to
		}
		f.Predicates = append(f.Predicates, p)
		ps = append(ps, q)
	}
	match := func(row string) bool {
		cols := strings.Split(row, "|")
		ts, _ := strconv.ParseInt(cols[0], 10, 64)
		for _, q := range ps {
			if ts < q.from || ts >= q.to {
				continue
			}
			if q.svcs != nil && !slices.Contains(q.svcs, cols[1]) {
				continue
			}
			if q.level != "" && cols[3] != q.level {
				continue
			}
			return true
		}
		return false
	}
	return f, match
}

// TestDeleteRewriteDropsExactlyTheMatchingRows: a delete-task rewrite's output
// is exactly the input multiset minus the rows the filter matches, sorted,
// time-disjoint, at generation 0, on the in-memory path and on a streamed path
// (forced k-way, and a budget so small that ChoosePath would go page-bounded).
func TestDeleteRewriteDropsExactlyTheMatchingRows(t *testing.T) {
	sc := testArrowSchema(t)
	seeds := 12
	if long() {
		seeds = 120
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		dir := t.TempDir()
		s := randScenario(t, r, sc, dir)
		f, match := randFilter(r, 1_700_000_000_000_000)
		var want []string
		for _, row := range s.want {
			if !match(row) {
				want = append(want, row)
			}
		}
		for _, c := range []struct {
			force  PathKind
			budget int64
			want   PathKind
		}{{PathInMemory, 0, PathInMemory}, {PathKWay, 0, PathKWay}, {"", 1, PathKWay}} {
			what := fmt.Sprintf("seed %d path %q budget %d", seed, c.force, c.budget)
			opts := RewriteOptions{
				WriterOptions: WriterOptions{RowGroupRows: int64(200 + r.IntN(800)), TargetFileBytes: int64(20_000 + r.IntN(60_000)),
					Metadata: MetadataOptions{IndexColumns: []string{"trace_id"}, IndexAtFlush: true}},
				ForcePath: c.force, MemoryBudget: c.budget, DeleteTask: true, RowFilter: f,
			}
			res, err := Rewrite(context.Background(), localFS, s.inputs, sc, pathGen(filepath.Join(dir, "out-"+string(c.force)), 0), opts)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if res.Path != c.want {
				t.Fatalf("%s: took path %s (%s), want %s", what, res.Path, res.Reason, c.want)
			}
			var got []string
			for i, o := range res.Outputs {
				if o.Generation != 0 {
					t.Fatalf("%s: output generation %d, want 0", what, o.Generation)
				}
				if i > 0 && res.Outputs[i-1].MaxTimestamp >= o.MinTimestamp {
					t.Fatalf("%s: outputs %d and %d overlap", what, i-1, i)
				}
				got = append(got, readFileRows(t, localFS, o.Path, sc)...)
			}
			if !slices.Equal(got, want) {
				diffRows(t, got, want)
				t.Fatalf("%s: %d rows out, want %d of %d", what, len(got), len(want), len(s.want))
			}
			var deleted int64
			for _, n := range res.Deleted {
				deleted += n
			}
			if deleted != int64(len(s.want)-len(want)) {
				t.Fatalf("%s: result says %d rows deleted, %d were", what, deleted, len(s.want)-len(want))
			}
		}
		// CountMatches agrees with the rewrite, file by file.
		for _, in := range s.inputs {
			per, rows, err := CountMatches(context.Background(), localFS, in.Path, sc, "timestamp", f, nil)
			if err != nil {
				t.Fatal(err)
			}
			var n, wantN int64
			for _, c := range per {
				n += c
			}
			all := readFileRows(t, localFS, in.Path, sc)
			for _, row := range all {
				if match(row) {
					wantN++
				}
			}
			if n != wantN || rows != int64(len(all)) {
				t.Fatalf("seed %d: CountMatches(%s) = %d of %d rows, want %d of %d", seed, in.Path, n, rows, wantN, len(all))
			}
		}
	}
}

// TestDeleteEverythingWritesNothing: a file whose every row matches leaves no output.
func TestDeleteEverythingWritesNothing(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(3, 3))
	dir := t.TempDir()
	rec := randRecord(r, sc, 500, 1_700_000_000_000_000, 3, true, true)
	in := writeInput(t, dir, sc, rec, 2, 100)
	rec.Release()
	for _, p := range []PathKind{PathInMemory, PathKWay} {
		res, err := Rewrite(context.Background(), localFS, []Input{in}, sc, pathGen(filepath.Join(dir, string(p)), 0),
			RewriteOptions{ForcePath: p, DeleteTask: true, RowFilter: &rowfilter.Filter{Predicates: []rowfilter.Predicate{{}}}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Outputs) != 0 || res.Deleted[0] != 500 {
			t.Fatalf("%s: %d outputs, %v deleted; want none and 500", p, len(res.Outputs), res.Deleted)
		}
	}
}

func TestRowFilterRejectsBadPredicates(t *testing.T) {
	sc := testArrowSchema(t)
	for _, c := range []struct {
		f    rowfilter.Filter
		want string
	}{
		{rowfilter.Filter{Predicates: []rowfilter.Predicate{{Columns: []rowfilter.ColumnIn{{Column: "user_id", Values: []string{"a"}}}}}}, `no column "user_id"`},
		{rowfilter.Filter{Predicates: []rowfilter.Predicate{{Columns: []rowfilter.ColumnIn{{Column: "level", Values: []string{"high"}}}}}}, "accepted: a decimal integer"},
		{rowfilter.Filter{Predicates: []rowfilter.Predicate{{Columns: []rowfilter.ColumnIn{{Column: "timestamp", Values: []string{"1"}}}}}}, "accepted: delete predicates test string, integer and boolean"},
	} {
		_, err := compileFilter(&c.f, sc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%+v: error %v, want it to mention %q", c.f, err, c.want)
		}
	}
	// A value that does not fit the file's column type is named by its column only: the error
	// reaches logs and the status page's skipped cause, and the value may be personal data.
	const email = "alice.smith@example.com"
	f := rowfilter.Filter{Predicates: []rowfilter.Predicate{{Columns: []rowfilter.ColumnIn{{Column: "level", Values: []string{email}}}}}}
	if _, err := compileFilter(&f, sc); err == nil || strings.Contains(err.Error(), "alice") || !strings.Contains(err.Error(), `"level"`) {
		t.Fatalf("a value that is not an integer: error %v, want one naming the column and not the value", err)
	}
	if _, err := Rewrite(context.Background(), localFS, nil, sc, pathGen(t.TempDir(), 0),
		RewriteOptions{ForcePath: PathPageBounded, RowFilter: &rowfilter.Filter{}}); err == nil {
		t.Fatal("a forced page-bounded rewrite with a row filter was accepted")
	}
}

// TestMatcherKeepsExactlyTheMatchingRows: the reader's side of the filter (the WAL buffer's)
// keeps, in order, exactly the rows a delete-task rewrite would drop.
func TestMatcherKeepsExactlyTheMatchingRows(t *testing.T) {
	sc := testArrowSchema(t)
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 200; i++ {
		base := int64(1_700_000_000_000_000)
		f, match := randFilter(r, base)
		rec := randRecord(r, sc, 1+r.IntN(300), base, 40, r.IntN(2) == 0, true)
		m, err := CompileFilter(f, sc, "timestamp")
		if err != nil {
			t.Fatal(err)
		}
		kept, err := m.Keep(context.Background(), rec, nil)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, row := range rowStrings(t, rec, sc) {
			if match(row) {
				want = append(want, row)
			}
		}
		if got := rowStrings(t, kept, sc); !slices.Equal(got, want) {
			t.Fatalf("case %d: kept %d rows, want %d", i, len(got), len(want))
		}
		kept.Release()
		rec.Release()
	}
	if _, err := CompileFilter(&rowfilter.Filter{Predicates: []rowfilter.Predicate{{Columns: []rowfilter.ColumnIn{{Column: "level", Values: []string{"x"}}}}}}, sc, "timestamp"); err == nil ||
		strings.Contains(err.Error(), "delete") || !strings.Contains(err.Error(), `column "level"`) || strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("error %v: should name the column, not the value (it may be personal data) nor a delete predicate", err)
	}
	if _, err := CompileFilter(&rowfilter.Filter{}, sc, "service"); err == nil {
		t.Fatal("a non-timestamp time column is accepted")
	}
}

// TestFoldKeysAreFilterable: a fold keys on exactly the types delete predicates test, so a
// deletion request works on every key of a rollup (merge/folding cannot import merge, so each
// says it).
func TestFoldKeysAreFilterable(t *testing.T) {
	for _, typ := range []arrow.DataType{arrow.BinaryTypes.String, arrow.BinaryTypes.LargeString, arrow.BinaryTypes.Binary,
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Float64, arrow.FixedWidthTypes.Boolean,
		&arrow.TimestampType{Unit: arrow.Microsecond}, arrow.FixedWidthTypes.Date32} {
		if f, k := rowfilter.CheckType(typ), folding.FoldableKeyType(typ); (f == nil) != (k == nil) {
			t.Errorf("%s: filterable %v, fold key %v", typ, f, k)
		}
	}
}
