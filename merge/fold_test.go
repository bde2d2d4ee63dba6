package merge

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/internal/rolluptest"
)

const (
	usMinute = rolluptest.Minute
	usHour   = rolluptest.Hour
	usDay    = rolluptest.Day
)

var rollupSchema = rolluptest.Schema

var rollupFold = folding.Fold{
	Keys:   []string{"service", "severity", "code"},
	Bucket: usMinute,
	Aggregates: []folding.Aggregate{{Column: "events", Func: folding.AggCount}, {Column: "bytes", Func: folding.AggSum},
		{Column: "latency_min", Func: folding.AggMin}, {Column: "latency_max", Func: folding.AggMax}},
}

type rollupRow = rolluptest.Row

func ptr[T any](v T) *T { return rolluptest.Ptr(v) }

// randRollup makes n rows from base on, sorted by time, as one pod's partial counts.
func randRollup(r *rand.Rand, n int, base, spread int64) []rollupRow {
	sev := []string{"info", "warn", "error"}
	rows := make([]rollupRow, n)
	ts := base
	for i := range rows {
		ts += r.Int64N(spread + 1)
		row := rollupRow{TS: ts, Service: ptr(services[r.IntN(3)]), Code: ptr(int32(200 + 100*r.IntN(3)))}
		if r.IntN(8) > 0 {
			row.Severity = ptr(sev[r.IntN(len(sev))])
		}
		if r.IntN(10) > 0 {
			row.Events = ptr(int64(1 + r.IntN(50)))
		}
		row.Bytes = ptr(int64(r.IntN(1 << 16)))
		if r.IntN(6) > 0 {
			l := float64(r.IntN(1000)) / 10
			row.LatencyMin, row.LatencyMax = ptr(l), ptr(l+float64(r.IntN(500)))
		}
		rows[i] = row
	}
	return rows
}

func rollupRecord(rows []rollupRow) arrow.RecordBatch { return rolluptest.Record(rows) }

// readRollup reads rollup rows back from files.
func readRollup(t testing.TB, paths ...string) []rollupRow {
	t.Helper()
	var out []rollupRow
	for _, p := range paths {
		in, err := input.Open(localFS, p, memory.DefaultAllocator, 4096)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := in.Arrow.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			for i := 0; i < int(rec.NumRows()); i++ {
				row := rollupRow{TS: int64(rec.Column(0).(*array.Timestamp).Value(i))}
				if c := rec.Column(1).(*array.String); c.IsValid(i) {
					row.Service = ptr(c.Value(i))
				}
				if c := rec.Column(2).(*array.String); c.IsValid(i) {
					row.Severity = ptr(c.Value(i))
				}
				if c := rec.Column(3).(*array.Int32); c.IsValid(i) {
					row.Code = ptr(c.Value(i))
				}
				if c := rec.Column(4).(*array.Int64); c.IsValid(i) {
					row.Events = ptr(c.Value(i))
				}
				if c := rec.Column(5).(*array.Int64); c.IsValid(i) {
					row.Bytes = ptr(c.Value(i))
				}
				if c := rec.Column(6).(*array.Float64); c.IsValid(i) {
					row.LatencyMin = ptr(c.Value(i))
				}
				if c := rec.Column(7).(*array.Float64); c.IsValid(i) {
					row.LatencyMax = ptr(c.Value(i))
				}
				out = append(out, row)
			}
		}
		if err := rr.Err(); err != nil {
			t.Fatal(err)
		}
		rr.Release()
		_ = in.Close()
	}
	return out
}

func optStr[T any](v *T) string {
	if v == nil {
		return "∅"
	}
	return fmt.Sprint(*v)
}

