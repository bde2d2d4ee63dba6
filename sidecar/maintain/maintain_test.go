package maintain

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/test/testenv"
)

// smallFilesTable drains n one-segment commits of overlapping rows, so the table starts with at
// least n small, overlapping generation-0 files, and returns the rows' fingerprint.
func smallFilesTable(t *testing.T, e *env, n int) RowSum {
	t.Helper()
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	var want RowSum
	for i := 0; i < n; i += 50 {
		// Each batch of segments covers the same hour again (late rows): heavy overlap.
		want.Merge(e.writeSegments("events", min(50, n-i), 400, uint64(100+i), start.Add(time.Duration(i)*time.Second)))
		if _, err := e.drain.Cycle(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	return want
}

func newMaintainer(t *testing.T, e *env, l *lake.Lake, clock func() time.Time) *Maintainer {
	t.Helper()
	pc := plan.DefaultConfig()
	pc.ReclusterInterval = e.cfg.ReclusterInterval
	if err := pc.Validate(); err != nil {
		t.Fatal(err)
	}
	return &Maintainer{Cfg: e.cfg.Config, Plan: pc, Lake: l, Metrics: newTestMetrics(), Publish: &recorder{}, Log: e.te.Log, Now: clock}
}

func tableState(t *testing.T, l *lake.Lake, pc plan.Config) (files []level.File, depth, l0 int) {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	live, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range live {
		pf := PlanFile(f)
		files = append(files, pf)
		if pc.LevelOf(f.Size) == level.L0 {
			l0++
		}
	}
	for _, d := range level.PartitionDepths(level.ByPartition(files)) {
		depth = max(depth, d)
	}
	return files, depth, l0
}

// TestMaintenanceConverges: 200+ small overlapping files converge, by repeated bounded passes, to
// overlap depth <= 2 and fewer than 8 L0 files, with exactly the same rows.
func TestMaintenanceConverges(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 220)
	files, depth, _ := tableState(t, e.lake, plan.DefaultConfig())
	if len(files) < 200 || depth < 13 {
		t.Fatalf("setup: %d files at depth %d; want >= 200 files deeper than the depth trigger", len(files), depth)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := newMaintainer(t, e, e.lake, clock)
	var l0 int
	cycles := 0
	for ; cycles < 60; cycles++ {
		rep, err := m.Cycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Failed > 0 || rep.Conflicts > 0 {
			t.Fatalf("cycle %d: %+v: %+v", cycles, rep, published(m).errors)
		}
		// Five simulated minutes a cycle: L0 and L1 checks are due every cycle, the hourly L2
		// check (which sweeps straggler overlap the level rules leave alone) every 12th.
		now = now.Add(5 * time.Minute)
		files, depth, l0 = tableState(t, e.lake, m.Plan)
		if depth <= 2 && l0 < 8 {
			break
		}
	}
	if depth > 2 || l0 >= 8 {
		t.Fatalf("after %d cycles: %d files, depth %d, %d L0 files", cycles, len(files), depth, l0)
	}
	t.Logf("converged in %d cycles: %d files, depth %d, %d L0 files", cycles+1, len(files), depth, l0)
	// The committed rewrites measured the process's rewrite speed and busy share, so later
	// passes hold about one L0 check interval of work while it is busy (plan.Input.Rewriter).
	// With the rewriter busy (these cycles run back to back), the limit is the L0 interval.
	limit := 0.0
	if m.exec.speed.busy.Share() >= 0.5 {
		limit = m.Plan.CheckInterval[level.L0].Seconds()
	}
	if lp := m.State("events").LastPass; !m.exec.speed.rate.Known() || m.exec.speed.busy.Share() <= 0 || lp == nil || lp.TimeLimitSeconds != limit {
		t.Fatalf("rewrite speed known %v, busy %.2f, last pass %+v: want time limit %v s", m.exec.speed.rate.Known(), m.exec.speed.busy.Share(), lp, limit)
	}
	t.Logf("rewriter busy %.2f, last pass's time limit %v s", m.exec.speed.busy.Share(), limit)
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows after rewrites %+v, want %+v", got, want)
	}
	if v := counterValue(t, m.Metrics, "siglake_compactor_rewrites_total", ""); v == 0 {
		t.Fatal("no rewrite counted")
	}
	// An independent reader agrees: DuckDB reads the rewritten files with the same rows.
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	duck := testenv.DuckDB(t).SummarizeWith(testenv.TableFiles(t, tbl, testenv.S3Env{}), testenv.SummaryOptions{ChecksumColumns: eventColumns})
	var viaIceberg testenv.RowSum
	_, recs, err := tbl.Scan().ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range recs {
		if err != nil {
			t.Fatal(err)
		}
		if err := viaIceberg.Add(rec, eventColumns...); err != nil {
			t.Fatal(err)
		}
		rec.Release()
	}
	if duck.Rows != int64(want.Rows) || duck.Rows != viaIceberg.Rows || duck.Checksum != viaIceberg.Sum {
		t.Fatalf("DuckDB reads %d rows (checksum %d); iceberg-go %d (checksum %d); sealed %d",
			duck.Rows, duck.Checksum, viaIceberg.Rows, viaIceberg.Sum, want.Rows)
	}
}

// TestTwoMaintainersAtOnce: two owners (a split view) rewrite the same table concurrently. The
// catalog's validation lets at most one replace of the same files commit; no row is lost or
// duplicated, and the losers remove their outputs.
func TestTwoMaintainersAtOnce(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotExpireInterval = 0 })
	want := smallFilesTable(t, e, 120)
	other, err := lake.Open(context.Background(), e.te.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	a, b := newMaintainer(t, e, e.lake, clock), newMaintainer(t, e, other, clock)
	var conflicts, rewrites int
	for round := 0; round < 6; round++ {
		var wg sync.WaitGroup
		reps := make([]CycleReport, 2)
		errs := make([]error, 2)
		for i, m := range []*Maintainer{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				reps[i], errs[i] = m.Cycle(context.Background())
			}()
		}
		wg.Wait()
		for i := range reps {
			if errs[i] != nil {
				t.Fatalf("round %d maintainer %d: %v", round, i, errs[i])
			}
			if reps[i].Failed > 0 {
				t.Fatalf("round %d maintainer %d failed a rewrite: %+v: %+v", round, i, reps[i], published([]*Maintainer{a, b}[i]).errors)
			}
			conflicts += reps[i].Conflicts
			rewrites += reps[i].Rewrites
		}
		mu.Lock()
		now = now.Add(61 * time.Second)
		mu.Unlock()
	}
	t.Logf("%d rewrites committed, %d lost to the other owner", rewrites, conflicts)
	if conflicts == 0 {
		t.Fatal("the two maintainers never collided; the test did not exercise a double owner")
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	// Losers clean up: every data file on disk is referenced by some snapshot (nothing expired).
	referenced := allReferencedFiles(t, e.lake)
	dataDir := filepath.Join(e.te.Cfg.Warehouse, "siglake.db", "events", "data")
	_ = filepath.WalkDir(dataDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !referenced[p] {
			t.Errorf("orphan output left behind: %s", p)
		}
		return nil
	})
}

