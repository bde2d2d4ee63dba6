package plan

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// budget is what a pass may still take. With a rate, time is what is left
// of the pass's time limit, which every bin but the first must fit by the
// rate's estimate; timeRefused holds the bins the limit refused; with
// pastTime the largest of them is taken past the limit once the others are
// served (tookPast).
type budget struct {
	files, bins int
	rate        *RewriteRate
	time        time.Duration
	timeRefused []level.Bin
	pastTime    bool
	tookPast    bool
}

func newBudget(files, bins int) *budget { return &budget{files: files, bins: bins} }

// fits is the pass's one budget rule, for bins of every kind: a bin fits while the pass has a
// bin left and the files it takes. (The time limit, which applies to level bins only, is
// overTime.)
func (b *budget) fits(bin level.Bin) bool { return b.bins >= 1 && len(bin.Files) <= b.files }

// take charges bin to the budget: a bin, its files and, with a rate, its estimated time.
func (b *budget) take(bin level.Bin) {
	b.bins--
	b.files -= len(bin.Files)
	if b.rate != nil {
		b.time -= b.rate.Estimate(bin.EstimatedBytes)
	}
}

// largeBinWait is how many passes in a row the time limit may leave a bin
// for later before a pass takes one bin past it, so a large rewrite whose
// score stays below the fresh files' still runs; 3 held the busy edge and the
// late table's settled depth lowest (docs/compaction.md, "The pass's time limit").
const largeBinWait = 3

// busyForTimeLimit is the rewriter's busy share (Input.RewriterBusy) from
// which a pass has a time limit: half, where passes start to run into the
// next L0 check (the simulated shares are in docs/compaction.md, "Late rows").
const busyForTimeLimit = 0.5

// serve hands out the budget to candidates in score order and reports the
// levels that had a bin refused for want of budget. Files fl holds back count as
// taken from the start; a bin reaching an in-flight file is not planned (it waits,
// neither deferred nor starving its level).
func (p *Pass) serve(cfg Config, cands []level.Candidate, b *budget, fl inFlight) map[level.Level]bool {
	slices.SortStableFunc(cands, func(a, c level.Candidate) int {
		if x := cmp.Compare(c.Score, a.Score); x != 0 {
			return x
		}
		if x := cmp.Compare(a.Kind, c.Kind); x != 0 {
			return x
		}
		return cmp.Compare(a.Partition, c.Partition)
	})
	starved := map[level.Level]bool{}
	taken := map[string]bool{}
	deferred := map[string]bool{} // files of the bins in p.Deferred
	// A candidate's bins hold files of its partition only and are pairwise disjoint, so a
	// deferred bin's files matter only to later candidates of the same partition: they enter
	// deferred then. Over the legacy pass (one candidate per partition, most files deferred)
	// no file enters it.
	pending := map[string][]int{} // partition: indices in p.Deferred not yet in deferred
	takenIn := fl.takenIn()       // partition: its files in taken, and those fl holds back
	deferBin := func(c level.Candidate, bin level.Bin) {
		bin.Score = c.Score
		pending[c.Partition] = append(pending[c.Partition], len(p.Deferred))
		p.Deferred = append(p.Deferred, bin)
	}
	for _, c := range cands {
		for _, i := range pending[c.Partition] {
			for _, f := range p.Deferred[i].Files {
				deferred[f.Path] = true
			}
		}
		delete(pending, c.Partition)
		// The files taken in c's partition, all its bins and builds can hold: lookups in a
		// small partition's set (or none) instead of the pass's.
		t := takenIn[c.Partition]
		bins := c.Build(t)
		if len(bins) == 0 {
			// Quiet when an earlier bin of this pass took the partition's
			// files: the work is being done, under another kind.
			if !slices.ContainsFunc(p.Bins, func(b level.Bin) bool { return b.Partition == c.Partition }) {
				p.Skipped = append(p.Skipped, fmt.Sprintf("%s %s partition=%q: %s, but no bin of 2+ files%s", c.Kind, c.Level, c.Partition, c.Why, fl.waitNote(c.Partition)))
			}
			continue
		}
		refused, waiting := 0, 0
		for _, bin := range bins {
			if fl.blocks(bin) {
				waiting++
				continue
			}
			if b.overTime(p, bin, t) {
				b.timeRefused = append(b.timeRefused, bin)
				refused++
				if !level.AnyTaken(bin.Files, deferred) {
					deferBin(c, bin)
				}
				continue
			}
			if !b.fits(bin) || level.AnyTaken(bin.Files, t) {
				refused++
				if !level.AnyTaken(bin.Files, t) && !level.AnyTaken(bin.Files, deferred) {
					deferBin(c, bin)
				}
				continue
			}
			b.take(bin)
			if t == nil {
				t = map[string]bool{}
				takenIn[c.Partition] = t
			}
			for _, f := range bin.Files {
				taken[f.Path] = true
				t[f.Path] = true
			}
			bin.Score = c.Score
			p.Bins = append(p.Bins, bin)
		}
		if refused > 0 {
			starved[c.Level] = true
			p.Skipped = append(p.Skipped, fmt.Sprintf("%s %s partition=%q: %d of %d bins left for a later pass (budget: %d bins, %d files%s left)",
				c.Kind, c.Level, c.Partition, refused, len(bins), b.bins, b.files, b.timeLeft(p)))
		}
		if waiting > 0 {
			p.Skipped = append(p.Skipped, fmt.Sprintf("%s %s partition=%q: %d of %d bins wait for bins in flight over their time range",
				c.Kind, c.Level, c.Partition, waiting, len(bins)))
		}
	}
	p.takePastTime(b, taken)
	// A later, smaller bin may have taken files of a deferred one: that work is being done.
	// Only bins of a partition some bin took files of can share one (takePastTime's bin is
	// in taken only).
	p.Deferred = slices.DeleteFunc(p.Deferred, func(d level.Bin) bool {
		return (takenIn[d.Partition] != nil || b.tookPast) && level.AnyTaken(d.Files, taken)
	})
	return starved
}

