// Package plan is the pure compaction planner: given the live files of one
// table, the configuration, the time and the WAL backlog, it decides which
// files to rewrite together. It performs no I/O and reads no clock; the
// state it carries from pass to pass is an explicit value the caller keeps
// (see State), so every decision can be replayed in a test.
//
// A pass works like this:
//
//  1. Rewrites disabled (ReclusterInterval 0): nothing is rewritten.
//  2. Sealed WAL backlog above MaxSealedForRecluster: the cycle is skipped,
//     except every BackpressureCompactEvery-th backlogged cycle, which runs
//     an L0-only pass under its own bin budget.
//  3. Otherwise (leveled): every due check produces candidates, scored by
//     pressure: a nonterminal level of a partition with at least
//     EligibleFiles rewrite-eligible files, the depth trigger of a partition
//     deeper than MaxOverlapDepth (with the L0 check), and overlapping
//     terminal files (with the L2 check). Candidates are served in score
//     order and share the pass's file and bin budgets.
//  4. Legacy: each partition with small files or overlap is rewritten whole.
package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Kind names why a bin exists; it labels metrics and status pages.
type Kind uint8

const (
	// KindL0 and KindL1 are level rewrites: whole overlap clusters of one
	// level packed up to the level's target size.
	KindL0 Kind = iota
	KindL1
	// KindDepth is an overlap-driven rewrite: time-adjacent files of one
	// cluster, any level or generation, that may exceed the byte target
	// but never the fan-in.
	KindDepth
	// KindLegacy is the flat whole-partition pass.
	KindLegacy
	// KindBackpressureL0 is the restricted L0 pass of a backlogged cycle.
	KindBackpressureL0
	// KindDeleteTask rewrites one file without the rows of deletion requests (PlanDeletes), at
	// generation 0, like Pebble's delete-only compactions: chosen by what it must remove, not by
	// size or overlap.
	KindDeleteTask
	// KindRetention rewrites one file without its rows past retention (PlanRetention): a file
	// that straddles a cutoff, or whose older rows a rule covers in part.
	KindRetention
	// KindFold folds the rows of a rollup table's files (PlanFold): many small unfolded files
	// of a partition, or files due for a coarser tier.
	KindFold
	// KindAbsorb is a terminal file taking in the small files beside it, at the L2 check, where
	// the splice copies most of the bin (absorb.go).
	KindAbsorb
)

var kindNames = [...]string{"l0", "l1", "depth", "legacy", "backpressure_l0", "delete-task", "retention", "fold", "absorb"}

// Kinds lists every kind, for pre-registering metric labels.
var Kinds = []Kind{KindL0, KindL1, KindDepth, KindLegacy, KindBackpressureL0, KindDeleteTask, KindRetention, KindFold, KindAbsorb}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// MarshalText renders the kind by name for JSON status pages.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Decision says what kind of cycle a pass was.
type Decision uint8

const (
	// DecisionRun: at least one check was due and considered; Bins may
	// still be empty, Skipped says why.
	DecisionRun Decision = iota
	// DecisionNothingDue: no level check (or legacy pass) was due.
	DecisionNothingDue
	// DecisionSkippedBackpressure: backlogged cycle without rewrites.
	DecisionSkippedBackpressure
	// DecisionThrottledBackpressure: backlogged cycle with the restricted
	// L0 pass.
	DecisionThrottledBackpressure
	// DecisionRewritesDisabled: ReclusterInterval is 0.
	DecisionRewritesDisabled
)

var decisionNames = [...]string{"run", "nothing_due", "skipped_backpressure", "throttled_backpressure", "rewrites_disabled"}

func (d Decision) String() string {
	if int(d) < len(decisionNames) {
		return decisionNames[d]
	}
	return fmt.Sprintf("decision(%d)", d)
}

