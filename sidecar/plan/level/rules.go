package level

import (
	"fmt"
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

// Rules are the level rules the picker applies: what level a file is, when a
// level or a partition's overlap calls for a rewrite, and how large a bin may
// be. Every field says its default and why. The planner's Config embeds them
// beside the pass's cadences and budgets (plan.Config); the picker expects
// them as the planner clamps them (Validate's bounds).
type Rules struct {
	// Leveled selects leveled compaction. false selects the legacy flat
	// whole-partition pass (SIGLAKE_COMPACTOR_LEVELED=0/off/false).
	// Default true: the legacy pass's work grows with the partition.
	Leveled bool

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
}

// DefaultRules returns the documented defaults.
func DefaultRules() Rules {
	return Rules{
		Leveled:           true,
		L1MinBytes:        16 * mib,
		L2MinBytes:        256 * mib,
		TargetBytes:       [NumLevels]int64{64 * mib, 512 * mib, 512 * mib},
		EligibleFiles:     8,
		MaxOverlapDepth:   12,
		LevelMaxGen:       8,
		MaxFanIn:          32,
		LateStream:        true,
		AbsorbMaxReencode: 0.5,
	}
}

// LevelOf returns the level of a file of the given size.
func (r Rules) LevelOf(sizeBytes int64) Level {
	switch {
	case sizeBytes >= r.L2MinBytes:
		return L2
	case sizeBytes >= r.L1MinBytes:
		return L1
	default:
		return L0
	}
}

// LevelCapped reports whether a file of this generation has left level
// selection under the generation cap.
func (r Rules) LevelCapped(generation int) bool {
	return r.LevelMaxGen > 0 && generation >= r.LevelMaxGen
}