// groupBy is GROUP BY floor(ts, bucket), keys with sum(events), sum(bytes), min, max and
// count(*) left out (it is what folding changes): the aggregates a dashboard reads.
func groupBy(rows []rollupRow, bucket int64) map[string]string {
	type agg struct {
		events, bytes int64
		hasE, hasB    bool
		lmin, lmax    float64
		hasL, hasM    bool
	}
	m := map[string]*agg{}
	for _, r := range rows {
		k := fmt.Sprintf("%d|%s|%s|%s", floorUs(r.TS, bucket), optStr(r.Service), optStr(r.Severity), optStr(r.Code))
		a := m[k]
		if a == nil {
			a = &agg{lmin: math.Inf(1), lmax: math.Inf(-1)}
			m[k] = a
		}
		if r.Events != nil {
			a.events, a.hasE = a.events+*r.Events, true
		}
		if r.Bytes != nil {
			a.bytes, a.hasB = a.bytes+*r.Bytes, true
		}
		if r.LatencyMin != nil {
			a.lmin, a.hasL = math.Min(a.lmin, *r.LatencyMin), true
		}
		if r.LatencyMax != nil {
			a.lmax, a.hasM = math.Max(a.lmax, *r.LatencyMax), true
		}
	}
	out := map[string]string{}
	for k, a := range m {
		out[k] = fmt.Sprintf("%d/%v %d/%v %v/%v %v/%v", a.events, a.hasE, a.bytes, a.hasB, a.lmin, a.hasL, a.lmax, a.hasM)
	}
	return out
}

func distinctBuckets(rows []rollupRow, bucket int64) int { return len(groupBy(rows, bucket)) }

func sameAggregates(t *testing.T, what string, got, want []rollupRow, buckets ...int64) {
	t.Helper()
	for _, b := range buckets {
		g, w := groupBy(got, b), groupBy(want, b)
		if len(g) != len(w) {
			t.Fatalf("%s: GROUP BY %d us gives %d groups, want %d", what, b, len(g), len(w))
		}
		for k, v := range w {
			if g[k] != v {
				t.Fatalf("%s: GROUP BY %d us, group %s: got %s, want %s", what, b, k, g[k], v)
			}
		}
	}
}

// foldFiles folds inputs on path and returns the output paths and the result.
func foldFiles(t *testing.T, dir string, inputs []Input, f folding.Fold, path PathKind) ([]string, RewriteResult) {
	t.Helper()
	res, err := Rewrite(context.Background(), localFS, inputs, rollupSchema, pathGen(dir, 1),
		RewriteOptions{Fold: &f, ForcePath: path, WriterOptions: WriterOptions{TargetFileBytes: 64 << 10}})
	if err != nil {
		t.Fatalf("fold on %s: %v", path, err)
	}
	var paths []string
	var last int64 = math.MinInt64
	for _, o := range res.Outputs {
		paths = append(paths, o.Path)
		if o.MinTimestamp <= last {
			t.Fatalf("outputs not time-disjoint: %d after %d", o.MinTimestamp, last)
		}
		last = o.MaxTimestamp
	}
	return paths, res
}

func writeRollup(t *testing.T, dir string, rows []rollupRow) Input {
	rec := rollupRecord(rows)
	defer rec.Release()
	return writeInput(t, dir, rollupSchema, rec, 0, 512)
}

// TestFoldKeepsAggregates: at the fold bucket and coarser, GROUP BY gives the same sums, counts,
// mins and maxes after a fold on both paths (promise 11); one row per distinct (bucket, keys);
// folding the output again changes nothing.
func TestFoldKeepsAggregates(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, path := range []PathKind{PathInMemory, PathKWay} {
		t.Run(string(path), func(t *testing.T) {
			dir := t.TempDir()
			var all []rollupRow
			var inputs []Input
			for pod := 0; pod < 6; pod++ {
				rows := randRollup(r, 3000, 1_700_000_000_000_000, 2e6)
				all = append(all, rows...)
				inputs = append(inputs, writeRollup(t, dir, rows))
			}
			paths, res := foldFiles(t, dir, inputs, rollupFold, path)
			got := readRollup(t, paths...)
			sameAggregates(t, "fold", got, all, usMinute, 5*usMinute, usHour, usDay)
			if want := distinctBuckets(all, usMinute); len(got) != want {
				t.Fatalf("folded rows %d, want distinct (bucket, keys) %d", len(got), want)
			}
			if res.Fold == nil || res.Fold.RowsIn != int64(len(all)) || res.Fold.RowsOut != int64(len(got)) || res.Fold.PartialFlushes != 0 {
				t.Fatalf("fold stats %+v, want %d in, %d out, no partial flush", res.Fold, len(all), len(got))
			}
			for _, row := range got {
				if row.TS%usMinute != 0 {
					t.Fatalf("folded row at %d is not a bucket start", row.TS)
				}
			}
			// Idempotent: a folded file folds to the same rows.
			var again []Input
			for _, o := range res.Outputs {
				again = append(again, Input{Path: o.Path, Size: o.Size, Rows: o.Rows, Generation: 1})
			}
			paths2, _ := foldFiles(t, t.TempDir(), again, rollupFold, path)
			if g2 := readRollup(t, paths2...); !slices.EqualFunc(g2, got, func(a, b rollupRow) bool { return rowKey(a) == rowKey(b) }) {
				t.Fatalf("folding a folded file changed it: %d rows, was %d", len(g2), len(got))
			}
		})
	}
}