// MarshalText renders the decision by name for JSON status pages.
func (d Decision) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// State is what the planner carries from one pass of a table to the next.
// The caller stores Pass.Next and hands it back; the zero value is a table
// never planned, whose first pass checks every level.
type State struct {
	// LastCheck is when each level was last checked. A level starved of
	// budget keeps its old time so the next cycle checks it again.
	LastCheck [NumLevels]time.Time
	// LastLegacy is when the legacy pass last ran.
	LastLegacy time.Time
	// BackloggedCycles counts consecutive cycles with the sealed backlog
	// above the limit; it restarts at 0 when the backlog falls, so the
	// cadence "every Nth backlogged cycle" counts from each episode's start.
	BackloggedCycles int
	// TimeLimitedPasses counts consecutive passes that left a bin for a later
	// pass because of the pass's time limit (see Input.Rewriter). Once it
	// reaches largeBinWait, the next pass may take one bin past the limit,
	// so a large rewrite waits a bounded number of passes.
	TimeLimitedPasses int
}

// Input is everything one pass looks at.
type Input struct {
	// Files are the table's live data files, all partitions.
	Files []File
	// Now is the pass's time; the planner never reads a clock.
	Now time.Time
	// SealedBacklog is the number of sealed WAL segments not yet drained.
	SealedBacklog int
	// State is the previous pass's Next (zero for the first pass).
	State State
	// Rewriter is the rewriter's measured speed (the zero value: not known).
	// A leveled pass then takes bins (its first whatever its size) only while
	// their estimated time adds up to one L0 check interval (Pass.TimeLimit):
	// the bins of a pass run one after another, and a pass that runs past
	// the next L0 check leaves the files every pod commits in the meantime
	// unmerged, which is most of the depth at the ingest edge
	// (docs/compaction.md, "The pass's time limit").
	Rewriter RewriteRate
	// RewriterBusy is the share of recent wall time the rewriter spent
	// rewriting (BusyShare). The time limit applies only from
	// busyForTimeLimit on: a rewriter mostly idle has finished each pass
	// long before fresh files need it, and deferring its large bins only
	// reorders work (docs/compaction.md, "The pass's time limit").
	RewriterBusy float64
	// TimeSpent is rewrite time the caller's cycle has already spent before
	// this pass (other tables' passes; PlanTable adds a rollup's fold bins):
	// the time limit is what is left of the L0 check interval, since the next
	// check of every table waits for the whole cycle. The pass's first bin is
	// still taken whatever its size, so every table makes progress.
	TimeSpent time.Duration
}

// Bin is one rewrite: the files to merge into time-disjoint outputs and
// commit as one validated replace.
type Bin struct {
	Kind Kind
	// Level is the level the bin was selected from; for overlap-driven bins,
	// the highest level among its files.
	Level     Level
	Partition string
	// Files are sorted by (MinTime, MaxTime, Path).
	Files []File
	// EstimatedBytes is the sum of the inputs' sizes: a rewrite keeps its
	// rows, so the output is about as large.
	EstimatedBytes int64
	// TargetFileBytes is where the rewrite should split its output.
	TargetFileBytes int64
	// Score is the pressure of the candidate the bin came from; higher was
	// served first.
	Score float64
	// Reason says in words why the bin exists.
	Reason string
}

// Late reports whether the bin merges late-stream files only: its outputs
// stay in the late stream. With Config.LateStream the leveled planner never
// mixes the streams; the legacy pass and a planner without LateStream do,
// and the outputs of a mixed bin are on-time (its sparse runs excepted).
func (b Bin) Late() bool {
	for _, f := range b.Files {
		if !f.Late {
			return false
		}
	}
	return len(b.Files) > 0
}

// OutputGeneration is the generation the bin's outputs carry.
func (b Bin) OutputGeneration() int {
	g := 0
	for _, f := range b.Files {
		g = max(g, f.Generation)
	}
	return g + 1
}

func (b Bin) String() string {
	return fmt.Sprintf("%s %s partition=%q files=%d bytes=%d score=%.2f: %s",
		b.Kind, b.Level, b.Partition, len(b.Files), b.EstimatedBytes, b.Score, b.Reason)
}

// Pass is the planner's answer for one cycle.
type Pass struct {
	Decision Decision
	Bins     []Bin
	// Skipped lists, in words, work that was due but not planned and why.
	Skipped []string
	// Deferred are the bins a due check built but the pass's budget refused: work left for a
	// later pass (no two share a file, and none shares one with Bins). With Bins not yet run it
	// is the table's outstanding compaction work.
	Deferred []Bin
	// Depth is the overlap depth of every partition of the input.
	Depth map[string]int
	// Checked lists the level checks that ran in this pass.
	Checked []Level
	// TimeLimit is the estimated rewrite time the pass's bins may add up to
	// (0: no limit): the L0 check interval when Input.Rewriter knows a
	// speed and the rewriter is busy (Input.RewriterBusy). The first bin is
	// taken whatever its size.
	TimeLimit time.Duration
	// Next is the state to pass to the next cycle.
	Next State
}

