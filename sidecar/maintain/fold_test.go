package maintain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
	"github.com/siglake/siglake/test/testenv"
)

var rollupSpec = fold.Spec{Bucket: "1m", Keys: []string{"service", "severity"},
	Aggregates: []fold.Aggregate{{Column: "events", Func: "count"}, {Column: "bytes", Func: "sum"}, {Column: "max_bytes", Func: "max"}}}

// sealRollup seals one segment of partial rollup rows per pod, each pod's events over the same
// minutes (so the pods' files overlap, as 20 ingest pods' do), and returns their aggregates.
func sealRollup(e *env, pods, events int, seed uint64, start time.Time, step time.Duration) aggregates {
	e.t.Helper()
	want := aggregates{}
	for p := 0; p < pods; p++ {
		g := walgen.New(walgen.Options{Seed: seed + uint64(p)*101, LateFraction: 0.02, MaxLateness: time.Minute})
		rec := g.Batch(memory.DefaultAllocator, start, events, step)
		roll := walgen.Rollup(memory.DefaultAllocator, rec)
		rec.Release()
		want.add(roll)
		e.te.Seal(walgen.RollupTable, roll)
		roll.Release()
	}
	return want
}

// aggregates are the rollup's GROUP BY minute, service, severity: sum(events), sum(bytes),
// max(max_bytes), and the rows that made them.
type aggregates map[string]*rollupAgg

type rollupAgg struct{ events, bytes, maxBytes, rows int64 }

func (a aggregates) add(rec arrow.RecordBatch) {
	ts := rec.Column(0).(*array.Timestamp)
	for i := 0; i < int(rec.NumRows()); i++ {
		k := fmt.Sprintf("%d|%s|%s", int64(ts.Value(i))/60e6, rec.Column(1).ValueStr(i), rec.Column(2).ValueStr(i))
		g := a[k]
		if g == nil {
			g = &rollupAgg{}
			a[k] = g
		}
		g.events += rec.Column(3).(*array.Int64).Value(i)
		g.bytes += rec.Column(4).(*array.Int64).Value(i)
		g.maxBytes = max(g.maxBytes, rec.Column(5).(*array.Int64).Value(i))
		g.rows++
	}
}

// coarsen is a at a bucket of `minutes` minutes (rows left out).
func (a aggregates) coarsen(minutes int64) map[string]string {
	out := map[string]*rollupAgg{}
	for k, g := range a {
		var m int64
		var rest string
		fmt.Sscanf(k[:strings.IndexByte(k, '|')], "%d", &m)
		rest = k[strings.IndexByte(k, '|'):]
		ck := fmt.Sprintf("%d%s", m-m%minutes, rest)
		c := out[ck]
		if c == nil {
			c = &rollupAgg{}
			out[ck] = c
		}
		c.events += g.events
		c.bytes += g.bytes
		c.maxBytes = max(c.maxBytes, g.maxBytes)
	}
	s := map[string]string{}
	for k, c := range out {
		s[k] = fmt.Sprintf("%d %d %d", c.events, c.bytes, c.maxBytes)
	}
	return s
}

func (a aggregates) rows() (n int64) {
	for _, g := range a {
		n += g.rows
	}
	return n
}

// viaIceberg reads the rollup through iceberg-go's scanner.
func viaIceberg(t *testing.T, e *env) aggregates {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), walgen.RollupTable)
	if err != nil {
		t.Fatal(err)
	}
	_, recs, err := tbl.Scan().ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := aggregates{}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		got.add(rec)
		rec.Release()
	}
	return got
}

// viaDuckDB runs the dashboard's GROUP BY in DuckDB over the table's live files.
func viaDuckDB(t *testing.T, e *env, minutes int64) (map[string]string, int64) {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), walgen.RollupTable)
	if err != nil {
		t.Fatal(err)
	}
	var quoted []string
	for _, f := range testenv.TableFiles(t, tbl, testenv.S3Env{}) {
		quoted = append(quoted, "'"+f+"'")
	}
	duck := testenv.DuckDB(t)
	from := "read_parquet([" + strings.Join(quoted, ", ") + "])"
	q := fmt.Sprintf(`SELECT epoch_us("timestamp") // 60000000 // %d * %d AS m, coalesce(service, '(null)') AS service,
		coalesce(severity, '(null)') AS severity, sum(events) AS e, sum(bytes) AS b, max(max_bytes) AS x
		FROM %s GROUP BY ALL`, minutes, minutes, from)
	out := map[string]string{}
	for _, r := range duck.Query(q) {
		out[fmt.Sprintf("%v|%v|%v", r["m"], r["service"], r["severity"])] = fmt.Sprintf("%v %v %v", r["e"], r["b"], r["x"])
	}
	var n int64
	fmt.Sscanf(fmt.Sprint(duck.Query("SELECT count(*) AS n FROM " + from)[0]["n"]), "%d", &n)
	return out, n
}