// takePastTime takes, in a pass allowed to go past its time limit, the
// first bin (in score order) the limit refused that could never fit it, an
// estimate above the whole limit, and the other budgets still allow; else
// the first refused one. A bin that fits an empty pass is left for a pass
// with less fresh work, so the allowance goes to the rewrite that would
// otherwise wait for ever (each waits largeBinWait passes for each such one
// ahead of it).
func (p *Pass) takePastTime(b *budget, taken map[string]bool) {
	if !b.pastTime {
		return
	}
	best := -1
	for i, bin := range b.timeRefused {
		if !b.fits(bin) || level.AnyTaken(bin.Files, taken) {
			continue
		}
		if best < 0 {
			best = i
		}
		if b.rate.Estimate(bin.EstimatedBytes) > p.TimeLimit {
			best = i
			break
		}
	}
	if best < 0 {
		return
	}
	bin := b.timeRefused[best]
	b.take(bin) // past the limit: what is left of it no longer matters
	for _, f := range bin.Files {
		taken[f.Path] = true
	}
	bin.Reason += fmt.Sprintf("; past the pass's time limit after %d passes that left it for later", largeBinWait)
	p.Bins = append(p.Bins, bin)
	b.tookPast = true
}

// overTime reports whether bin, which the other budgets would take, is
// refused by the time limit: it is not the pass's first bin and its
// estimated time is more than the limit has left.
func (b *budget) overTime(p *Pass, bin level.Bin, taken map[string]bool) bool {
	return b.rate != nil && len(p.Bins) > 0 && b.rate.Estimate(bin.EstimatedBytes) > b.time &&
		b.fits(bin) && !level.AnyTaken(bin.Files, taken)
}

func (b *budget) timeLeft(p *Pass) string {
	if b.rate == nil {
		return ""
	}
	return fmt.Sprintf(", %s of %s rewrite time", max(b.time, 0).Round(time.Millisecond), p.TimeLimit)
}