// Files returns the number of input files over all bins.
func (p Pass) Files() int {
	n := 0
	for _, b := range p.Bins {
		n += len(b.Files)
	}
	return n
}

func (p Pass) String() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "pass %s: %d bins, %d files", p.Decision, len(p.Bins), p.Files())
	for _, b := range p.Bins {
		sb.WriteString("\n  bin ")
		sb.WriteString(b.String())
	}
	for _, s := range p.Skipped {
		sb.WriteString("\n  skipped: ")
		sb.WriteString(s)
	}
	return sb.String()
}

// Plan computes one pass. It never panics on any input: files whose time
// bounds are inverted are left out and reported in Skipped.
func Plan(cfg Config, in Input) Pass { return planPass(cfg, in, spent{}) }

// spent is what bins planned ahead of the level checks (a rollup's fold bins, PlanTable) took of
// the pass's budgets: the bins, their files and their estimated rewrite time.
type spent struct {
	bins, files int
	time        time.Duration
}

// planPass is Plan with what the bins planned ahead already took charged to the pass's budgets.
func planPass(cfg Config, in Input, ahead spent) Pass {
	cfg = cfg.sane()
	files, skipped := validFiles(in.Files)
	// One grouping and one depth per partition serve the pass's depths and the legacy pass: over
	// the legacy strategy's many files they were the planner's largest cost, computed twice.
	parts := byPartition(files)
	depths := make(map[string]int, len(parts))
	for part, fs := range parts {
		depths[part], _ = Depth(fs)
	}
	p := Pass{
		Skipped: skipped,
		Depth:   depths,
		Next:    in.State,
	}

	if cfg.ReclusterInterval == 0 {
		p.Decision = DecisionRewritesDisabled
		p.Next.BackloggedCycles = 0
		return p
	}

	d, n := backpressure(cfg, in.SealedBacklog, in.State.BackloggedCycles)
	p.Next.BackloggedCycles = n
	switch d {
	case DecisionSkippedBackpressure:
		p.Decision = d
		p.Skipped = append(p.Skipped, fmt.Sprintf("sealed WAL backlog %d > %d: drain has priority (backlogged cycle %d)",
			in.SealedBacklog, cfg.MaxSealedForRecluster, n))
		return p
	case DecisionThrottledBackpressure:
		p.Decision = d
		b := newBudget(cfg.MaxFilesPerPass, cfg.BackpressureMaxBins)
		onTime, late := streams(cfg, files)
		cands := append(levelCandidates(cfg, onTime, L0, KindBackpressureL0),
			lateCandidates(levelCandidates(cfg, late, L0, KindBackpressureL0))...)
		p.Checked = []Level{L0}
		p.serve(cfg, cands, b)
		p.Next.LastCheck[L0] = in.Now
		return p
	}

	if !cfg.Leveled {
		p.Next.TimeLimitedPasses = 0 // the legacy pass has no time limit
		if !Due(in.State.LastLegacy, in.Now, cfg.ReclusterInterval) {
			p.Decision = DecisionNothingDue
			return p
		}
		p.Decision = DecisionRun
		starved := p.serve(cfg, legacyCandidates(cfg, parts, depths), newBudget(cfg.MaxFilesPerPass-ahead.files, cfg.MaxBinsPerPass-ahead.bins))
		if len(starved) == 0 {
			p.Next.LastLegacy = in.Now
		}
		return p
	}

	cands, checked := dueCandidates(cfg, files, in)
	p.Checked = checked
	if len(p.Checked) == 0 {
		p.Decision = DecisionNothingDue
		return p
	}
	p.Decision = DecisionRun
	b := newBudget(cfg.MaxFilesPerPass-ahead.files, cfg.MaxBinsPerPass-ahead.bins)
	if in.Rewriter.Known() && in.RewriterBusy >= busyForTimeLimit {
		p.TimeLimit = cfg.CheckInterval[L0]
		b.rate, b.time = &in.Rewriter, p.TimeLimit-max(in.TimeSpent, 0)-ahead.time
		b.pastTime = in.State.TimeLimitedPasses >= largeBinWait
	}
	starved := p.serve(cfg, cands, b)
	p.Next.TimeLimitedPasses = 0
	if b.timeRefused != nil && !b.tookPast {
		p.Next.TimeLimitedPasses = in.State.TimeLimitedPasses + 1
	}
	for _, l := range p.Checked {
		if !starved[l] {
			p.Next.LastCheck[l] = in.Now
		}
	}
	return p
}

