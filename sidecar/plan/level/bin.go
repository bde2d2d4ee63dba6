package level

import "fmt"

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
	// KindDeleteTask rewrites one file without the rows of deletion requests (plan.PlanDeletes),
	// at generation 0, like Pebble's delete-only compactions: chosen by what it must remove, not
	// by size or overlap.
	KindDeleteTask
	// KindRetention rewrites one file without its rows past retention (plan.PlanRetention): a
	// file that straddles a cutoff, or whose older rows a rule covers in part.
	KindRetention
	// KindFold folds the rows of a rollup table's files (plan.PlanFold): many small unfolded
	// files of a partition, or files due for a coarser tier.
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
// stay in the late stream. With Rules.LateStream the leveled planner never
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