func rowKey(r rollupRow) string {
	return strings.Join([]string{fmt.Sprint(r.TS), optStr(r.Service), optStr(r.Severity), optStr(r.Code), optStr(r.Events),
		optStr(r.Bytes), optStr(r.LatencyMin), optStr(r.LatencyMax)}, "|")
}

// TestFoldProperty: random bin splits and orders, folded in any number of passes, give the
// aggregates of the rows at the fold bucket and coarser; with a small group budget the partial
// flushes are correct too.
func TestFoldProperty(t *testing.T) {
	trials := 12
	if long() {
		trials = 100
	}
	for trial := 0; trial < trials; trial++ {
		r := rand.New(rand.NewPCG(uint64(trial), 7))
		dir := t.TempDir()
		var all []rollupRow
		var files []Input
		for pod := 0; pod < 2+r.IntN(6); pod++ {
			rows := randRollup(r, 1+r.IntN(800), 1_700_000_000_000_000+r.Int64N(10*usMinute), r.Int64N(3e6))
			all = append(all, rows...)
			// A pod's rows cut into consecutive files, as drains flush them.
			for len(rows) > 0 {
				n := 1 + r.IntN(len(rows))
				files = append(files, writeRollup(t, dir, rows[:n]))
				rows = rows[n:]
			}
		}
		f := rollupFold
		if r.IntN(3) == 0 {
			f.MaxGroups = 1 + r.IntN(4)
		}
		// Fold random bins of the files in random order until one file set is left.
		var partial int64
		for pass := 0; len(files) > 1 || pass == 0; pass++ {
			r.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
			n := 1 + r.IntN(len(files))
			path := []PathKind{PathInMemory, PathKWay}[r.IntN(2)]
			_, res := foldFiles(t, dir, files[:n], f, path)
			partial += res.Fold.PartialFlushes
			rest := files[n:]
			files = nil
			for _, o := range res.Outputs {
				files = append(files, Input{Path: o.Path, Size: o.Size, Rows: o.Rows, Generation: 1})
			}
			files = append(files, rest...)
			if len(files) == 1 {
				break
			}
		}
		var paths []string
		for _, in := range files {
			paths = append(paths, in.Path)
		}
		got := readRollup(t, paths...)
		what := fmt.Sprintf("trial %d (max groups %d)", trial, f.MaxGroups)
		sameAggregates(t, what, got, all, usMinute, 3*usMinute, usHour)
		if f.MaxGroups == 0 && len(got) != distinctBuckets(all, usMinute) {
			t.Fatalf("%s: %d rows after folding into one file set, want %d", what, len(got), distinctBuckets(all, usMinute))
		}
		if f.MaxGroups > 0 && f.MaxGroups < distinctBuckets(all, usMinute) && partial == 0 {
			t.Fatalf("%s: a budget of %d groups never flushed partially", what, f.MaxGroups)
		}
	}
}