// dueCandidates returns the candidates of every level check due at in.Now, each stream apart,
// and the levels checked: the L0 check brings the depth trigger, the L2 check the overlap of
// terminal files and the absorb bins.
func dueCandidates(cfg Config, files []File, in Input) (cands []candidate, checked []Level) {
	onTime, late := streams(cfg, files)
	for l := L0; l < NumLevels; l++ {
		if !Due(in.State.LastCheck[l], in.Now, cfg.CheckInterval[l]) {
			continue
		}
		checked = append(checked, l)
		for i, fs := range [][]File{onTime, late} {
			var cs []candidate
			switch l {
			case L0:
				limit := cfg.MaxOverlapDepth
				if i == 1 {
					limit = lateDepthLimit(cfg)
				}
				cs = append(levelCandidates(cfg, fs, L0, KindL0), depthCandidates(cfg, fs, limit)...)
			case L1:
				cs = levelCandidates(cfg, fs, L1, KindL1)
			case L2:
				cs = append(terminalCandidates(cfg, fs), absorbCandidates(cfg, fs)...)
			}
			if i == 1 {
				cs = lateCandidates(cs)
			}
			cands = append(cands, cs...)
		}
		if l == L0 {
			cands = append(cands, combinedDepthCandidates(cfg, onTime, late)...)
		}
	}
	return cands, checked
}

// SkipsBackpressure reports whether a cycle with this sealed backlog, after backloggedCycles
// backlogged cycles in a row, is a skipped one: the drain has priority and the cycle does no
// rewrites, no delete tasks and no snapshot expiry, so it makes no catalog commit that could
// conflict with the drain's (gauge sampling, which only reads, still runs). Plan makes the same
// decision for each table.
func SkipsBackpressure(cfg Config, sealedBacklog, backloggedCycles int) bool {
	cfg = cfg.sane()
	if cfg.ReclusterInterval == 0 {
		return false
	}
	d, _ := backpressure(cfg, sealedBacklog, backloggedCycles)
	return d == DecisionSkippedBackpressure
}

// backpressure is graded backpressure: above the backlog limit every BackpressureCompactEvery-th
// backlogged cycle is throttled (a restricted L0 pass) and the others are skipped; at or below
// it the cycle runs (DecisionRun) and the count restarts. n is the next BackloggedCycles.
func backpressure(cfg Config, sealedBacklog, backloggedCycles int) (d Decision, n int) {
	if sealedBacklog <= cfg.MaxSealedForRecluster {
		return DecisionRun, 0
	}
	n = backloggedCycles + 1
	if cfg.BackpressureCompactEvery == 0 || n%cfg.BackpressureCompactEvery != 0 {
		return DecisionSkippedBackpressure, n
	}
	return DecisionThrottledBackpressure, n
}

// Due reports whether a cadence of period every that last ran at last is due at now. The caller
// ticks on a timer whose ticks jitter (scheduling, a cycle that started late), so a check is due
// CadenceSlack(every) early: with exactly every, a tick a few milliseconds early would push the
// check to the next tick, and a 10 s cadence on a 10 s tick would run every 10 or 20 s. With the
// slack, a cadence that is a multiple of the tick runs on every k-th tick.
func Due(last, now time.Time, every time.Duration) bool {
	return last.IsZero() || now.Sub(last) >= every-CadenceSlack(every)
}

// CadenceSlack is how early Due lets a cadence run: a tenth of its period, at most one second.
// So a cadence runs at its period within one second (a tick of the caller's timer late).
func CadenceSlack(every time.Duration) time.Duration { return min(every/10, time.Second) }

