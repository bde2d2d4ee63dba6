package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// randomTable is randomCase with, for every other case, a rollup table's fold view: files folded
// or not, at random tiers, and cutoffs that make some due for a coarser tier.
func randomTable(r *rand.Rand) (Config, TableInput) {
	cfg, in := randomCase(r)
	tin := TableInput{Input: in}
	if r.IntN(2) == 0 {
		return cfg, tin
	}
	// Mostly folded tables leave budget to the level checks beside a few fold bins.
	fi := &FoldInput{MinFiles: r.IntN(40)}
	unfolded := []int{2, 10, 50}[r.IntN(3)]
	for _, f := range in.Files {
		folded := r.IntN(unfolded) != 0
		tier := 0
		if folded {
			tier = r.IntN(3)
		}
		fi.Files = append(fi.Files, FoldFile{File: f, Folded: folded, Tier: tier})
	}
	for range r.IntN(3) { // youngest tier first: each cutoff older than the one before
		last := int64(3000e6)
		if n := len(fi.Cut); n > 0 {
			last = fi.Cut[n-1]
		}
		fi.Cut = append(fi.Cut, last-r.Int64N(1000e6))
	}
	tin.Fold = fi
	if r.IntN(3) == 0 { // a busy rewriter with room for fold and level bins: the shared time limit
		cfg.Leveled, cfg.MaxBinsPerPass, cfg.MaxFilesPerPass = true, 4+r.IntN(8), 1000
		tin.Rewriter = rateOf(time.Duration(r.Int64N(int64(time.Second))), math.Exp(math.Log(1e7)+r.Float64()*math.Log(1e2)))
		tin.RewriterBusy, tin.TimeSpent = 1, 0
	}
	return cfg, tin
}

// unlimited is the input and configuration of the pass PlanTable's outstanding work stands for:
// the budgets lifted, no backlog, no time limit.
func unlimited(cfg Config, in TableInput) (Config, TableInput) {
	cfg.MaxFilesPerPass, cfg.MaxBinsPerPass = math.MaxInt, math.MaxInt
	in.SealedBacklog, in.State.BackloggedCycles = 0, 0
	in.Rewriter, in.RewriterBusy, in.TimeSpent = RewriteRate{}, 0, 0
	return cfg, in
}

// TestTablePassProperties: across random tables, ordinary and rollups, the pass of a table keeps
// one budget over its fold and level bins, takes the fold bins first as they fit in the order
// PlanFold gives them, gives every bin a reason, reports as outstanding what a pass with
// unlimited budgets would do, and is the same pass for the same input.
func TestTablePassProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 1))
	folds, levels, deferredFolds := 0, 0, 0
	timedBoth := 0 // time-limited passes with fold bins and level bins after them
	for iter := range propertyCases() {
		cfg, in := randomTable(r)
		p := PlanTable(cfg, in)
		if err := checkTablePass(cfg, in, p); err != nil {
			t.Fatalf("case %d: %v\nconfig %+v\n%v", iter, err, cfg, p.Pass)
		}
		if q := PlanTable(cfg, in); !reflect.DeepEqual(p, q) {
			t.Fatalf("case %d: the same input planned two passes:\n%v\n---\n%v", iter, p.Pass, q.Pass)
		}
		for _, b := range p.Bins {
			if b.Kind == level.KindFold {
				folds++
			} else {
				levels++
			}
		}
		if p.TimeLimit > 0 && len(p.Bins) > 2 && p.Bins[0].Kind == level.KindFold && p.Bins[len(p.Bins)-1].Kind != level.KindFold {
			timedBoth++
		}
		for _, b := range p.Deferred {
			if b.Kind == level.KindFold {
				deferredFolds++
			}
		}
	}
	// The generator must reach every part of the rule, or the properties prove little.
	if folds == 0 || levels == 0 || deferredFolds == 0 || timedBoth == 0 {
		t.Fatalf("fold bins %d, level bins %d, deferred fold bins %d, time-limited passes of both %d in %d cases: want all",
			folds, levels, deferredFolds, timedBoth, propertyCases())
	}
	t.Logf("fold bins %d, level bins %d, deferred fold bins %d, time-limited passes of both %d", folds, levels, deferredFolds, timedBoth)
}

// checkTablePass verifies the promises of one table pass.
func checkTablePass(cfg Config, in TableInput, p TablePass) error {
	if err := checkBudget(cfg, in, p); err != nil {
		return err
	}
	if err := checkInFlight(cfg, in.Input, p.Pass); err != nil {
		return err
	}
	for _, b := range append(append([]level.Bin{}, p.Bins...), p.Deferred...) {
		if strings.TrimSpace(b.Reason) == "" {
			return fmt.Errorf("bin without a reason: %v", b)
		}
	}
	if err := checkFoldShare(cfg, in, p); err != nil {
		return err
	}
	if err := checkTableTime(cfg, in, p); err != nil {
		return err
	}
	if err := checkOutstanding(cfg, in, p); err != nil {
		return err
	}
	idle := len(p.Bins) == 0 && p.Decision != DecisionSkippedBackpressure && p.Decision != DecisionThrottledBackpressure
	if p.Idle != idle {
		return fmt.Errorf("idle %v with %d bins, decision %v", p.Idle, len(p.Bins), p.Decision)
	}
	return nil
}

