package sim

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/siglake/siglake/merge"
	mergedensity "github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// Measured CPU seconds per MB of Parquet input (docs/benchmarks.md, "Splice"): k-way on the
// fully overlapping shape (d), the splice on (a) at 1.4 GiB with chunk sums, DuckDB's sorted COPY.
const (
	reencodeCPUPerMB = 0.0832
	spliceCPUPerMB   = 0.0035
	duckdbCPUPerMB   = 0.0506
)

// spliceMBps is the documented splice model rate (`siglake simulate --splice-mbps 1305`).
const spliceMBps = 1305

// TestAbsorbScenarios holds what docs/compaction.md ("Absorb bins") says of the L2 check's absorb
// bins with the splice modelled, against the same planner without them (AbsorbMaxReencode 0), on
// the documented scenarios with the shipped writer (cuts and the late stream), seed 1. By default
// it runs the quiet table over 24 h (seconds); SIGLAKE_LONG=1 runs every documented scenario and
// prints the table.
func TestAbsorbScenarios(t *testing.T) {
	long := os.Getenv("SIGLAKE_LONG") == "1"
	scenarios := Documented()
	if !long {
		scenarios = scenarios[1:2]
	}
	var table strings.Builder
	table.WriteString("| scenario | absorb | write amp (bytes) | re-encoded / copied (x ingest) | rewrite CPU vs DuckDB | rewriter s | depth p50 | settled p50 / max | files p50 / final | absorb bins |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, s := range scenarios {
		s.SplitSparse, s.DrainSplitSparse, s.LateStream = mergedensity.DefaultSplitSparse, mergedensity.DefaultSplitSparse, true
		s.SpliceBytesPerSec = spliceMBps * 1e6
		s.Config.AbsorbMaxReencode = 0
		before := Run(s)
		s.Config.AbsorbMaxReencode = plan.DefaultConfig().AbsorbMaxReencode
		after := Run(s)
		for i, r := range []Result{before, after} {
			if len(r.Errors) > 0 {
				t.Errorf("%s: %v", r.Scenario, r.Errors)
			}
			re, cp := r.RewrittenBytes-r.SplicedBytes, r.SplicedBytes
			cpu := (re*reencodeCPUPerMB + cp*spliceCPUPerMB) / (r.RewrittenBytes * duckdbCPUPerMB)
			fmt.Fprintf(&table, "| %s (%s) | %s | %.2f | %.2f / %.2f | %.2fx | %.0f | %d | %d / %d | %d / %d | %d |\n",
				s.Name, s.Duration, []string{"off", "0.5 (default)"}[i], r.WriteAmp, re/r.IngestedBytes, cp/r.IngestedBytes, cpu,
				r.RewriteSeconds, r.DepthP50, r.SettledDepthP50, r.SettledDepthMax, r.FilesP50, r.FilesFinal, r.BinsByKind["absorb"])
		}
		if before.BinsByKind["absorb"] != 0 {
			t.Errorf("%s: %d absorb bins with AbsorbMaxReencode 0", s.Name, before.BinsByKind["absorb"])
		}
		// The claims docs/compaction.md makes: where a terminal layer settles with stragglers
		// beside it (quiet, stall) absorb bins take them, for fewer files, at most 5% more
		// rewriter time; on the busy and late tables they find nothing to take.
		if strings.HasPrefix(s.Name, "quiet") || strings.HasPrefix(s.Name, "stall") {
			if after.BinsByKind["absorb"] == 0 || after.FilesP50 >= before.FilesP50 || after.FilesFinal >= before.FilesFinal ||
				after.SplicedBytes <= before.SplicedBytes || after.RewriteSeconds > 1.05*before.RewriteSeconds {
				t.Errorf("%s: absorb bins %d, files p50/final %d/%d (off %d/%d), spliced %.0f (off %.0f), rewriter %.0f s (off %.0f)",
					s.Name, after.BinsByKind["absorb"], after.FilesP50, after.FilesFinal, before.FilesP50, before.FilesFinal,
					after.SplicedBytes, before.SplicedBytes, after.RewriteSeconds, before.RewriteSeconds)
			}
		}
	}
	t.Logf("\n%s", table.String())
}

// TestRowGroupRowsMatchesMerge: the planner's splice cost model counts merge's row groups.
func TestRowGroupRowsMatchesMerge(t *testing.T) {
	if level.RowGroupRows != writer.DefaultRowGroupRows || level.RowGroupRows/2 != merge.DefaultSpliceMinRows {
		t.Fatalf("plan.RowGroupRows %d, writer.DefaultRowGroupRows %d, merge.DefaultSpliceMinRows %d",
			level.RowGroupRows, writer.DefaultRowGroupRows, merge.DefaultSpliceMinRows)
	}
}