func sameGroups(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d groups, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s: group %s: %q, want %q", what, k, got[k], v)
		}
	}
}

// checkFolded: GROUP BY at the fold bucket and coarser gives the sealed aggregates through
// iceberg-go and DuckDB (promise 11).
func checkFolded(t *testing.T, e *env, want aggregates) aggregates {
	t.Helper()
	got := viaIceberg(t, e)
	for _, minutes := range []int64{1, 5, 60} {
		sameGroups(t, fmt.Sprintf("iceberg-go GROUP BY %d min", minutes), got.coarsen(minutes), want.coarsen(minutes))
		duck, _ := viaDuckDB(t, e, minutes)
		w := want.coarsen(minutes)
		sameGroups(t, fmt.Sprintf("DuckDB GROUP BY %d min", minutes), duck, w)
	}
	return got
}

func newRollup(t *testing.T, e *env, spec fold.Spec) {
	t.Helper()
	if _, err := fold.Set(context.Background(), e.lake, walgen.RollupTable, spec); err != nil {
		t.Fatal(err)
	}
}

// TestFoldRollupTable: 20 pods' partial rows of the same minutes fold into one row per minute
// and keys in one maintenance cycle, as a KindFold bin; the aggregates are unchanged through
// iceberg-go and DuckDB; another cycle changes nothing.
func TestFoldRollupTable(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0 })
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	want := sealRollup(e, 20, 3000, 1, start, 200*time.Millisecond)
	e.te.DrainAll()
	newRollup(t, e, rollupSpec)
	checkFolded(t, e, want)
	before := viaIceberg(t, e).rows()
	m := newMaintainer(t, e, e.lake, time.Now)
	rep, err := m.Cycle(context.Background())
	if err != nil || rep.Rewrites == 0 {
		t.Fatalf("cycle: %+v %v", rep, err)
	}
	st := m.State(walgen.RollupTable)
	if st.Fold == nil || st.Fold.Spec == nil || st.Fold.Error != "" {
		t.Fatalf("status fold: %+v", st.Fold)
	}
	if st.LastPass.Bins[0].Kind != "fold" || !strings.Contains(st.LastPass.Bins[0].Reason, "rollup") {
		t.Fatalf("first bin %+v, want a fold bin with its reason", st.LastPass.Bins[0])
	}
	got := checkFolded(t, e, want)
	if n := got.rows(); n != int64(len(want)) {
		t.Fatalf("%d rows after folding (%d before), want one per distinct (minute, keys): %d", n, before, len(want))
	}
	t.Logf("%d partial rows folded into %d", before, len(want))
	if in, out := counterValue(t, m.Metrics, "siglake_fold_rows_in_total", ""), counterValue(t, m.Metrics, "siglake_fold_rows_out_total", ""); in != float64(before) || out != float64(len(want)) {
		t.Fatalf("fold metrics: %v in, %v out; want %d, %d", in, out, before, len(want))
	}
	for _, f := range testlakeFiles(t, e) {
		if tier, ok := merge.ParseFoldTier(f.Path); !ok || tier != 0 {
			t.Fatalf("live file %s does not record fold tier 0", f.Path)
		}
	}
	// Folded: the next cycle plans no fold bin.
	rep, err = m.Cycle(context.Background())
	if err != nil || rep.Rewrites != 0 {
		t.Fatalf("second cycle rewrote a folded table: %+v %v", rep, err)
	}
}

