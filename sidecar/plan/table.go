package plan

import (
	"fmt"
	"math"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// TableInput is everything the pass of one table looks at: the level planner's input and, for a
// rollup table, its fold view.
type TableInput struct {
	Input
	// Fold makes the table a rollup (nil: an ordinary table).
	Fold *FoldInput
}

// FoldInput is a rollup table's fold view for PlanTable.
type FoldInput struct {
	// Files are Input.Files with their fold records (read from their names).
	Files []FoldFile
	// Cut are the table's tier cutoffs at Input.Now.
	Cut FoldCutoffs
	// MinFiles is SIGLAKE_FOLD_MIN_FILES (0: Config.EligibleFiles).
	MinFiles int
}

// Work is an amount of rewrite work: bins and their input bytes.
type Work struct {
	Bins  int
	Bytes int64
}

// Add counts bins.
func (w *Work) Add(bins ...level.Bin) {
	for _, b := range bins {
		w.Bins++
		w.Bytes += b.EstimatedBytes
	}
}

// Less is w without done, never below nothing.
func (w Work) Less(done Work) Work {
	return Work{Bins: max(w.Bins-done.Bins, 0), Bytes: max(w.Bytes-done.Bytes, 0)}
}

// TablePass is the planner's answer for one table in one cycle: the pass (its bins in the order
// they run, each with its reason, what the budgets deferred, the time limit, the next state),
// the outstanding work and whether the table leaves the cycle idle.
type TablePass struct {
	Pass
	// Outstanding is the rewrite work due now: what the same pass would plan with unlimited file,
	// bin and time budgets and, in a backlogged cycle, without the backlog (the gauge grows while
	// the drain has priority). Zero with rewrites disabled. OutstandingKnown is false when no
	// check was due: the last pass's value stands.
	Outstanding      Work
	OutstandingKnown bool
	// Idle: nothing to rewrite and no backpressure. A cycle whose every pass is idle is an idle
	// cycle, which runs the delete tasks (SIGLAKE_DELETE_TASKS).
	Idle bool
}

// PlanTable plans the whole pass of a table, the one call maintenance makes per table and cycle.
// A rollup table's fold bins come first (folding shrinks what the level bins read), then the
// level checks on the files the fold bins leave; both draw on the pass's one budget (budget.fits),
// and the fold bins' estimated time counts against the level bins' time limit. A cycle that runs
// no ordinary rewrites (backpressure, rewrites off) folds nothing. A rollup table is planned in one
// stream: every rewrite of it folds, and a fold's outputs are named as folded, never late, so its
// late files rejoin the on-time ones at their first rewrite. Pure, like Plan.
func PlanTable(cfg Config, in TableInput) TablePass {
	cfg = cfg.forWorkers(in.Workers)
	p := TablePass{Pass: planTable(cfg, in)}
	p.Idle = len(p.Bins) == 0 && p.Decision != DecisionSkippedBackpressure && p.Decision != DecisionThrottledBackpressure
	p.Outstanding, p.OutstandingKnown = outstanding(cfg, in, p.Decision)
	return p
}

func planTable(cfg Config, in TableInput) Pass {
	if in.Fold == nil {
		return planPass(cfg, in.Input, spent{})
	}
	cfg.LateStream = false
	if !rewritesRun(cfg, in.Input) {
		return planPass(cfg, in.Input, spent{})
	}
	folds, deferred, rest, waiting := foldBins(cfg, *in.Fold, in.Input)
	if len(folds) == 0 && len(deferred) == 0 && waiting == 0 {
		return planPass(cfg, in.Input, spent{})
	}
	var ahead spent
	for _, b := range folds {
		ahead.bins++
		ahead.files += len(b.Files)
		ahead.time += in.Rewriter.Estimate(b.EstimatedBytes)
	}
	left := in.Input
	left.Files = rest
	p := planPass(cfg, left, ahead)
	if len(folds) > 0 {
		p.Decision = DecisionRun // the fold bins are due work, whatever the level checks say
	}
	p.Bins = append(folds, p.Bins...)
	p.Deferred = append(deferred, p.Deferred...)
	if len(deferred) > 0 {
		p.Skipped = append(p.Skipped, fmt.Sprintf("fold: %d bins left for a later pass (budget: %d bins, %d files per pass)",
			len(deferred), cfg.MaxBinsPerPass, cfg.MaxFilesPerPass))
	}
	if waiting > 0 {
		p.Skipped = append(p.Skipped, fmt.Sprintf("fold: %d bins wait for bins in flight over their time range", waiting))
	}
	return p
}

// rewritesRun reports whether the cycle runs ordinary rewrites: they are on and the backlog
// neither skips nor throttles it.
func rewritesRun(cfg Config, in Input) bool {
	cfg = cfg.sane()
	if cfg.ReclusterInterval == 0 {
		return false
	}
	d, _ := backpressure(cfg, in.SealedBacklog, in.State.BackloggedCycles)
	return d == DecisionRun
}

// foldBins picks a rollup table's fold bins within the pass's budget: the bins that fit, the ones
// deferred for budget (outstanding work, run first by a later pass), and the files neither holds,
// for the level checks; waiting counts the bins that reach a file in flight (in.InFlight), which
// are not planned, and no bin holds a file in flight or one it holds back.
func foldBins(cfg Config, fold FoldInput, in Input) (bins, deferred []level.Bin, rest []level.File, waiting int) {
	minFiles := fold.MinFiles
	if minFiles <= 0 {
		minFiles = cfg.EligibleFiles
	}
	valid, _ := validFiles(in.Files)
	_, fl := splitInFlight(cfg, valid, in.InFlight)
	fb := PlanFold(FoldConfig{MinFiles: minFiles, MaxFanIn: cfg.MaxFanIn, TargetBytes: cfg.TargetBytes[level.L0]}, fold.Files, fold.Cut, fl.heldAll(in.InFlight))
	if len(fb) == 0 {
		return nil, nil, in.Files, 0
	}
	b := newBudget(cfg.MaxFilesPerPass, cfg.MaxBinsPerPass)
	taken := map[string]bool{}
	for _, f := range fb {
		if fl.blocks(f.Bin) {
			waiting++
			continue // its files stay for the level checks, which hold them back as well
		}
		if b.fits(f.Bin) {
			b.take(f.Bin)
			bins = append(bins, f.Bin)
		} else {
			deferred = append(deferred, f.Bin)
		}
		for _, f := range f.Files {
			taken[f.Path] = true
		}
	}
	return bins, deferred, level.Untaken(in.Files, taken), waiting
}

// outstanding is the work due now (TablePass.Outstanding): the same table's pass with the
// budgets lifted and no backlog.
func outstanding(cfg Config, in TableInput, d Decision) (Work, bool) {
	if d == DecisionRewritesDisabled {
		return Work{}, true
	}
	cfg.MaxFilesPerPass, cfg.MaxBinsPerPass = math.MaxInt, math.MaxInt
	in.SealedBacklog, in.State.BackloggedCycles = 0, 0
	in.Rewriter, in.RewriterBusy, in.TimeSpent = RewriteRate{}, 0, 0
	full := planTable(cfg, in)
	if full.Decision == DecisionNothingDue {
		return Work{}, false
	}
	var w Work
	w.Add(full.Bins...)
	w.Add(full.Deferred...)
	return w, true
}