func allReferencedFiles(t *testing.T, l *lake.Lake) map[string]bool {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.LoadTable(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for mf, err := range tbl.AllManifests(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		entries, err := mf.FetchEntries(fsys, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			out[strings.TrimPrefix(en.DataFile().FilePath(), "file://")] = true
		}
	}
	return out
}

// TestSkippedBackloggedCycleCommitsNothing: while the sealed WAL backlog is above
// SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER, a skipped cycle makes no catalog commit (no
// rewrite, no expiry, no delete task, no clean-up of stale index registrations) on the tables the
// drain is committing to; it still samples the gauges. Every table of a cycle gets the same
// decision, so a throttled cycle is throttled for all of them. The first unskipped cycle expires.
func TestSkippedBackloggedCycleCommitsNothing(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.SnapshotRetain = 2 })
	smallFilesTable(t, e, 12) // 12 commits: expiry has work, L0 has work
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for i := 0; i < 12; i++ { // a second table with the same work
		e.writeSegments("other", 1, 400, uint64(500+i), start)
		if _, err := e.drain.Cycle(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	}
	testlake.Record(t, e.lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	stale := "file:///nowhere/g0001-gone.parquet"
	setProps(t, e, iceberg.Properties{puffinidx.Key(stale): `{"data_file":"` + stale + `","sidecars":[]}`})
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	backlog := 1000
	m.Backlog = func() int { return backlog }
	expirations := func() float64 { return counterValue(t, m.Metrics, "siglake_snapshot_expirations_total", "ok") }
	metadata := func() map[string]string {
		out := map[string]string{}
		for _, name := range []string{"events", "other"} {
			tbl, err := e.lake.LoadTable(context.Background(), name)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = tbl.MetadataLocation()
		}
		return out
	}
	for cycle := 1; cycle <= 8; cycle++ {
		now = now.Add(61 * time.Second) // expiry is due every cycle
		before, expired := metadata(), expirations()
		rep, err := m.Cycle(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := plan.DecisionSkippedBackpressure.String()
		if cycle%4 == 0 {
			want = plan.DecisionThrottledBackpressure.String()
		}
		if rep.Decision != want {
			t.Fatalf("cycle %d: decision %q, want %q", cycle, rep.Decision, want)
		}
		for _, name := range []string{"events", "other"} {
			ms := m.State(name)
			if ms == nil || ms.LastPass == nil || ms.LastPass.Decision != want || ms.SampledAt.IsZero() {
				t.Fatalf("cycle %d: table %s pass %+v, want decision %s and sampled gauges", cycle, name, ms, want)
			}
		}
		if want == plan.DecisionSkippedBackpressure.String() {
			if after := metadata(); !maps.Equal(after, before) {
				t.Fatalf("skipped cycle %d committed: %v -> %v", cycle, before, after)
			}
			if n := expirations() - expired; n != 0 {
				t.Fatalf("skipped cycle %d expired %v tables", cycle, n)
			}
		} else if n := expirations() - expired; n != 2 {
			// The restricted cycle may commit: expiry keeps metadata bounded through a long backlog.
			t.Fatalf("throttled cycle %d expired %v tables, want 2", cycle, n)
		}
	}
	backlog = 0
	now = now.Add(61 * time.Second)
	expired := expirations()
	if _, err := m.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := expirations() - expired; n != 2 {
		t.Fatalf("the unbacklogged cycle expired %v tables, want 2", n)
	}
}

// TestGaugesOfTablesNoLongerOwnedDisappear: the owner exports each table's gauges with the values
// of the table (live files and bytes per level and the overlap depth as the catalog's live files
// give them, the sample time, the pending deletion requests, nothing outstanding with rewrites
// off); when a table's lease moves away, this process stops exporting them (docs/metrics.md):
// the new owner exports them, and a former owner's stale series would double count in a sum over
// the fleet. A table it still owns keeps its series.
func TestGaugesOfTablesNoLongerOwnedDisappear(t *testing.T) {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0; c.ReclusterInterval = 0; c.DeleteTasks = false })
	smallFilesTable(t, e, 3)
	e.writeSegments("other", 2, 100, 77, time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC))
	e.te.DrainAll()
	testlake.Record(t, e.lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	m := newMaintainer(t, e, e.lake, func() time.Time { return now })
	owns := true
	m.Owns = func(name string) bool { return owns || name != "events" }
	// values: every series of the table's gauges, by metric name and the level label.
	values := func(table string) map[string]float64 {
		reg, _ := registries.Load(m.Metrics)
		mfs, err := reg.(*prometheus.Registry).Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, mt := range mf.GetMetric() {
				if !promtest.HasLabel(mt, "table", table) {
					continue
				}
				key := mf.GetName()
				for _, lp := range mt.GetLabel() {
					if lp.GetName() == "level" {
						key += "{" + lp.GetValue() + "}"
					}
				}
				out[key] = mt.GetGauge().GetValue()
			}
		}
		return out
	}
	// want: the gauges as the table's live files in the catalog give them.
	want := func(table string, pending float64) map[string]float64 {
		_, files := liveTableOf(t, e, table)
		w := map[string]float64{"siglake_table_gauges_sampled_at_seconds": float64(now.Unix()),
			"siglake_delete_requests_pending": pending, "siglake_compactor_outstanding_bins": 0, "siglake_compactor_outstanding_bytes": 0,
			"siglake_compactor_skipped_files": 0}
		for l := level.L0; l < level.NumLevels; l++ {
			w["siglake_table_live_files{"+l.String()+"}"], w["siglake_table_live_bytes{"+l.String()+"}"] = 0, 0
		}
		depth := 0
		for _, f := range files {
			l := m.Plan.LevelOf(f.Size).String()
			w["siglake_table_live_files{"+l+"}"]++
			w["siglake_table_live_bytes{"+l+"}"] += float64(f.Size)
			n := 0 // files of its partition that hold its first instant: the depth there
			for _, g := range files {
				if g.Partition == f.Partition && g.MinTime <= f.MinTime && f.MinTime <= g.MaxTime {
					n++
				}
			}
			depth = max(depth, n)
		}
		w["siglake_table_overlap_depth"] = float64(depth)
		return w
	}
	if _, err := m.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	for table, pending := range map[string]float64{"events": 1, "other": 0} {
		got, w := values(table), want(table, pending)
		if !maps.Equal(got, w) {
			t.Fatalf("owner exports for %s\n%v\nwant\n%v", table, got, w)
		}
	}
	if got := values("events"); got["siglake_table_live_files{L0}"] != 3 || got["siglake_table_overlap_depth"] < 2 {
		t.Fatalf("setup: events should be 3 overlapping L0 files: %v", got)
	}
	owns = false
	now = now.Add(time.Minute)
	if _, err := m.Cycle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := values("events"); len(got) != 0 {
		t.Fatalf("former owner still exports series for events: %v", got)
	}
	if got, w := values("other"), want("other", 0); !maps.Equal(got, w) {
		t.Fatalf("the table still owned exports\n%v\nwant\n%v", got, w)
	}
}