// checkBudget: the bins of every kind together stay inside the pass's bin and file budgets, and
// no file is in two bins.
func checkBudget(cfg Config, in TableInput, p TablePass) error {
	workers := max(in.Workers, 1)
	maxBins := cfg.MaxBinsPerPass * workers
	switch p.Decision {
	case DecisionRewritesDisabled, DecisionSkippedBackpressure:
		maxBins = 0
	case DecisionThrottledBackpressure:
		maxBins = cfg.BackpressureMaxBins
	}
	if len(p.Bins) > maxBins {
		return fmt.Errorf("%d bins > budget %d (%v)", len(p.Bins), maxBins, p.Decision)
	}
	if n := p.Files(); n > cfg.MaxFilesPerPass*workers {
		return fmt.Errorf("%d files > budget %d for %d workers", n, cfg.MaxFilesPerPass*workers, workers)
	}
	seen := map[string]bool{}
	for _, b := range p.Bins {
		for _, f := range b.Files {
			if seen[f.Path] {
				return fmt.Errorf("file %s in two bins", f.Path)
			}
			seen[f.Path] = true
		}
	}
	return nil
}

// checkFoldShare: a rollup's fold bins, in a cycle that runs rewrites, are the first bins, taken
// in PlanFold's order while they fit the budget and deferred when they do not (the fold share),
// and none is planned otherwise; an ordinary table has none. With bins in flight the fold bins
// are PlanFold's without the files those hold back (checkInFlight holds them to that).
func checkFoldShare(cfg Config, in TableInput, p TablePass) error {
	var want, wantDeferred []level.Bin
	if in.Fold != nil && rewritesRun(cfg, in.Input) && len(in.InFlight) == 0 {
		minFiles := in.Fold.MinFiles
		if minFiles <= 0 {
			minFiles = cfg.EligibleFiles
		}
		bins, files := cfg.MaxBinsPerPass*max(in.Workers, 1), cfg.MaxFilesPerPass*max(in.Workers, 1)
		for _, f := range PlanFold(FoldConfig{MinFiles: minFiles, MaxFanIn: cfg.MaxFanIn, TargetBytes: cfg.TargetBytes[level.L0]}, in.Fold.Files, in.Fold.Cut, nil) {
			if bins >= 1 && len(f.Files) <= files {
				bins, files = bins-1, files-len(f.Files)
				want = append(want, f.Bin)
			} else {
				wantDeferred = append(wantDeferred, f.Bin)
			}
		}
	}
	var got, gotDeferred []level.Bin
	for i, b := range p.Bins {
		if b.Kind != level.KindFold {
			continue
		}
		if i != len(got) {
			return fmt.Errorf("fold bin at %d after a level bin", i)
		}
		got = append(got, b)
	}
	for _, b := range p.Deferred {
		if b.Kind == level.KindFold {
			gotDeferred = append(gotDeferred, b)
		}
	}
	if len(want) > 0 && p.Decision != DecisionRun {
		return fmt.Errorf("fold bins planned but decision %v", p.Decision)
	}
	if len(in.InFlight) > 0 {
		return nil
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotDeferred, wantDeferred) {
		return fmt.Errorf("fold bins %d (deferred %d), want %d (deferred %d)", len(got), len(gotDeferred), len(want), len(wantDeferred))
	}
	return nil
}

// checkTableTime: the fold bins' estimated time counts first, and then, past the first level bin,
// the level bins stay inside what is left of the time limit (but for the one bin allowed past it
// after largeBinWait limited passes).
func checkTableTime(cfg Config, in TableInput, p TablePass) error {
	if p.TimeLimit == 0 {
		return nil
	}
	allowed := 0
	if in.State.TimeLimitedPasses >= largeBinWait {
		allowed = 1
	}
	sum, past, levelBins := in.TimeSpent, 0, 0
	for _, b := range p.Bins {
		est := in.Rewriter.Estimate(b.EstimatedBytes)
		if b.Kind != level.KindFold {
			if levelBins > 0 && sum+est > p.TimeLimit {
				past++
			}
			levelBins++
		}
		sum += est
	}
	if past > allowed {
		return fmt.Errorf("%d level bins past the time limit %v (allowed %d)", past, p.TimeLimit, allowed)
	}
	return nil
}

// checkOutstanding: the outstanding work is what the same pass with unlimited budgets plans, and
// a pass that no budget cut short plans exactly that.
func checkOutstanding(cfg Config, in TableInput, p TablePass) error {
	if p.Decision == DecisionRewritesDisabled {
		if !p.OutstandingKnown || p.Outstanding != (Work{}) {
			return fmt.Errorf("rewrites disabled: outstanding %+v (known %v), want none", p.Outstanding, p.OutstandingKnown)
		}
		return nil
	}
	full := PlanTable(unlimited(cfg, in))
	var want Work
	want.Add(full.Bins...)
	if len(full.Deferred) > 0 {
		return fmt.Errorf("a pass with unlimited budgets deferred %d bins", len(full.Deferred))
	}
	known := full.Decision != DecisionNothingDue
	if p.OutstandingKnown != known || known && p.Outstanding != want {
		return fmt.Errorf("outstanding %+v (known %v), want the unlimited pass's %+v (known %v)", p.Outstanding, p.OutstandingKnown, want, known)
	}
	cut := len(p.Deferred) > 0 || p.Decision != DecisionRun
	for _, s := range p.Skipped {
		cut = cut || strings.Contains(s, "left for a later pass")
	}
	var planned Work
	planned.Add(p.Bins...)
	if !cut && p.Outstanding != planned {
		return fmt.Errorf("no budget cut the pass short, yet outstanding %+v is not its bins' %+v", p.Outstanding, planned)
	}
	return nil
}
