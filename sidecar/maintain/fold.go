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

// foldInput is a rollup table's fold view for the planner (nil for a table without a rollup).
func (m *Maintainer) foldInput(r *fold.Rollup, files []plan.File) *plan.FoldInput {
	if r == nil {
		return nil
	}
	return &plan.FoldInput{Files: fold.Files(files), Cut: r.Cut, MinFiles: m.Cfg.FoldMinFiles}
}
