// Package gomem sets the Go runtime's memory behaviour for a sidecar when the operator has not:
// the soft memory limit from the container's limit (GOMEMLIMIT unset), a collector target tuned
// to the drain's batches (GOGC unset, through sidecar/gctune), and, once started, the pages that
// start-up alone used handed back to the OS. The process calls each once, in that order, at start.
package gomem

import (
	"os"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/gctune"
)

// DefaultGoMemLimitRatio is the share of the container memory limit the process sets as its Go
// soft memory limit when GOMEMLIMIT is not set: the chart's goMemLimitRatio, for a sidecar run
// without the chart. The tenth left is what the runtime's soft limit does not cover (the binary's
// mapped pages, stacks, fragmentation).
const DefaultGoMemLimitRatio = 0.9

// SetDefaultGoMemLimit sets the Go soft memory limit from the container limit when GOMEMLIMIT is
// not set, so that the garbage collector works harder as the heap nears the limit instead of
// letting it double past it. It returns the limit set (0: none).
func SetDefaultGoMemLimit(log *zap.Logger) int64 {
	c := merge.CgroupMemoryLimit()
	limit := defaultGoMemLimit(os.LookupEnv, c)
	if limit <= 0 {
		return 0
	}
	debug.SetMemoryLimit(limit)
	log.Info("GOMEMLIMIT not set: Go soft memory limit set from the container limit",
		zap.Int64("container_limit_bytes", c), zap.Int64("gomemlimit_bytes", limit))
	return limit
}

// defaultGoMemLimit is the rule behind SetDefaultGoMemLimit: DefaultGoMemLimitRatio of the
// container limit cgroup (0: none), or 0 (leave the runtime alone) when GOMEMLIMIT is set to a
// value, "off" included: that is how an operator opts out, and the runtime has already applied it.
// GOMEMLIMIT set to the empty string is unset, as the runtime reads it.
func defaultGoMemLimit(lookup func(string) (string, bool), cgroup int64) int64 {
	if v, _ := lookup("GOMEMLIMIT"); v != "" || cgroup <= 0 {
		return 0
	}
	return int64(float64(cgroup) * DefaultGoMemLimitRatio)
}

// DefaultGCPercent is the garbage collector's target at a large live heap when GOGC is not set:
// the heap may grow to 1.5 times what is live before a collection, not twice (the runtime's 100).
// It bounds the drain's peak (docs/benchmarks.md, "Drain peak and idle footprint", and the
// section after it).
const DefaultGCPercent = 50

// minGCHeadroom is the collector's headroom where no drain batch sets it: a process that does not
// drain (--role maintenance), or batches of one segment each (--commit-batch-target-mb 0).
const minGCHeadroom = 8 << 20

// GCTuning is what the process sets when GOGC is not set: after each collection the target is the
// headroom over what is live, between DefaultGCPercent and the runtime's 100. The headroom is one
// drain batch, the amount by which the drain's live heap swings as its segments come and go, and
// at most a quarter of the memory budget, so that a large batch setting does not leave merges at
// 100 under a small budget. A fixed 50 collects twice as often as 100 wherever less is live than
// at the peak, most of a drain. Tuned, the heap goal is live plus the headroom, between 1.5 and 2
// times live: 50's where more than two batches are live, at most half a batch above 50's below
// that. Measured against a fixed 50 and 100: docs/benchmarks.md, "Drain throughput against the
// build the memory issue started from".
func GCTuning(drains bool, batchBytes, budgetBytes int64) gctune.Config {
	headroom := int64(minGCHeadroom)
	if drains {
		headroom = max(batchBytes, minGCHeadroom)
	}
	if budgetBytes > 0 {
		headroom = max(min(headroom, budgetBytes/4), minGCHeadroom)
	}
	return gctune.Config{Headroom: headroom, MinPercent: DefaultGCPercent, MaxPercent: 100}
}

// SetDefaultGCPercent starts the collector tuning c unless GOGC is set to a value ("off" included:
// the runtime has applied it). GOGC set to the empty string is unset, as the runtime reads it.
func SetDefaultGCPercent(log *zap.Logger, c gctune.Config) {
	if defaultGCPercent(os.LookupEnv) {
		gctune.Start(c)
		log.Info("GOGC not set: garbage collector target tuned for a sidecar", zap.Int64("headroom_bytes", c.Headroom),
			zap.Int("min_gogc", c.MinPercent), zap.Int("max_gogc", c.MaxPercent))
	}
}

// defaultGCPercent is the rule behind SetDefaultGCPercent: whether GOGC is unset.
func defaultGCPercent(lookup func(string) (string, bool)) bool {
	v, _ := lookup("GOGC")
	return v == ""
}

// ReturnStartupGarbage hands the pages freed since the process started back to the OS at once.
// Package initialisation alone allocates about 36 MB that is garbage right after (iceberg-go
// parses substrait's function catalogue, 32 MB, at init), while an idle process keeps about 5 MB
// live; the runtime's background scavenger returns such pages only slowly, so an idle sidecar
// would sit at several times its live heap for minutes. The pages of the binary that start-up
// alone ran are unmapped too (releaseBinaryPages); how much, and from how many mappings, is logged
// at debug level.
func ReturnStartupGarbage(log *zap.Logger) {
	debug.FreeOSMemory()
	ranges := releaseBinaryPages()
	var released int64
	for _, r := range ranges {
		released += r.rss
	}
	log.Debug("start-up pages of the binary unmapped",
		zap.Int("mappings", len(ranges)), zap.Int64("released_bytes", released))
}