func testlakeFiles(t *testing.T, e *env) []lake.File {
	t.Helper()
	files, err := lake.LiveFiles(context.Background(), e.te.Table(walgen.RollupTable))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestFoldBadSpecNotFolded: a specification another tool stored that does not fit the schema
// is not used: the table is not folded (its rows stay as they are), /debug/status and the gauge
// say why, naming the property and the column.
func TestFoldBadSpecNotFolded(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0 })
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	want := sealRollup(e, 10, 1000, 3, start, 200*time.Millisecond)
	e.te.DrainAll()
	bad := rollupSpec
	bad.Aggregates = bad.Aggregates[:2] // max_bytes is left without a role
	v, _ := bad.Encode()
	if err := e.lake.UpdateProperties(context.Background(), walgen.RollupTable, func(iceberg.Properties) (iceberg.Properties, []string) {
		return iceberg.Properties{fold.Property: v}, nil
	}); err != nil {
		t.Fatal(err)
	}
	m := newMaintainer(t, e, e.lake, time.Now)
	if _, err := m.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	st := m.State(walgen.RollupTable)
	if st.Fold == nil || !strings.Contains(st.Fold.Error, fold.Property) || !strings.Contains(st.Fold.Error, `"max_bytes"`) {
		t.Fatalf("status fold %+v: want the property and the column named", st.Fold)
	}
	if v := promtest.Gauge(m.Metrics.Fold.SpecInvalid.WithLabelValues(walgen.RollupTable)); v != 1 {
		t.Fatalf("siglake_fold_spec_invalid = %v", v)
	}
	if got := viaIceberg(t, e); got.rows() != want.rows() {
		t.Fatalf("a table with a bad spec was folded: %d rows, sealed %d", got.rows(), want.rows())
	}
	if n := counterValue(t, m.Metrics, "siglake_fold_rows_in_total", ""); n != 0 {
		t.Fatalf("fold counted %v rows of a table with a bad spec", n)
	}
}

// TestFoldTiers: with a controllable clock, files past a tier's age are coarsened to its bucket
// once (their names record the tier), and again only for the next tier.
func TestFoldTiers(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0 })
	start := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	want := sealRollup(e, 8, 3000, 5, start, time.Second) // 50 minutes
	e.te.DrainAll()
	spec := rollupSpec
	spec.Tiers = []fold.Tier{{After: "7d", Bucket: "1h"}, {After: "30d", Bucket: "1d"}}
	newRollup(t, e, spec)
	now := start.Add(2 * time.Hour)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	m := newMaintainer(t, e, e.lake, clock)
	tiers := func() map[int]int {
		out := map[int]int{}
		for _, f := range testlakeFiles(t, e) {
			tier, ok := merge.ParseFoldTier(f.Path)
			if !ok {
				tier = -1
			}
			out[tier]++
		}
		return out
	}
	cycle := func(what string) int {
		rep, err := m.Cycle(context.Background())
		if err != nil || rep.Failed > 0 {
			t.Fatalf("%s: %+v %v", what, rep, err)
		}
		return rep.Rewrites
	}
	cycle("young")
	if tr := tiers(); tr[0] == 0 || len(tr) != 1 {
		t.Fatalf("young rows: tiers %v, want all at tier 0", tr)
	}
	minuteRows := viaIceberg(t, e).rows()
	set(start.Add(8 * 24 * time.Hour))
	if n := cycle("after 8 days"); n == 0 {
		t.Fatal("no coarsening after 8 days")
	}
	if tr := tiers(); tr[1] == 0 || len(tr) != 1 {
		t.Fatalf("after 8 days: tiers %v, want all at tier 1", tr)
	}
	got := viaIceberg(t, e)
	sameGroups(t, "hourly after tier 1", got.coarsen(60), want.coarsen(60))
	if got.rows() >= minuteRows {
		t.Fatalf("coarsening to hours left %d rows (minutes: %d)", got.rows(), minuteRows)
	}
	set(start.Add(9 * 24 * time.Hour))
	if n := cycle("after 9 days"); n != 0 {
		t.Fatalf("a file at tier 1 was coarsened again to tier 1: %d rewrites", n)
	}
	set(start.Add(31 * 24 * time.Hour))
	cycle("after 31 days")
	if tr := tiers(); tr[2] == 0 || len(tr) != 1 {
		t.Fatalf("after 31 days: tiers %v, want all at tier 2", tr)
	}
	got = viaIceberg(t, e)
	sameGroups(t, "daily after tier 2", got.coarsen(24*60), want.coarsen(24*60))
}

