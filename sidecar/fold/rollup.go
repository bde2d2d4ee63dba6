package fold

import (
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// Rollup is a rollup table's folding at one instant: what maintenance plans and rewrites with.
type Rollup struct {
	Spec Spec
	Cut  plan.FoldCutoffs
	Fold folding.Fold
}

// RollupOf reads t's specification and returns its folding at now: nil for a table without one,
// nil and the error for a bad one (the table is then not folded). maxGroups is the fold's group
// budget (SIGLAKE_FOLD_MAX_GROUPS).
func RollupOf(t *table.Table, now time.Time, maxGroups int) (*Rollup, error) {
	s, ok, err := Load(t)
	if !ok || err != nil {
		return nil, err
	}
	cut, err := s.PlanTiers(now)
	if err != nil {
		return nil, err
	}
	f, err := s.MergeFold(now, maxGroups)
	if err != nil {
		return nil, err
	}
	return &Rollup{Spec: s, Cut: cut, Fold: f}, nil
}

// Files is the planner's view of a rollup's files: their fold record from their names.
func Files(files []level.File) []plan.FoldFile {
	out := make([]plan.FoldFile, len(files))
	for i, f := range files {
		tier, ok := merge.ParseFoldTier(f.Path)
		out[i] = plan.FoldFile{File: f, Folded: ok, Tier: tier}
	}
	return out
}

// Tier is the tier every row of files reaches when folded at these cutoffs: the lowest any is due.
func (r *Rollup) Tier(files []level.File) int {
	tier := -1
	for _, f := range files {
		if d := r.Cut.Due(f.MaxTime); tier < 0 || d < tier {
			tier = d
		}
	}
	return max(tier, 0)
}
