package maintain

import (
	"fmt"
	"testing"
	"time"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// foldPlanInput: 4 partitions of 16 overlapping unfolded files (a fold bin each) and 4 of 8
// small disjoint folded files (a level L0 bin each).
func foldPlanInput(now time.Time) plan.Input {
	var files []level.File
	base := now.Add(-time.Hour).UnixMicro()
	for p := 0; p < 4; p++ {
		for i := 0; i < 16; i++ {
			files = append(files, level.File{Path: fmt.Sprintf("u%d/%s", p, merge.DataFileName(0)), Partition: fmt.Sprintf("u%d", p),
				SizeBytes: 1 << 10, MinTime: base, MaxTime: base + 60e6, Rows: 10})
		}
	}
	for p := 0; p < 4; p++ {
		for i := 0; i < 8; i++ {
			ts := base + int64(i)*120e6
			files = append(files, level.File{Path: fmt.Sprintf("f%d/%s", p, merge.FoldedFileName(1, 0)), Partition: fmt.Sprintf("f%d", p),
				SizeBytes: 1 << 10, Generation: 1, MinTime: ts, MaxTime: ts + 60e6, Rows: 10})
		}
	}
	return plan.Input{Files: files, Now: now}
}

// TestFoldPlanSharesPassBudget: fold bins spend the pass's file and bin budgets with the level
// bins (promise 4), the bins left over are deferred (outstanding), and a pass with fold bins
// runs.
func TestFoldPlanSharesPassBudget(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	roll := &fold.Rollup{Spec: rollupSpec}
	cfg := plan.DefaultConfig()
	cfg.MaxBinsPerPass, cfg.MaxFilesPerPass = 2, 32
	cfg.EligibleFiles = 8
	m := &Maintainer{Plan: cfg, Cfg: Config{FoldMinFiles: 8}}

	in := foldPlanInput(now)
	pass := m.planTable(roll, in)
	if len(pass.Bins) > 2 || pass.Files() > 32 {
		t.Fatalf("pass of %d bins, %d files; budget 2 bins, 32 files:\n%s", len(pass.Bins), pass.Files(), pass)
	}
	if len(pass.Bins) != 2 || pass.Bins[0].Kind != level.KindFold || pass.Bins[1].Kind != level.KindFold {
		t.Fatalf("want the 2 fold bins first:\n%s", pass)
	}
	if pass.Decision != plan.DecisionRun {
		t.Fatalf("decision %s, want run", pass.Decision)
	}
	deferredFolds := 0
	for _, b := range pass.Deferred {
		if b.Kind == level.KindFold {
			deferredFolds++
		}
	}
	if deferredFolds != 2 {
		t.Fatalf("%d fold bins deferred, want 2: %+v", deferredFolds, pass.Deferred)
	}
}

// TestFoldOnlyPassRuns: a pass whose level checks are not due but that has fold bins is a run
// (not nothing_due), and its fold bins count as outstanding until committed.
func TestFoldOnlyPassRuns(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	roll := &fold.Rollup{Spec: rollupSpec}
	cfg := plan.DefaultConfig()
	m := &Maintainer{Plan: cfg, Cfg: Config{FoldMinFiles: 8}, Metrics: newTestMetrics()}
	in := foldPlanInput(now)
	for l := range in.State.LastCheck {
		in.State.LastCheck[l] = now // no level check due
	}
	pass := m.planTable(roll, in)
	if pass.Decision != plan.DecisionRun || len(pass.Bins) == 0 {
		t.Fatalf("want a run with fold bins:\n%s", pass)
	}
	for _, b := range pass.Bins {
		if b.Kind != level.KindFold {
			t.Fatalf("level bin planned with no check due:\n%s", pass)
		}
	}
	report, rep := &PassReport{}, &CycleReport{}
	m.parts()
	m.obs.outstandingWork("events_1m", pass, plan.Work{}, report, rep) // none committed: the bins failed
	if report.OutstandingBins != len(pass.Bins)+len(pass.Deferred) || report.OutstandingBins == 0 {
		t.Fatalf("outstanding %d bins, want the %d planned and %d deferred", report.OutstandingBins, len(pass.Bins), len(pass.Deferred))
	}
}

// TestRollupPlannedInOneStream: a rollup table's late files are planned with its on-time ones (a
// fold's outputs are named folded, never late), while another table's are planned apart.
func TestRollupPlannedInOneStream(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	base := now.Add(-time.Hour).UnixMicro()
	in := plan.Input{Now: now}
	for i := 0; i < 16; i++ {
		name := merge.DataFileName(1)
		if i%2 == 0 {
			name = merge.LateFileName(1)
		}
		in.Files = append(in.Files, level.File{Path: "d/" + name, Partition: "d", SizeBytes: 1 << 10, Generation: 1,
			MinTime: base, MaxTime: base + 60e6, Rows: 10, Late: merge.ParseLate(name)})
	}
	m := &Maintainer{Plan: plan.DefaultConfig(), Cfg: Config{FoldMinFiles: 100}, Metrics: newTestMetrics()}
	shape := func(pass plan.Pass) (bins, mixed int) {
		for _, b := range pass.Bins {
			late := 0
			for _, f := range b.Files {
				if f.Late {
					late++
				}
			}
			if late > 0 && late < len(b.Files) {
				mixed++
			}
		}
		return len(pass.Bins), mixed
	}
	if bins, mixed := shape(m.planTable(&fold.Rollup{Spec: rollupSpec}, in).Pass); bins != 1 || mixed != 1 {
		t.Fatalf("rollup table: %d bins, %d mixed; want one bin of both streams", bins, mixed)
	}
	if bins, mixed := shape(m.planTable(nil, in).Pass); bins != 2 || mixed != 0 {
		t.Fatalf("other table: %d bins, %d mixed; want one bin per stream", bins, mixed)
	}
}

// planTable is the table's pass as the maintainer plans it.
func (m *Maintainer) planTable(roll *fold.Rollup, in plan.Input) plan.TablePass {
	return plan.PlanTable(m.Plan, plan.TableInput{Input: in, Fold: foldInput(roll, in.Files, m.Cfg.FoldMinFiles)})
}
