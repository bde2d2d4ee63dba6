package sim

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestScenarios runs the documented scenarios, leveled against legacy, and
// prints the table docs/compaction.md shows. It takes minutes, so it runs
// only with SIGLAKE_LONG=1. With SIGLAKE_SIM_OUT=DIR it also writes one SVG
// per scenario into DIR.
func TestScenarios(t *testing.T) {
	if os.Getenv("SIGLAKE_LONG") != "1" {
		t.Skip("set SIGLAKE_LONG=1 to run the documented 6-24 h scenarios")
	}
	out := os.Getenv("SIGLAKE_SIM_OUT")
	var table strings.Builder
	table.WriteString("| scenario | strategy | write amp | depth p50 / max | settled depth p50 / max | files p50 / max / final | rewriter busy | backlog max | passes |\n")
	table.WriteString("|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range Documented() {
		start := time.Now()
		lev, leg := Compare(s)
		t.Logf("%s: simulated %v twice in %v", s.Name, s.Duration, time.Since(start).Round(time.Millisecond))
		for _, r := range []Result{lev, leg} {
			if len(r.Errors) > 0 {
				t.Errorf("%s/%s: %v", r.Scenario, r.Strategy, r.Errors)
			}
			t.Log(r)
			fmt.Fprintf(&table, "| %s | %s | %.2f | %d / %d | %d / %d | %d / %d / %d | %.0f%% | %.0f s | %s |\n",
				r.Scenario, r.Strategy, r.WriteAmp, r.DepthP50, r.DepthMax, r.SettledDepthP50, r.SettledDepthMax,
				r.FilesP50, r.FilesMax, r.FilesFinal, 100*r.BusyFraction, r.BacklogMaxSeconds, passes(r))
		}
		if out != "" {
			f, err := os.Create(filepath.Join(out, "compaction-"+s.Name+".svg"))
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteSVG(f, lev, leg); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("\n%s", table.String())
}

func passes(r Result) string {
	var parts []string
	for _, k := range []string{"run", "nothing_due", "skipped_backpressure", "throttled_backpressure"} {
		if n := r.Decisions[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}

// within reports whether got is within tol (a fraction) of want.
func within(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*want
}

// trickle is the slow table the generation cap is chosen on: the quiet
// table at 5 kB/s (2 pods, 1% late, 24 h).
func trickle() Scenario {
	s := Documented()[1]
	s.Name = "trickle-24h-5KBps-2pods-1pct-late"
	s.IngestBytesPerSec = 5e3
	return s
}

// TestGenerationCapScenarios holds what SIGLAKE_COMPACTOR_LEVEL_MAX_GEN buys
// (plan.Config.LevelMaxGen, docs/compaction.md "Choosing the generation
// cap"): on the trickle table the cap of 8 bounds write amplification from
// about 41 to about 6.3 with the same layout. The trickle runs take about a
// second; with SIGLAKE_LONG=1 the busy and quiet tables are added (minutes)
// and the documented table is printed.
func TestGenerationCapScenarios(t *testing.T) {
	caps := []int{0, 4, 8, 16}
	scenarios := []Scenario{trickle()}
	long := os.Getenv("SIGLAKE_LONG") == "1"
	if long {
		scenarios = append(Documented()[:2], scenarios...)
	}
	var table strings.Builder
	table.WriteString("| scenario | level max gen | write amp | settled depth p50 / max | files p50 / final | L0 files final |\n|---|---|---|---|---|---|\n")
	results := map[string]map[int]Result{}
	for _, s := range scenarios {
		results[s.Name] = map[int]Result{}
		for _, cap := range caps {
			s.Config.LevelMaxGen = cap
			r := Run(s)
			if len(r.Errors) > 0 {
				t.Errorf("%s, cap %d: %v", s.Name, cap, r.Errors)
			}
			results[s.Name][cap] = r
			fmt.Fprintf(&table, "| %s | %d | %.2f | %d / %d | %d / %d | %d |\n",
				s.Name, cap, r.WriteAmp, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, r.FilesFinal, r.FinalLevels[0])
		}
	}
	t.Logf("\n%s", table.String())

	// Measured (seed 1): WA 40.85 without a cap, 4.36 / 6.31 / 10.08 with
	// 4 / 8 / 16; settled depth p50 2 and max 3 with 0 and 8; files p50 23
	// and 28. The tolerances allow planner tweaks that keep the claim; a
	// cap that stopped working would leave WA near 41 at every setting.
	tr := results[trickle().Name]
	if wa := tr[0].WriteAmp; !within(wa, 41, 0.10) {
		t.Errorf("trickle without a cap: write amplification %.2f, documented 41 (within 10%%)", wa)
	}
	if wa := tr[8].WriteAmp; !within(wa, 6.3, 0.15) {
		t.Errorf("trickle with cap 8: write amplification %.2f, documented 6.3 (within 15%%)", wa)
	}
	if !(tr[4].WriteAmp < tr[8].WriteAmp && tr[8].WriteAmp < tr[16].WriteAmp && tr[16].WriteAmp < tr[0].WriteAmp) {
		t.Errorf("trickle: write amplification does not fall with the cap: 4: %.2f, 8: %.2f, 16: %.2f, none: %.2f",
			tr[4].WriteAmp, tr[8].WriteAmp, tr[16].WriteAmp, tr[0].WriteAmp)
	}
	// "Same layout": the cap keeps the settled depth for a few more files.
	if tr[8].SettledDepthP50 > tr[0].SettledDepthP50 || tr[8].SettledDepthMax > tr[0].SettledDepthMax+1 {
		t.Errorf("trickle: cap 8 settled depth p50/max %d/%d, without a cap %d/%d: the layout got deeper",
			tr[8].SettledDepthP50, tr[8].SettledDepthMax, tr[0].SettledDepthP50, tr[0].SettledDepthMax)
	}
	if float64(tr[8].FilesP50) > 1.5*float64(tr[0].FilesP50) {
		t.Errorf("trickle: cap 8 files p50 %d, without a cap %d: more than 50%% more files", tr[8].FilesP50, tr[0].FilesP50)
	}
	if long {
		// On busier tables files reach L2 in a few generations, so 8
		// hardly binds (measured: 3.27 both).
		busy := results[Documented()[0].Name]
		if !within(busy[8].WriteAmp, busy[0].WriteAmp, 0.05) {
			t.Errorf("busy: cap 8 write amplification %.2f, without a cap %.2f: the cap binds on a busy table",
				busy[8].WriteAmp, busy[0].WriteAmp)
		}
	}
}

// TestCapacityScenarios holds what docs/compaction.md ("How much rewrite
// capacity a busy table needs") says of the busy table over 6 h: each
// doubling of rewrite throughput roughly halves the settled depth while
// write amplification rises with it; at 4x the ingest rate (200 MB/s) a
// size-only writer settles near depth 30; a writer that cuts sparse late
// rows into their own files at the drain and in the rewriter (0.05) reaches
// a shallower layout with half the capacity and, with SIGLAKE_LONG=1, writes
// at least 10% less at every capacity. By default it runs
// 100-400 MB/s size-only and 200 MB/s split (about 10 s, skipped with
// -short); SIGLAKE_LONG=1 runs the documented grid up to 800 MB/s.
func TestCapacityScenarios(t *testing.T) {
	long := os.Getenv("SIGLAKE_LONG") == "1"
	type key struct {
		mbps  float64
		split float64
	}
	if testing.Short() && !long {
		t.Skip("about 15 s of simulation; skipped with -short")
	}
	grid := []key{{100, 0}, {200, 0}, {400, 0}, {200, 0.05}}
	if long {
		grid = nil
		for _, mbps := range []float64{100, 200, 400, 800} {
			for _, split := range []float64{0, 0.05} {
				grid = append(grid, key{mbps, split})
			}
		}
	}
	var table strings.Builder
	table.WriteString("| rewrite MB/s | split sparse | write amp | depth p50 | settled depth p50 / max | files p50 | rewriter busy |\n|---|---|---|---|---|---|---|\n")
	s := Documented()[0]
	s.Duration = 6 * time.Hour
	res := map[key]Result{}
	for _, k := range grid {
		s.MergeBytesPerSec = k.mbps * 1e6
		s.SplitSparse, s.DrainSplitSparse, s.LateStream = k.split, k.split, k.split > 0
		r := Run(s)
		if len(r.Errors) > 0 {
			t.Errorf("%v MB/s, split %v: %v", k.mbps, k.split, r.Errors)
		}
		res[k] = r
		fmt.Fprintf(&table, "| %.0f | %v | %.2f | %d | %d / %d | %d | %.0f%% |\n",
			k.mbps, k.split, r.WriteAmp, r.DepthP50, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, 100*r.BusyFraction)
	}
	t.Logf("%s, 6 h\n%s", s.Name, table.String())

	// Measured (seed 1), size-only writer: settled depth p50 71 / 33 / 18 /
	// 11 and WA 1.47 / 2.97 / 4.94 / 8.07 at 100 / 200 / 400 / 800 MB/s;
	// split 0.05 (drain and rewriter cuts, late stream): settled depth p50
	// 59 / 13 / 8 / 8, WA 1.14 / 2.04 / 2.40 / 2.21.
	for _, c := range []float64{100, 200, 400} {
		lo, ok1 := res[key{c, 0}]
		hi, ok2 := res[key{2 * c, 0}]
		if !ok1 || !ok2 {
			continue
		}
		// "Roughly halves": at most 0.7 of the depth at half the capacity.
		if float64(hi.SettledDepthP50) > 0.7*float64(lo.SettledDepthP50) {
			t.Errorf("size-only writer: settled depth p50 %d at %.0f MB/s, %d at %.0f MB/s: doubling the capacity does not roughly halve it",
				hi.SettledDepthP50, 2*c, lo.SettledDepthP50, c)
		}
		if hi.WriteAmp < 1.3*lo.WriteAmp {
			t.Errorf("size-only writer: WA %.2f at %.0f MB/s, %.2f at %.0f MB/s: the planner does not spend the capacity it is given",
				hi.WriteAmp, 2*c, lo.WriteAmp, c)
		}
	}
	if d := res[key{200, 0}].SettledDepthP50; d < 20 || d > 40 {
		t.Errorf("size-only writer at 200 MB/s: settled depth p50 %d, documented near 30 (20-40)", d)
	}
	// From 4x the ingest rate on; at 2x (100 MB/s) the rewriter is short
	// and the split writer is only somewhat shallower than the size-only one.
	if split, same := res[key{100, 0.05}], res[key{100, 0}]; long && split.SettledDepthP50 >= same.SettledDepthP50 {
		t.Errorf("split sparse at 100 MB/s: settled depth p50 %d, size-only %d", split.SettledDepthP50, same.SettledDepthP50)
	}
	for _, c := range []float64{200, 400} {
		split, ok1 := res[key{c, 0.05}]
		same, ok2 := res[key{c, 0}]
		double, ok3 := res[key{2 * c, 0}]
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		// Half the capacity for the same depth: within 40% of the
		// size-only writer's depth at twice the capacity, and clearly
		// shallower than the size-only writer at the same capacity.
		if float64(split.SettledDepthP50) > 1.4*float64(double.SettledDepthP50) ||
			float64(split.SettledDepthP50) > 0.8*float64(same.SettledDepthP50) {
			t.Errorf("split sparse at %.0f MB/s: settled depth p50 %d; size-only %d at the same and %d at twice the capacity",
				c, split.SettledDepthP50, same.SettledDepthP50, double.SettledDepthP50)
		}
	}
	if long {
		for _, c := range []float64{100, 200, 400, 800} {
			if split, same := res[key{c, 0.05}], res[key{c, 0}]; split.WriteAmp > 0.9*same.WriteAmp {
				t.Errorf("at %.0f MB/s: WA %.2f with split sparse, %.2f size-only: not at least 10%% lower", c, split.WriteAmp, same.WriteAmp)
			}
		}
	}
}

// TestBackpressureBinsScenarios holds what docs/compaction.md says of the
// restricted pass's bin budget on the stall scenario (a 1 h backlog from 2 h
// to 3 h): the cadence is exact whatever the budget (270 skipped, 90
// restricted passes); with one bin, files climb during the stall far past
// their level before it and come back within about 15 minutes after it; two
// bins keep the peak under half of that. About 3 s; SIGLAKE_LONG=1 prints the
// documented table.
func TestBackpressureBinsScenarios(t *testing.T) {
	var table strings.Builder
	table.WriteString("| restricted-pass bins | write amp | depth p50 / max | settled depth p50 / max | files p50 / max | passes |\n|---|---|---|---|---|---|\n")
	s := Documented()[3]
	stall := s.Stalls[0]
	// peak is the largest file count sampled in [from, to).
	peak := func(r Result, from, to time.Duration) int {
		n := 0
		for _, x := range r.Samples {
			if x.At >= from && x.At < to {
				n = max(n, x.Files)
			}
		}
		return n
	}
	res := map[int]Result{}
	for _, bins := range []int{1, 2, 4} {
		s.Config.BackpressureMaxBins = bins
		r := Run(s)
		if len(r.Errors) > 0 {
			t.Errorf("%d bins: %v", bins, r.Errors)
		}
		res[bins] = r
		fmt.Fprintf(&table, "| %d | %.2f | %d / %d | %d / %d | %d / %d | %s |\n",
			bins, r.WriteAmp, r.DepthP50, r.DepthMax, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, r.FilesMax, passes(r))
		// 360 backlogged 10 s ticks; every 4th runs the restricted pass.
		if sk, th := r.Decisions["skipped_backpressure"], r.Decisions["throttled_backpressure"]; sk != 270 || th != 90 {
			t.Errorf("%d bins: %d cycles skipped and %d restricted, documented 270 and 90", bins, sk, th)
		}
	}
	if os.Getenv("SIGLAKE_LONG") == "1" {
		t.Logf("%s\n%s", s.Name, table.String())
	}

	// Measured (seed 1): before the stall at most 209 files; in it 1,913
	// with one bin, 739 with two, 719 with four; 20 minutes after it 256
	// with one bin.
	before := peak(res[1], stall.From-time.Hour, stall.From)
	one := peak(res[1], stall.From, stall.To+time.Minute)
	two := peak(res[2], stall.From, stall.To+time.Minute)
	if one < 5*before {
		t.Errorf("one bin: %d files at most in the stall, %d before it: one bin every 40 s should fall behind ten pods", one, before)
	}
	if 2*two > one {
		t.Errorf("two bins: %d files at most in the stall, one bin %d: two bins should keep the peak under half", two, one)
	}
	if after := peak(res[1], stall.To+20*time.Minute, stall.To+25*time.Minute); 2*after > 3*before {
		t.Errorf("one bin: %d files 20 minutes after the stall, %d before it: no recovery", after, before)
	}
}
