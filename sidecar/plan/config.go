package plan

import (
	"errors"
	"fmt"
	"time"
)

// Level is a byte-size class of data files. The level of a file is derived
// from its size in the manifest every time it is needed; it is never stored.
type Level int

const (
	// L0 holds the small files the drain writes: many of them, often
	// overlapping, each too small to read efficiently from an object store.
	L0 Level = iota
	// L1 holds the outputs of L0 rewrites.
	L1
	// L2 is terminal: its files are never level-rewritten, only
	// overlap-driven rewrites take them.
	L2
)

// NumLevels is the number of levels; L2 is the last.
const NumLevels = 3

func (l Level) String() string { return fmt.Sprintf("L%d", int(l)) }

const (
	mib = int64(1) << 20
)

// Config holds the planner's tunables. Every field says its default and why.
// The zero value is not useful; start from DefaultConfig.
type Config struct {
	// Leveled selects leveled compaction. false selects the legacy flat
	// whole-partition pass (SIGLAKE_COMPACTOR_LEVELED=0/off/false).
	// Default true: the legacy pass's work grows with the partition.
	Leveled bool

	// ReclusterInterval is SIGLAKE_RECLUSTER_INTERVAL_SECS, the maintenance
	// tick. Zero disables file rewrites (the caller keeps running other
	// maintenance). The leveled planner paces itself by CheckInterval; the
	// legacy pass runs at most once per ReclusterInterval. Default 10 s, the
	// L0 check interval, so a tick never misses a due check.
	ReclusterInterval time.Duration

	// L1MinBytes is the smallest L1 file: files below it are L0. Default
	// 16 MiB: below that, per-request latency of an object store dominates a
	// file's read time, so such files are worth merging however young.
	L1MinBytes int64
	// L2MinBytes is the smallest L2 (terminal) file. Default 256 MiB: past
	// that size another merge buys little read speed for its write cost, and
	// it is the order of the usual Iceberg target file size.
	L2MinBytes int64

	// TargetBytes is the output file size a level bin aims for, per source
	// level: a level bin is packed until its inputs reach this, and the
	// rewrite splits its output at this size. Defaults: L0 64 MiB (lands in
	// L1 with room to grow), L1 512 MiB (lands in L2), L2 512 MiB (used by
	// overlap rewrites of terminal files).
	TargetBytes [NumLevels]int64

	// EligibleFiles is the count of rewrite-eligible files at which a
	// nonterminal level of a partition becomes eligible. Default 8 (spec).
	EligibleFiles int

	// CheckInterval is how often each level is checked. Defaults (spec):
	// L0 10 s, L1 60 s, L2 3,600 s. The depth trigger runs with the L0
	// check; the L2 check repairs overlap among terminal files.
	CheckInterval [NumLevels]time.Duration

	// MaxOverlapDepth is SIGLAKE_COMPACTOR_MAX_OVERLAP_DEPTH: when a
	// partition's overlap depth exceeds it, its deepest cluster is rewritten
	// in time-adjacent bins. Default 12 (spec).
	MaxOverlapDepth int

	// LevelMaxGen is SIGLAKE_COMPACTOR_LEVEL_MAX_GEN: a file whose generation
	// is at least this leaves level selection (overlap rewrites still take
	// it). 0 means no cap. Default 8: a slow table's L0 file is re-merged
	// each time eight more small files arrive, so without a cap its write
	// amplification grows with the time it takes to reach L1MinBytes, while
	// busier tables' files reach L2 before the cap binds (docs/compaction.md,
	// "Choosing the generation cap").
	LevelMaxGen int

	// MaxFanIn is the largest number of input files in one bin, whatever the
	// kind. Default 32: it bounds open streams and per-file read buffers of
	// a streaming merge.
	MaxFanIn int

	// MaxFilesPerPass and MaxBinsPerPass are the pass's budgets, shared by
	// every level and trigger considered in it. Defaults 256 files and 4
	// bins: a pass finishes in minutes even at the fan-in limit, so the loop
	// sees fresh file sets often and the drain keeps its share of the pod.
	MaxFilesPerPass int
	MaxBinsPerPass  int

	// MaxSealedForRecluster is SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER: a
	// sealed-WAL backlog above it gives the drain priority. Default 256.
	MaxSealedForRecluster int
	// BackpressureCompactEvery is SIGLAKE_COMPACTOR_BACKPRESSURE_COMPACT_EVERY:
	// every Nth backlogged cycle runs a restricted L0 pass; 0 disables it.
	// Default 4 (spec): file counts stay bounded while the drain catches up.
	BackpressureCompactEvery int
	// LateStream plans late files (File.Late) apart from on-time ones, each
	// stream with the same rules (docs/compaction.md, "Late rows"). The
	// process sets it when SIGLAKE_COMPACTOR_SPLIT_SPARSE is above 0, the
	// setting that makes the writers name late files; false plans every file
	// in one stream, so late files written before are merged into on-time
	// ones again. Default true, as the option's default 0.05.
	LateStream bool

	// AbsorbMaxReencode lets the L2 check plan absorb bins (KindAbsorb): a
	// terminal file taking in the small files beside it, when at most this
	// share of the bin's bytes is estimated to be re-encoded (the rest the
	// splice copies). 0 plans none, as before the splice; the process sets 0
	// when the splice is off (SIGLAKE_MERGE_SPLICE_MIN_ROWS=0) or its minimum
	// is above RowGroupRows, so no row group can be copied. Default 0.5:
	// copying costs about 1/24 of a re-encode per byte (docs/benchmarks.md,
	// "Splice"), so such a bin costs at most about half of re-encoding it;
	// 0.35 and 0.75 did no better (docs/compaction.md, "Absorb bins").
	AbsorbMaxReencode float64

	// BackpressureMaxBins is the restricted pass's own bin budget (its bin
	// concurrency). Default 1: one bin at a time leaves the drain its CPU.
	BackpressureMaxBins int
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Leveled:                  true,
		ReclusterInterval:        10 * time.Second,
		L1MinBytes:               16 * mib,
		L2MinBytes:               256 * mib,
		TargetBytes:              [NumLevels]int64{64 * mib, 512 * mib, 512 * mib},
		EligibleFiles:            8,
		CheckInterval:            [NumLevels]time.Duration{10 * time.Second, 60 * time.Second, 3600 * time.Second},
		MaxOverlapDepth:          12,
		LevelMaxGen:              8,
		MaxFanIn:                 32,
		MaxFilesPerPass:          256,
		MaxBinsPerPass:           4,
		MaxSealedForRecluster:    256,
		BackpressureCompactEvery: 4,
		BackpressureMaxBins:      1,
		LateStream:               true,
		AbsorbMaxReencode:        0.5,
	}
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
			bad("target bytes for %v = %d: must be > 0", Level(l), t)
		}
	}
	if c.EligibleFiles < 2 {
		bad("eligible files %d: must be >= 2 (one file has nothing to merge with)", c.EligibleFiles)
	}
	for l, iv := range c.CheckInterval {
		if iv <= 0 {
			bad("check interval for %v = %v: must be > 0", Level(l), iv)
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

// LevelOf returns the level of a file of the given size.
func (c Config) LevelOf(sizeBytes int64) Level {
	switch {
	case sizeBytes >= c.L2MinBytes:
		return L2
	case sizeBytes >= c.L1MinBytes:
		return L1
	default:
		return L0
	}
}

// LevelCapped reports whether a file of this generation has left level
// selection under the generation cap.
func (c Config) LevelCapped(generation int) bool {
	return c.LevelMaxGen > 0 && generation >= c.LevelMaxGen
}
