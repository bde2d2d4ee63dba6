package plan

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// Config holds the planner's tunables: the picker's level rules and the
// pass's cadences and budgets. Every field says its default and why. The zero
// value is not useful; start from DefaultConfig.
type Config struct {
	// Rules are the level rules (level boundaries, targets, triggers, fan-in,
	// streams, absorb bins); their fields are the Config's.
	level.Rules

	// ReclusterInterval is SIGLAKE_RECLUSTER_INTERVAL_SECS, the maintenance
	// tick. Zero disables file rewrites (the caller keeps running other
	// maintenance). The leveled planner paces itself by CheckInterval; the
	// legacy pass runs at most once per ReclusterInterval. Default 10 s, the
	// L0 check interval, so a tick never misses a due check.
	ReclusterInterval time.Duration

	// CheckInterval is how often each level is checked. Defaults (spec):
	// L0 10 s, L1 60 s, L2 3,600 s. The depth trigger runs with the L0
	// check; the L2 check repairs overlap among terminal files.
	CheckInterval [level.NumLevels]time.Duration

	// MaxFilesPerPass and MaxBinsPerPass are the pass's budgets per worker
	// (Input.Workers), shared by every level and trigger considered in it.
	// Defaults 256 files and 4 bins: a pass finishes in minutes even at the
	// fan-in limit, so the loop sees fresh file sets often and the drain
	// keeps its share of the pod. With N workers a pass takes N times both:
	// one pass per check handed out 4 bins whatever the workers, and they
	// idled (docs/benchmarks.md, "Scale out maintenance (simulated)").
	MaxFilesPerPass int
	MaxBinsPerPass  int

	// MaxSealedForRecluster is SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER: a
	// sealed-WAL backlog above it gives the drain priority. Default 256.
	MaxSealedForRecluster int
	// BackpressureCompactEvery is SIGLAKE_COMPACTOR_BACKPRESSURE_COMPACT_EVERY:
	// every Nth backlogged cycle runs a restricted L0 pass; 0 disables it.
	// Default 4 (spec): file counts stay bounded while the drain catches up.
	BackpressureCompactEvery int

	// BackpressureMaxBins is the restricted pass's own bin budget (its bin
	// concurrency). Default 1: one bin at a time leaves the drain its CPU.
	BackpressureMaxBins int
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Rules:                    level.DefaultRules(),
		ReclusterInterval:        10 * time.Second,
		CheckInterval:            [level.NumLevels]time.Duration{10 * time.Second, 60 * time.Second, 3600 * time.Second},
		MaxFilesPerPass:          256,
		MaxBinsPerPass:           4,
		MaxSealedForRecluster:    256,
		BackpressureCompactEvery: 4,
		BackpressureMaxBins:      1,
	}
}

// forWorkers returns c with the pass's file and bin budgets for workers rewriters (below 1:
// one). The restricted pass of a backlogged cycle keeps its own budget (BackpressureMaxBins):
// the backlog is the drain's, and that pass yields to it whatever the workers.
func (c Config) forWorkers(workers int) Config {
	if workers <= 1 {
		return c
	}
	c.MaxFilesPerPass = timesSat(c.MaxFilesPerPass, workers)
	c.MaxBinsPerPass = timesSat(c.MaxBinsPerPass, workers)
	return c
}

// timesSat is n x k for k >= 1, at most math.MaxInt (n <= 0 stays n: sane clamps it).
func timesSat(n, k int) int {
	if n > 0 && n > math.MaxInt/k {
		return math.MaxInt
	}
	return n * k
}

// Validate reports every setting that the planner cannot honour, so bad
// configuration fails at start instead of producing odd passes.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.ReclusterInterval < 0 {
		bad("recluster interval %v: must be >= 0 (0 disables rewrites)", c.ReclusterInterval)
	}
	if c.L1MinBytes <= 0 || c.L2MinBytes <= c.L1MinBytes {
		bad("level boundaries L1 >= %d, L2 >= %d bytes: need 0 < L1 < L2", c.L1MinBytes, c.L2MinBytes)
	}
	for l, t := range c.TargetBytes {
		if t <= 0 {
			bad("target bytes for %v = %d: must be > 0", level.Level(l), t)
		}
	}
	if c.EligibleFiles < 2 {
		bad("eligible files %d: must be >= 2 (one file has nothing to merge with)", c.EligibleFiles)
	}
	for l, iv := range c.CheckInterval {
		if iv <= 0 {
			bad("check interval for %v = %v: must be > 0", level.Level(l), iv)
		}
	}
	if c.MaxOverlapDepth < 1 {
		bad("max overlap depth %d: must be >= 1", c.MaxOverlapDepth)
	}
	if c.LevelMaxGen < 0 {
		bad("level max generation %d: must be >= 0 (0 = no cap)", c.LevelMaxGen)
	}
	if c.MaxFanIn < 2 {
		bad("max fan-in %d: must be >= 2", c.MaxFanIn)
	}
	if c.MaxFilesPerPass < c.MaxFanIn {
		bad("max files per pass %d: must be >= max fan-in %d, or a full bin never fits", c.MaxFilesPerPass, c.MaxFanIn)
	}
	if c.MaxBinsPerPass < 1 {
		bad("max bins per pass %d: must be >= 1", c.MaxBinsPerPass)
	}
	if c.MaxSealedForRecluster < 0 {
		bad("max sealed for recluster %d: must be >= 0", c.MaxSealedForRecluster)
	}
	if c.BackpressureCompactEvery < 0 {
		bad("backpressure compact every %d: must be >= 0 (0 disables)", c.BackpressureCompactEvery)
	}
	if !(c.AbsorbMaxReencode >= 0 && c.AbsorbMaxReencode <= 1) { // NaN too
		bad("absorb max re-encode %v: must be in [0, 1] (0 plans no absorb bins)", c.AbsorbMaxReencode)
	}
	if c.BackpressureMaxBins < 1 {
		bad("backpressure max bins %d: must be >= 1", c.BackpressureMaxBins)
	}
	return errors.Join(errs...)
}