// sane clamps settings Validate would reject, so Plan stays total; the
// caller is expected to have validated already.
func (c Config) sane() Config {
	d := DefaultConfig()
	if c.L1MinBytes <= 0 || c.L2MinBytes <= c.L1MinBytes {
		c.L1MinBytes, c.L2MinBytes = d.L1MinBytes, d.L2MinBytes
	}
	for l := range c.TargetBytes {
		if c.TargetBytes[l] <= 0 {
			c.TargetBytes[l] = d.TargetBytes[l]
		}
		if c.CheckInterval[l] <= 0 {
			c.CheckInterval[l] = d.CheckInterval[l]
		}
	}
	c.ReclusterInterval = max(c.ReclusterInterval, 0)
	c.EligibleFiles = max(c.EligibleFiles, 2)
	c.MaxOverlapDepth = max(c.MaxOverlapDepth, 1)
	c.LevelMaxGen = max(c.LevelMaxGen, 0)
	c.MaxFanIn = max(c.MaxFanIn, 2)
	c.MaxFilesPerPass = max(c.MaxFilesPerPass, 0)
	c.MaxBinsPerPass = max(c.MaxBinsPerPass, 0)
	c.MaxSealedForRecluster = max(c.MaxSealedForRecluster, 0)
	c.BackpressureCompactEvery = max(c.BackpressureCompactEvery, 0)
	c.BackpressureMaxBins = max(c.BackpressureMaxBins, 0)
	// NaN would pass every "share above the limit" test and plan every absorb bin: none instead.
	if !(c.AbsorbMaxReencode >= 0) {
		c.AbsorbMaxReencode = 0
	}
	c.AbsorbMaxReencode = min(c.AbsorbMaxReencode, 1)
	return c
}

func validFiles(in []File) ([]File, []string) {
	var skipped []string
	out := make([]File, 0, len(in))
	for _, f := range in {
		if f.MinTime > f.MaxTime {
			skipped = append(skipped, fmt.Sprintf("file %s: min time %d after max time %d; left out", f.Path, f.MinTime, f.MaxTime))
			continue
		}
		out = append(out, f)
	}
	return out, skipped
}

// candidate is one reason to rewrite in one partition; its bins are built
// when it is served, from the files earlier bins have not taken.
type candidate struct {
	kind      Kind
	level     Level // level whose check produced it (starvation bookkeeping)
	partition string
	score     float64
	why       string
	build     func(taken map[string]bool) []Bin
}

// budget is what a pass may still take. With a rate, time is what is left
// of the pass's time limit, which every bin but the first must fit by the
// rate's estimate; timeRefused holds the bins the limit refused; with
// pastTime the largest of them is taken past the limit once the others are
// served (tookPast).
type budget struct {
	files, bins int
	rate        *RewriteRate
	time        time.Duration
	timeRefused []Bin
	pastTime    bool
	tookPast    bool
}

func newBudget(files, bins int) *budget { return &budget{files: files, bins: bins} }

// fits is the pass's one budget rule, for bins of every kind: a bin fits while the pass has a
// bin left and the files it takes. (The time limit, which applies to level bins only, is
// overTime.)
func (b *budget) fits(bin Bin) bool { return b.bins >= 1 && len(bin.Files) <= b.files }

