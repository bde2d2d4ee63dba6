package maintain

import (
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
// level bins read), planned on the same files, and the level planner on the files they leave. A
// cycle that runs no ordinary rewrites (backpressure, rewrites off) runs no fold either and is
// planned on every file.
func (m *Maintainer) plan(roll *fold.Rollup, in plan.Input, skipping bool) plan.Pass {
	if roll == nil || skipping {
		return plan.Plan(m.Plan, in)
	}
	folds, rest := m.planFold(roll, in.Files)
	if len(folds) == 0 {
		return plan.Plan(m.Plan, in)
	}
	left := in
	left.Files = rest
	pass := plan.Plan(m.Plan, left)
	if pass.Decision != plan.DecisionRun && pass.Decision != plan.DecisionNothingDue {
		return plan.Plan(m.Plan, in)
	}
	pass.Bins = append(folds, pass.Bins...)
	return pass
}

// planFold plans the fold bins of a rollup table and returns them with the files they leave for
// the level planner.
func (m *Maintainer) planFold(r *fold.Rollup, files []plan.File) ([]plan.Bin, []plan.File) {
	cfg := m.Plan
	fb := plan.PlanFold(plan.FoldConfig{MinFiles: m.foldMinFiles(), MaxFanIn: cfg.MaxFanIn,
		TargetBytes: cfg.TargetBytes[plan.L0], MaxBins: cfg.MaxBinsPerPass}, fold.Files(files), r.Cut, nil)
	if len(fb) == 0 {
		return nil, files
	}
	taken := map[string]bool{}
	bins := make([]plan.Bin, len(fb))
	for i, b := range fb {
		bins[i] = b.Bin
		for _, f := range b.Files {
			taken[f.Path] = true
		}
	}
	rest := make([]plan.File, 0, len(files))
	for _, f := range files {
		if !taken[f.Path] {
			rest = append(rest, f)
		}
	}
	return bins, rest
}

func (m *Maintainer) foldMinFiles() int {
	if m.Cfg.FoldMinFiles > 0 {
		return m.Cfg.FoldMinFiles
	}
	return m.Plan.EligibleFiles
}