// TestFoldTwoOwnersAndDrains: a rollup table under concurrent drains and two maintenance owners
// at once (a split view) loses and duplicates nothing: the aggregates stay those sealed, and the
// table ends folded.
func TestFoldTwoOwnersAndDrains(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0 })
	start := time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)
	want := sealRollup(e, 12, 1500, 11, start, 200*time.Millisecond)
	e.te.DrainAll()
	newRollup(t, e, rollupSpec)
	other, err := lake.Open(context.Background(), e.te.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a, b := newMaintainer(t, e, e.lake, time.Now), newMaintainer(t, e, other, time.Now)
	for _, m := range []*Maintainer{a, b} {
		m.Cfg.FoldMinFiles = 4
	}
	var conflicts, rewrites int
	for round := 0; round < 5; round++ {
		// More pods' partial rows for the same minutes arrive while both owners fold.
		more := sealRollup(e, 6, 1500, uint64(100+round*10), start, 200*time.Millisecond)
		for k, g := range more {
			if w := want[k]; w != nil {
				w.events, w.bytes, w.maxBytes, w.rows = w.events+g.events, w.bytes+g.bytes, max(w.maxBytes, g.maxBytes), w.rows+g.rows
			} else {
				want[k] = g
			}
		}
		var wg sync.WaitGroup
		reps := make([]CycleReport, 2)
		errs := make([]error, 3)
		for i, m := range []*Maintainer{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); reps[i], errs[i] = m.Cycle(context.Background()) }()
		}
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[2] = e.drain.Cycle(context.Background(), true) }()
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %d: %v", round, i, err)
			}
		}
		for i := range reps {
			if reps[i].Failed > 0 {
				t.Fatalf("round %d maintainer %d failed a rewrite: %+v", round, i, published([]*Maintainer{a, b}[i]).errors)
			}
			conflicts += reps[i].Conflicts
			rewrites += reps[i].Rewrites
		}
	}
	e.te.DrainAll()
	if _, err := a.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rewrites committed, %d lost to the other owner or the drain", rewrites, conflicts)
	if conflicts == 0 {
		t.Fatal("the owners never collided; the test did not exercise two owners")
	}
	checkFolded(t, e, want)
}

// TestFoldDeletesAndRetention: on a folded rollup table, a deletion request on a key column
// removes that key's rows (one on an aggregated column is refused), and retention drops the rows
// past its period; every other group keeps its aggregates.
func TestFoldDeletesAndRetention(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0 })
	recent := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	old := recent.Add(-40 * 24 * time.Hour)
	want := sealRollup(e, 8, 2000, 21, recent, 200*time.Millisecond)
	oldRows := sealRollup(e, 8, 2000, 23, old, 200*time.Millisecond)
	e.te.DrainAll()
	newRollup(t, e, rollupSpec)
	m := newMaintainer(t, e, e.lake, time.Now)
	if _, err := m.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := fold.RecordDelete(ctx, e.lake, walgen.RollupTable, deletes.Request{Where: []rows.Condition{{Column: "events", Values: []string{"1"}}}}, time.Now(), deletes.RecordOptions{}); err == nil || !strings.Contains(err.Error(), `column "events"`) || !strings.Contains(err.Error(), fold.Property) {
		t.Fatalf("a deletion request on an aggregated column: %v", err)
	}
	if _, err := fold.RecordDelete(ctx, e.lake, walgen.RollupTable, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}}, time.Now(), deletes.RecordOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteSweep(t, e, []string{walgen.RollupTable})
	if _, err := retention.Set(ctx, e.lake, walgen.RollupTable, retention.Policy{Period: "10d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Retention().Run(ctx, walgen.RollupTable, retention.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if strings.Contains(k, "|billing|") {
			delete(want, k)
		}
	}
	if len(oldRows) == 0 {
		t.Fatal("no old rows to retain away")
	}
	got := viaIceberg(t, e)
	sameGroups(t, "after the delete and retention", got.coarsen(1), want.coarsen(1))
	sameGroups(t, "hourly after the delete and retention", got.coarsen(60), want.coarsen(60))
}

// TestFoldNotWithRewritesOff: the drain does not fold (generation 0 keeps the partial rows as
// they came), and with SIGLAKE_RECLUSTER_INTERVAL_SECS=0 maintenance does not either.
func TestFoldNotWithRewritesOff(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0; c.ReclusterInterval = 0 })
	at := time.Now().UTC().Add(-time.Hour)
	want := sealRollup(e, 2, 1000, 9, at, 200*time.Millisecond)
	e.te.DrainAll()
	newRollup(t, e, rollupSpec)
	for k, g := range sealRollup(e, 8, 1000, 19, at, 200*time.Millisecond) { // drained under the spec
		if w := want[k]; w != nil {
			w.rows += g.rows
		} else {
			want[k] = g
		}
	}
	e.te.DrainAll()
	if got := viaIceberg(t, e).rows(); got != want.rows() {
		t.Fatalf("%d rows after the drain, sealed %d: the drain folded", got, want.rows())
	}
	m := newMaintainer(t, e, e.lake, time.Now)
	rep, err := m.Cycle(context.Background())
	if err != nil || rep.Rewrites != 0 {
		t.Fatalf("rewrites off: %+v %v", rep, err)
	}
	if got := viaIceberg(t, e).rows(); got != want.rows() {
		t.Fatalf("%d rows, sealed %d: folded with rewrites off", got, want.rows())
	}
}