func liveTableOf(t *testing.T, e *env, name string) (*table.Table, []lake.File) {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, files
}

// TestPublishedStateIsNeverWritten: a state the maintainer published may be being encoded by
// /debug/status outside any lock, so every change publishes a copy and leaves the published value
// as it was (the race the detector found when passes were written into the shown state).
func TestPublishedStateIsNeverWritten(t *testing.T) {
	m := &Maintainer{Plan: plan.DefaultConfig(), Metrics: newTestMetrics(), Publish: &recorder{}, Now: time.Now}
	files := []level.File{{Path: "a", SizeBytes: 1 << 20, MinTime: 0, MaxTime: 10, Rows: 5}}
	m.parts()
	m.obs.sampleGauges("events", files, time.Now())
	first := m.State("events")
	saved := *first
	m.obs.pass("events", time.Now(), plan.TablePass{}, passRun{}, &CycleReport{})
	m.obs.updateRebuildState("events", nil, &rebuildRun{at: time.Now()})
	second := m.State("events")
	rb := *second.IndexRebuild
	m.obs.updateRebuildState("events", nil, &rebuildRun{at: time.Now(), err: errors.New("boom")})
	if first.LastPass != saved.LastPass || first.IndexRebuild != nil || first.OverlapDepth != saved.OverlapDepth {
		t.Fatalf("the first published state was written: %+v, was %+v", *first, saved)
	}
	if second.IndexRebuild.LastError != rb.LastError {
		t.Fatalf("a published rebuild state was written: %+v, was %+v", *second.IndexRebuild, rb)
	}
	if got := m.State("events"); got.LastPass == nil || got.IndexRebuild == nil || got.IndexRebuild.LastError != "boom" {
		t.Fatalf("the newest state lost a change: %+v", *got)
	}
}