// take charges bin to the budget: a bin, its files and, with a rate, its estimated time.
func (b *budget) take(bin Bin) {
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
// levels that had a bin refused for want of budget.
func (p *Pass) serve(cfg Config, cands []candidate, b *budget) map[Level]bool {
	slices.SortStableFunc(cands, func(a, c candidate) int {
		if x := cmp.Compare(c.score, a.score); x != 0 {
			return x
		}
		if x := cmp.Compare(a.kind, c.kind); x != 0 {
			return x
		}
		return cmp.Compare(a.partition, c.partition)
	})
	starved := map[Level]bool{}
	taken := map[string]bool{}
	deferred := map[string]bool{} // files of the bins in p.Deferred
	// A candidate's bins hold files of its partition only and are pairwise disjoint, so a
	// deferred bin's files matter only to later candidates of the same partition: they enter
	// deferred then. Over the legacy pass (one candidate per partition, most files deferred)
	// no file enters it.
	pending := map[string][]int{}           // partition: indices in p.Deferred not yet in deferred
	takenIn := map[string]map[string]bool{} // partition: its files in taken
	deferBin := func(c candidate, bin Bin) {
		bin.Score = c.score
		pending[c.partition] = append(pending[c.partition], len(p.Deferred))
		p.Deferred = append(p.Deferred, bin)
	}
	for _, c := range cands {
		for _, i := range pending[c.partition] {
			for _, f := range p.Deferred[i].Files {
				deferred[f.Path] = true
			}
		}
		delete(pending, c.partition)
		// The files taken in c's partition, all its bins and builds can hold: lookups in a
		// small partition's set (or none) instead of the pass's.
		t := takenIn[c.partition]
		bins := c.build(t)
		if len(bins) == 0 {
			// Quiet when an earlier bin of this pass took the partition's
			// files: the work is being done, under another kind.
			if !slices.ContainsFunc(p.Bins, func(b Bin) bool { return b.Partition == c.partition }) {
				p.Skipped = append(p.Skipped, fmt.Sprintf("%s %s partition=%q: %s, but no bin of 2+ files", c.kind, c.level, c.partition, c.why))
			}
			continue
		}
		refused := 0
		for _, bin := range bins {
			if b.overTime(p, bin, t) {
				b.timeRefused = append(b.timeRefused, bin)
				refused++
				if !anyTaken(bin.Files, deferred) {
					deferBin(c, bin)
				}
				continue
			}
			if !b.fits(bin) || anyTaken(bin.Files, t) {
				refused++
				if !anyTaken(bin.Files, t) && !anyTaken(bin.Files, deferred) {
					deferBin(c, bin)
				}
				continue
			}
			b.take(bin)
			if t == nil {
				t = map[string]bool{}
				takenIn[c.partition] = t
			}
			for _, f := range bin.Files {
				taken[f.Path] = true
				t[f.Path] = true
			}
			bin.Score = c.score
			p.Bins = append(p.Bins, bin)
		}
		if refused > 0 {
			starved[c.level] = true
			p.Skipped = append(p.Skipped, fmt.Sprintf("%s %s partition=%q: %d of %d bins left for a later pass (budget: %d bins, %d files%s left)",
				c.kind, c.level, c.partition, refused, len(bins), b.bins, b.files, b.timeLeft(p)))
		}
	}
	p.takePastTime(b, taken)
	// A later, smaller bin may have taken files of a deferred one: that work is being done.
	// Only bins of a partition some bin took files of can share one (takePastTime's bin is
	// in taken only).
	p.Deferred = slices.DeleteFunc(p.Deferred, func(d Bin) bool {
		return (takenIn[d.Partition] != nil || b.tookPast) && anyTaken(d.Files, taken)
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
		if !b.fits(bin) || anyTaken(bin.Files, taken) {
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
func (b *budget) overTime(p *Pass, bin Bin, taken map[string]bool) bool {
	return b.rate != nil && len(p.Bins) > 0 && b.rate.Estimate(bin.EstimatedBytes) > b.time &&
		b.fits(bin) && !anyTaken(bin.Files, taken)
}

func (b *budget) timeLeft(p *Pass) string {
	if b.rate == nil {
		return ""
	}
	return fmt.Sprintf(", %s of %s rewrite time", max(b.time, 0).Round(time.Millisecond), p.TimeLimit)
}

func anyTaken(fs []File, taken map[string]bool) bool {
	for _, f := range fs {
		if taken[f.Path] {
			return true
		}
	}
	return false
}

func untaken(fs []File, taken map[string]bool) []File {
	out := make([]File, 0, len(fs))
	for _, f := range fs {
		if !taken[f.Path] {
			out = append(out, f)
		}
	}
	return out
}

func sumBytes(fs []File) int64 {
	var n int64
	for _, f := range fs {
		n += f.SizeBytes
	}
	return n
}

func maxLevel(cfg Config, fs []File) Level {
	l := L0
	for _, f := range fs {
		l = max(l, cfg.LevelOf(f.SizeBytes))
	}
	return l
}

// sortedPartitions returns the partition keys in order, so passes are
// deterministic whatever the map order.
func sortedPartitions(m map[string][]File) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
