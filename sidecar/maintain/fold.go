package maintain

import (
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/plan"
)

// rollup reads table name's fold specification at now and publishes it: nil for a table without
// one, and for a bad one, which is shown in /debug/status and siglake_fold_spec_invalid and not
// folded (its rewrites keep every row as it is).
func (m *Maintainer) rollup(name string, t *table.Table, now time.Time) *fold.Rollup {
	r, err := fold.RollupOf(t, now, m.Cfg.FoldMaxGroups)
	var st *fold.Table
	switch {
	case err != nil:
		st = &fold.Table{Error: err.Error()}
		m.Metrics.Fold.Spec(name, err)
		if prev := m.published[name]; prev == nil || prev.Fold == nil || prev.Fold.Error != st.Error {
			m.error("fold", name, err)
			m.Log.Warn("table is not folded: bad fold specification", zap.String("table", name), zap.Error(err))
		}
	case r != nil:
		spec := r.Spec
		st = &fold.Table{Spec: &spec}
		m.Metrics.Fold.Spec(name, nil)
	default:
		m.Metrics.Fold.Forget(name)
	}
	m.edit(name, func(s *State) { s.Fold = st })
	return r
}

// plan is the table's pass: for a rollup table its fold bins first (folding shrinks what the
// level bins read), planned on the same files, and the level planner on the files they leave
// with what the fold bins left of the pass's file and bin budgets (promise 4: a pass is bounded
// however its bins are made). A cycle that runs no ordinary rewrites (backpressure, rewrites
// off) runs no fold either and is planned on every file.
//
// A rollup table is planned in one stream: every rewrite of it folds, and a fold's outputs are
// named as folded, never late, so its late files rejoin the on-time ones at their first rewrite.
func (m *Maintainer) plan(roll *fold.Rollup, in plan.Input, skipping bool) plan.Pass {
	if roll == nil {
		return plan.Plan(m.Plan, in)
	}
	one := m.Plan
	one.LateStream = false
	if skipping {
		return plan.Plan(one, in)
	}
	folds, deferred, rest := m.planFold(roll, in.Files)
	if len(folds) == 0 && len(deferred) == 0 {
		return plan.Plan(one, in)
	}
	cfg := one
	cfg.MaxBinsPerPass -= len(folds)
	for _, b := range folds {
		cfg.MaxFilesPerPass -= len(b.Files)
	}
	left := in
	left.Files = rest
	for _, b := range folds { // the fold bins run first: their time counts against the pass's limit
		left.TimeSpent += in.Rewriter.Estimate(b.EstimatedBytes)
	}
	pass := plan.Plan(cfg, left)
	if pass.Decision != plan.DecisionRun && pass.Decision != plan.DecisionNothingDue {
		return plan.Plan(one, in)
	}
	if len(folds) > 0 {
		pass.Decision = plan.DecisionRun // the fold bins are due work, whatever the level checks say
	}
	pass.Bins = append(folds, pass.Bins...)
	pass.Deferred = append(deferred, pass.Deferred...)
	if len(deferred) > 0 {
		pass.Skipped = append(pass.Skipped, fmt.Sprintf("fold: %d bins left for a later pass (budget: %d bins, %d files per pass)",
			len(deferred), m.Plan.MaxBinsPerPass, m.Plan.MaxFilesPerPass))
	}
	return pass
}

// planFold plans the fold bins of a rollup table within the pass's budgets: the bins that fit,
// the ones deferred for budget (outstanding work, run first by a later pass), and the files
// neither holds, for the level planner.
func (m *Maintainer) planFold(r *fold.Rollup, files []plan.File) (bins, deferred []plan.Bin, rest []plan.File) {
	cfg := m.Plan
	fb := plan.PlanFold(plan.FoldConfig{MinFiles: m.foldMinFiles(), MaxFanIn: cfg.MaxFanIn,
		TargetBytes: cfg.TargetBytes[plan.L0]}, fold.Files(files), r.Cut, nil)
	if len(fb) == 0 {
		return nil, nil, files
	}
	binsLeft, filesLeft := cfg.MaxBinsPerPass, cfg.MaxFilesPerPass
	taken := map[string]bool{}
	for _, b := range fb {
		if binsLeft >= 1 && len(b.Files) <= filesLeft {
			binsLeft--
			filesLeft -= len(b.Files)
			bins = append(bins, b.Bin)
		} else {
			deferred = append(deferred, b.Bin)
		}
		for _, f := range b.Files {
			taken[f.Path] = true
		}
	}
	rest = make([]plan.File, 0, len(files))
	for _, f := range files {
		if !taken[f.Path] {
			rest = append(rest, f)
		}
	}
	return bins, deferred, rest
}

func (m *Maintainer) foldMinFiles() int {
	if m.Cfg.FoldMinFiles > 0 {
		return m.Cfg.FoldMinFiles
	}
	return m.Plan.EligibleFiles
}
