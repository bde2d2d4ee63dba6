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
//
// The candidates come from the picker, package level (files, levels, overlap,
// the checks' candidates); this package decides when each check runs and
// serves the candidates under the pass's budgets (budget.go), and plans the
// table's other work: a rollup's fold bins, retention and delete tasks.
package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

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
	LastCheck [level.NumLevels]time.Time
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
	Files []level.File
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
	// InFlight are the input paths of the table's bins still running elsewhere (the lease book's
	// InFlight): the pass plans without them, and a bin whose time range reaches one of them in
	// its partition and stream waits for it (inflight.go). Nil: nothing in flight, as with one
	// rewriter whose pass starts when its last bin has ended.
	InFlight map[string]bool
	// Workers is how many rewriters take the pass's bins (0 or 1: one, the process itself): the
	// pass's file and bin budgets (Config.MaxFilesPerPass, MaxBinsPerPass) are per worker, so N
	// workers are handed N passes' worth of bins per check (docs/compaction.md, "One pass").
	Workers int
}

// Pass is the planner's answer for one cycle.
type Pass struct {
	Decision Decision
	Bins     []level.Bin
	// Skipped lists, in words, work that was due but not planned and why.
	Skipped []string
	// Deferred are the bins a due check built but the pass's budget refused: work left for a
	// later pass (no two share a file, and none shares one with Bins). With Bins not yet run it
	// is the table's outstanding compaction work.
	Deferred []level.Bin
	// Depth is the overlap depth of every partition of the input.
	Depth map[string]int
	// Checked lists the level checks that ran in this pass.
	Checked []level.Level
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
func Plan(cfg Config, in Input) Pass { return planPass(cfg.forWorkers(in.Workers), in, spent{}) }

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
	parts := level.ByPartition(files)
	depths := level.PartitionDepths(parts)
	p := Pass{
		Skipped: skipped,
		Depth:   depths, // of every live file, in flight or not
		Next:    in.State,
	}
	files, fl := splitInFlight(cfg, files, in.InFlight)
	if fl.n > 0 {
		parts = level.ByPartition(files)
		depths = level.PartitionDepths(parts)
		p.Skipped = append(p.Skipped, fl.note())
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
		p.Checked = []level.Level{level.L0}
		p.serve(cfg, level.BackpressureCandidates(cfg.Rules, files), b, fl)
		p.Next.LastCheck[level.L0] = in.Now
		return p
	}

	if !cfg.Leveled {
		p.Next.TimeLimitedPasses = 0 // the legacy pass has no time limit
		if !Due(in.State.LastLegacy, in.Now, cfg.ReclusterInterval) {
			p.Decision = DecisionNothingDue
			return p
		}
		p.Decision = DecisionRun
		starved := p.serve(cfg, level.LegacyCandidates(cfg.Rules, parts, depths), newBudget(cfg.MaxFilesPerPass-ahead.files, cfg.MaxBinsPerPass-ahead.bins), fl)
		if len(starved) == 0 {
			p.Next.LastLegacy = in.Now
		}
		return p
	}

	var due [level.NumLevels]bool
	for l := range due {
		due[l] = Due(in.State.LastCheck[l], in.Now, cfg.CheckInterval[l])
		if due[l] {
			p.Checked = append(p.Checked, level.Level(l))
		}
	}
	if len(p.Checked) == 0 {
		p.Decision = DecisionNothingDue
		return p
	}
	p.Decision = DecisionRun
	b := newBudget(cfg.MaxFilesPerPass-ahead.files, cfg.MaxBinsPerPass-ahead.bins)
	if in.Rewriter.Known() && in.RewriterBusy >= busyForTimeLimit {
		p.TimeLimit = cfg.CheckInterval[level.L0]
		b.rate, b.time = &in.Rewriter, p.TimeLimit-max(in.TimeSpent, 0)-ahead.time
		b.pastTime = in.State.TimeLimitedPasses >= largeBinWait
	}
	starved := p.serve(cfg, level.Candidates(cfg.Rules, files, due), b, fl)
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

func validFiles(in []level.File) ([]level.File, []string) {
	var skipped []string
	out := make([]level.File, 0, len(in))
	for _, f := range in {
		if f.MinTime > f.MaxTime {
			skipped = append(skipped, fmt.Sprintf("file %s: min time %d after max time %d; left out", f.Path, f.MinTime, f.MaxTime))
			continue
		}
		out = append(out, f)
	}
	return out, skipped
}