// TestFoldBudgetFlush forces partial flushes: more rows than distinct groups, the same
// aggregates.
func TestFoldBudgetFlush(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dir := t.TempDir()
	var all []rollupRow
	var inputs []Input
	for pod := 0; pod < 4; pod++ {
		rows := randRollup(r, 2000, 1_700_000_000_000_000, 1e6)
		all = append(all, rows...)
		inputs = append(inputs, writeRollup(t, dir, rows))
	}
	f := rollupFold
	f.MaxGroups = 5
	for _, path := range []PathKind{PathInMemory, PathKWay} {
		paths, res := foldFiles(t, dir, inputs, f, path)
		got := readRollup(t, paths...)
		if res.Fold.PartialFlushes == 0 || len(got) <= distinctBuckets(all, usMinute) {
			t.Fatalf("%s: %d partial flushes, %d rows for %d groups: the budget did not bind", path, res.Fold.PartialFlushes, len(got), distinctBuckets(all, usMinute))
		}
		sameAggregates(t, string(path), got, all, usMinute, usHour)
	}
}

// TestFoldTiers: rows before a tier's cutoff fold at its bucket, newer ones at the fold bucket;
// the aggregates at the tier's bucket stay.
func TestFoldTiers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dir := t.TempDir()
	base := int64(1_700_006_400_000_000) // a day start
	var all []rollupRow
	var inputs []Input
	for pod := 0; pod < 3; pod++ {
		rows := randRollup(r, 4000, base, 60e6) // about 2.8 days
		all = append(all, rows...)
		inputs = append(inputs, writeRollup(t, dir, rows))
	}
	f := rollupFold
	dayCut, hourCut := base+usDay+3*usHour+17*usMinute, base+2*usDay+5*usHour+3*usMinute
	f.Tiers = []folding.FoldTier{{Before: dayCut, Bucket: usDay}, {Before: hourCut, Bucket: usHour}}
	paths, _ := foldFiles(t, dir, inputs, f, PathKWay)
	got := readRollup(t, paths...)
	for _, row := range got {
		switch {
		case row.TS < floorUs(dayCut, usDay) && row.TS%usDay != 0,
			row.TS < floorUs(hourCut, usHour) && row.TS%usHour != 0:
			t.Fatalf("row at %d older than its tier's cutoff is not at a tier bucket start", row.TS)
		}
	}
	sameAggregates(t, "tiers", got, all, usDay)
	var newer, newerAll []rollupRow
	for _, row := range got {
		if row.TS >= floorUs(hourCut, usHour) {
			newer = append(newer, row)
		}
	}
	for _, row := range all {
		if row.TS >= floorUs(hourCut, usHour) {
			newerAll = append(newerAll, row)
		}
	}
	sameAggregates(t, "rows newer than the tiers", newer, newerAll, usMinute)
}

func TestFoldedFileName(t *testing.T) {
	n := FoldedFileName(3, 2)
	if g, ok := ParseGeneration("dir/" + n); !ok || g != 3 {
		t.Fatalf("%s: generation %d %v", n, g, ok)
	}
	if tier, ok := ParseFoldTier("s3://b/dir/" + n); !ok || tier != 2 {
		t.Fatalf("%s: tier %d %v", n, tier, ok)
	}
	if _, ok := ParseFoldTier(DataFileName(3)); ok {
		t.Fatal("an unfolded file has a tier")
	}
	// An unfolded file whose random UUID starts with "f" and digits has no tier.
	unfolded := "g0000-f1234567-89ab-4cde-8f01-23456789abcd.parquet"
	if tier, ok := ParseFoldTier("dir/" + unfolded); ok {
		t.Fatalf("%s: unfolded file parsed as tier %d", unfolded, tier)
	}
	// Its folded form still parses.
	if tier, ok := ParseFoldTier("g0000-f7-f1234567-89ab-4cde-8f01-23456789abcd.parquet"); !ok || tier != 7 {
		t.Fatalf("folded name: tier %d %v", tier, ok)
	}
}

// floorUs rounds ts down to a multiple of b (folding's own rounding is unexported).
func floorUs(ts, b int64) int64 {
	if r := ts % b; r < 0 {
		return ts - r - b
	} else {
		return ts - r
	}
}
