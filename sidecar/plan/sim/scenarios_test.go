package sim

import (
	"fmt"
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

// TestGenerationCapScenarios measures what SIGLAKE_COMPACTOR_LEVEL_MAX_GEN
// buys on the quiet and the busy documented tables (SIGLAKE_LONG=1).
func TestGenerationCapScenarios(t *testing.T) {
	if os.Getenv("SIGLAKE_LONG") != "1" {
		t.Skip("set SIGLAKE_LONG=1 to compare generation caps")
	}
	var table strings.Builder
	table.WriteString("| scenario | level max gen | write amp | settled depth p50 / max | files p50 / final | L0 files final |\n|---|---|---|---|---|---|\n")
	trickle := Documented()[1]
	trickle.Name = "trickle-24h-5KBps-2pods-1pct-late"
	trickle.IngestBytesPerSec = 5e3
	for _, s := range append(Documented()[:2], trickle) {
		for _, cap := range []int{0, 4, 8, 16} {
			s.Config.LevelMaxGen = cap
			r := Run(s)
			fmt.Fprintf(&table, "| %s | %d | %.2f | %d / %d | %d / %d | %d |\n",
				s.Name, cap, r.WriteAmp, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, r.FilesFinal, r.FinalLevels[0])
		}
	}
	t.Logf("\n%s", table.String())
}

// TestCapacityScenarios measures how much rewrite throughput the busy table
// needs, and what a writer that cuts sparse late rows into their own files
// would change (SIGLAKE_LONG=1; 6 h each, leveled).
func TestCapacityScenarios(t *testing.T) {
	if os.Getenv("SIGLAKE_LONG") != "1" {
		t.Skip("set SIGLAKE_LONG=1 to compare rewrite capacities")
	}
	var table strings.Builder
	table.WriteString("| rewrite MB/s | split sparse | write amp | depth p50 | settled depth p50 / max | files p50 | rewriter busy |\n|---|---|---|---|---|---|---|\n")
	s := Documented()[0]
	s.Duration = 6 * time.Hour
	for _, mbps := range []float64{100, 200, 400, 800} {
		for _, split := range []float64{0, 0.05} {
			s.MergeBytesPerSec = mbps * 1e6
			s.SplitSparse = split
			r := Run(s)
			fmt.Fprintf(&table, "| %.0f | %v | %.2f | %d | %d / %d | %d | %.0f%% |\n",
				mbps, split, r.WriteAmp, r.DepthP50, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, 100*r.BusyFraction)
		}
	}
	t.Logf("%s, 6 h\n%s", s.Name, table.String())
}

// TestBackpressureBinsScenarios measures the restricted pass's bin budget
// on the stall scenario (SIGLAKE_LONG=1).
func TestBackpressureBinsScenarios(t *testing.T) {
	if os.Getenv("SIGLAKE_LONG") != "1" {
		t.Skip("set SIGLAKE_LONG=1 to compare backpressure bin budgets")
	}
	var table strings.Builder
	table.WriteString("| restricted-pass bins | write amp | depth p50 / max | settled depth p50 / max | files p50 / max | passes |\n|---|---|---|---|---|---|\n")
	s := Documented()[3]
	for _, bins := range []int{1, 2, 4} {
		s.Config.BackpressureMaxBins = bins
		r := Run(s)
		fmt.Fprintf(&table, "| %d | %.2f | %d / %d | %d / %d | %d / %d | %s |\n",
			bins, r.WriteAmp, r.DepthP50, r.DepthMax, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, r.FilesMax, passes(r))
	}
	t.Logf("%s\n%s", s.Name, table.String())
}
