package plan

import (
	"fmt"
	"maps"
	"slices"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// FoldCutoffs are a rollup table's tier cutoffs at one instant, in microseconds of the timestamp
// column, youngest tier first, each the start of a bucket of its tier: a row older than cutoff i
// folds at tier i+1's bucket (tier 0 is the fold bucket itself).
type FoldCutoffs []int64

// Due is the tier every row of a file whose newest row is maxTime reaches at these cutoffs.
func (c FoldCutoffs) Due(maxTime int64) int {
	n := 0
	for i, cut := range c {
		if maxTime < cut {
			n = i + 1
		}
	}
	return n
}

// FoldFile is a live file of a rollup table with its fold record (from its name).
type FoldFile struct {
	level.File
	// Folded: a fold wrote the file; Tier is then the tier all its rows reached.
	Folded bool
	Tier   int
}

// FoldConfig bounds the planner's fold bins.
type FoldConfig struct {
	// MinFiles is SIGLAKE_FOLD_MIN_FILES: a partition gets a fold bin once it holds this many
	// files no fold wrote (drain output, late rows). Tier coarsening does not wait for it.
	MinFiles int
	// MaxFanIn and TargetBytes bound one bin, as for level bins.
	MaxFanIn    int
	TargetBytes int64
	// MaxBins caps the bins of one pass.
	MaxBins int
}

// FoldBin is a level.KindFold bin and the tier its outputs record.
type FoldBin struct {
	level.Bin
	Tier int
}

// PlanFold picks the fold bins of a rollup table: per partition, once it holds MinFiles unfolded
// files or a file is due for a coarser tier than it has, the overlap clusters holding such files,
// whole (so the rows of other pods and late rows for the same buckets fold together), packed in
// time order up to the fan-in and the target size. taken are files other bins of the pass hold.
// A bin's tier is the lowest tier its files are due: every output row reaches it. Pure.
func PlanFold(cfg FoldConfig, files []FoldFile, cut FoldCutoffs, taken map[string]bool) []FoldBin {
	cfg.MinFiles = max(cfg.MinFiles, 1)
	cfg.MaxFanIn = max(cfg.MaxFanIn, 2)
	parts := map[string][]level.File{}
	rec := map[string]FoldFile{}
	for _, f := range files {
		if taken[f.Path] || f.MinTime > f.MaxTime {
			continue
		}
		parts[f.Partition] = append(parts[f.Partition], f.File)
		rec[f.Path] = f
	}
	var out []FoldBin
	for _, part := range slices.Sorted(maps.Keys(parts)) {
		out = append(out, foldPartition(cfg, part, parts[part], rec, cut)...)
	}
	if cfg.MaxBins > 0 && len(out) > cfg.MaxBins {
		out = out[:cfg.MaxBins]
	}
	return out
}

// foldPartition is PlanFold for the files of one partition (rec: their fold records).
func foldPartition(cfg FoldConfig, part string, pool []level.File, rec map[string]FoldFile, cut FoldCutoffs) []FoldBin {
	needs := func(f level.File) (unfolded, coarsen bool) {
		r := rec[f.Path]
		due := cut.Due(f.MaxTime)
		return !r.Folded, (r.Folded && r.Tier < due) || (!r.Folded && due > 0)
	}
	unfolded, coarsen := 0, 0
	for _, f := range pool {
		u, c := needs(f)
		if u {
			unfolded++
		}
		if c {
			coarsen++
		}
	}
	if unfolded < cfg.MinFiles && coarsen == 0 {
		return nil
	}
	why := fmt.Sprintf("rollup: %d unfolded files (fold at %d)", unfolded, cfg.MinFiles)
	if coarsen > 0 {
		why = fmt.Sprintf("rollup: %d files due for a coarser tier, %d unfolded", coarsen, unfolded)
	}
	var out []FoldBin
	var cur []level.File
	flush := func() {
		if len(cur) > 0 {
			out = append(out, foldBin(cfg, part, cur, cut, why))
			cur = nil
		}
	}
	for _, c := range level.Clusters(pool) {
		need := slices.ContainsFunc(c, func(f level.File) bool {
			u, co := needs(f)
			return co || (u && unfolded >= cfg.MinFiles)
		})
		if !need {
			continue
		}
		// A cluster past the fan-in folds in time-adjacent pieces: their outputs may overlap,
		// which costs a later fold, never an aggregate.
		for len(c) > 0 {
			if len(cur) > 0 && (len(cur)+len(c) > cfg.MaxFanIn || level.SumBytes(cur) >= cfg.TargetBytes) {
				flush()
			}
			n := min(len(c), cfg.MaxFanIn-len(cur))
			cur = append(cur, c[:n]...)
			c = c[n:]
		}
	}
	flush()
	return out
}

// foldBin is the fold bin of files, at the lowest tier they are due.
func foldBin(cfg FoldConfig, part string, files []level.File, cut FoldCutoffs, why string) FoldBin {
	tier := -1
	for _, f := range files {
		if d := cut.Due(f.MaxTime); tier < 0 || d < tier {
			tier = d
		}
	}
	b := level.SumBytes(files)
	return FoldBin{Tier: tier, Bin: level.Bin{Kind: level.KindFold, Level: level.L0, Partition: part, Files: files,
		EstimatedBytes: b, TargetFileBytes: cfg.TargetBytes, Score: float64(len(files)),
		Reason: fmt.Sprintf("%s; %d files, %d bytes to tier %d", why, len(files), b, tier)}}
}