// TestFoldPartialFlushes: a group budget below a bucket's keys (SIGLAKE_FOLD_MAX_GROUPS) flushes
// partial rows, counted in siglake_fold_partial_flushes_total, and the aggregates still hold.
func TestFoldPartialFlushes(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0; c.FoldMaxGroups = 7 })
	want := sealRollup(e, 10, 2000, 31, time.Now().UTC().Truncate(time.Hour).Add(-2*time.Hour), 200*time.Millisecond)
	e.te.DrainAll()
	newRollup(t, e, rollupSpec)
	m := newMaintainer(t, e, e.lake, time.Now)
	if rep, err := m.Cycle(context.Background()); err != nil || rep.Rewrites == 0 {
		t.Fatalf("cycle: %+v %v", rep, err)
	}
	if n := counterValue(t, m.Metrics, "siglake_fold_partial_flushes_total", ""); n == 0 {
		t.Fatal("no partial flush counted with a budget of 7 groups")
	}
	got := viaIceberg(t, e)
	if got.rows() <= int64(len(want)) {
		t.Fatalf("%d rows for %d groups: the budget did not bind", got.rows(), len(want))
	}
	for _, minutes := range []int64{1, 60} {
		sameGroups(t, fmt.Sprintf("GROUP BY %d min", minutes), got.coarsen(minutes), want.coarsen(minutes))
	}
}

// TestFoldKeyColumnsOnlyEnforced: a deletion request on an aggregated column that another tool
// stored (bypassing siglake delete-request) is not run by the sweep on a rollup table but
// reported and left pending; fold set is refused while it is pending; a retention rule on an
// aggregated column is refused when set.
func TestFoldKeyColumnsOnlyEnforced(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.SnapshotExpireInterval = 0 })
	start := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	want := sealRollup(e, 2, 300, 31, start, 200*time.Millisecond)
	e.te.DrainAll()
	ctx := context.Background()
	r, err := deletes.Record(ctx, e.lake, walgen.RollupTable, deletes.Request{Where: []rows.Condition{{Column: "events", Values: []string{"1"}}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fold.Set(ctx, e.lake, walgen.RollupTable, rollupSpec); err == nil || !strings.Contains(err.Error(), r.ID) || !strings.Contains(err.Error(), `column "events"`) {
		t.Fatalf("fold set over a pending request on an aggregated column: %v", err)
	}
	// Another tool stores the specification anyway.
	v, err := rollupSpec.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.lake.SetProperty(ctx, walgen.RollupTable, fold.Property, v, false); err != nil {
		t.Fatal(err)
	}
	reps := deleteSweep(t, e, []string{walgen.RollupTable})
	last := reps[len(reps)-1]
	if len(last.Invalid) == 0 || !strings.Contains(strings.Join(last.Invalid, "\n"), `column "events"`) {
		t.Fatalf("sweep report invalid %q, want the request on events reported", last.Invalid)
	}
	tbl, err := e.lake.LoadTable(ctx, walgen.RollupTable)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := deletes.List(tbl.Properties())
	if len(stored) != 1 || stored[0].State != deletes.Pending || stored[0].RowsDeleted != 0 {
		t.Fatalf("stored requests %+v, want the one left pending and unrun", stored)
	}
	sameGroups(t, "after the sweep", viaIceberg(t, e).coarsen(1), want.coarsen(1))
	_, err = fold.SetRetention(ctx, e.lake, walgen.RollupTable, retention.Policy{Period: "30d",
		Rules: []retention.Rule{{Where: []rows.Condition{{Column: "bytes", Values: []string{"0"}}}, Period: "7d"}}})
	if err == nil || !strings.Contains(err.Error(), `column "bytes"`) {
		t.Fatalf("a retention rule on an aggregated column: %v", err)
	}
	if _, err := fold.SetRetention(ctx, e.lake, walgen.RollupTable, retention.Policy{Period: "30d",
		Rules: []retention.Rule{{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}, Period: "7d"}}}); err != nil {
		t.Fatal(err)
	}
}
