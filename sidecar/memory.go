package sidecar

import (
	"os"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/membudget"
)

// DefaultGoMemLimitRatio is the share of the container memory limit the process sets as its Go
// soft memory limit when GOMEMLIMIT is not set: the chart's goMemLimitRatio, for a sidecar run
// without the chart. The tenth left is what the runtime's soft limit does not cover (the binary's
// mapped pages, stacks, fragmentation).
const DefaultGoMemLimitRatio = 0.9

// setDefaultGoMemLimit sets the Go soft memory limit from the container limit when GOMEMLIMIT is
// not set, so that the garbage collector works harder as the heap nears the limit instead of
// letting it double past it. It returns the limit set (0: none).
func setDefaultGoMemLimit(log *zap.Logger) int64 {
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

// defaultGoMemLimit is the rule behind setDefaultGoMemLimit: DefaultGoMemLimitRatio of the
// container limit cgroup (0: none), or 0 (leave the runtime alone) when GOMEMLIMIT is set to a
// value, "off" included: that is how an operator opts out, and the runtime has already applied it.
// GOMEMLIMIT set to the empty string is unset, as the runtime reads it.
func defaultGoMemLimit(lookup func(string) (string, bool), cgroup int64) int64 {
	if v, _ := lookup("GOMEMLIMIT"); v != "" || cgroup <= 0 {
		return 0
	}
	return int64(float64(cgroup) * DefaultGoMemLimitRatio)
}

// DefaultGCPercent is the garbage collector's target the process sets when GOGC is not set: the
// heap may grow to 1.5 times what is live before a collection, not twice (the runtime's 100).
// The drain's live heap is mostly byte buffers, which a collection does not scan, so collecting
// twice as often costs some CPU (BenchmarkDrain: the drain's MB per CPU-second 4 % lower, its
// encode floor's 7 % lower; `compactor --once`: about 6 % more CPU), while the drain's peak at
// 32 MiB batches fell from 165 to 140 MiB (docs/benchmarks.md, "Drain peak and idle footprint").
// Beside the build before the memory work, twice the collections make the drain 1-5 % dearer per
// byte where GOGC 100 makes it 9-14 % cheaper (same doc, "Drain throughput against ...").
const DefaultGCPercent = 50

// setDefaultGCPercent sets DefaultGCPercent unless GOGC is set to a value ("off" included: the
// runtime has applied it). GOGC set to the empty string is unset, as the runtime reads it.
func setDefaultGCPercent(log *zap.Logger) {
	if p, ok := defaultGCPercent(os.LookupEnv); ok {
		debug.SetGCPercent(p)
		log.Info("GOGC not set: garbage collector target set for a sidecar", zap.Int("gogc", p))
	}
}

// defaultGCPercent is the rule behind setDefaultGCPercent.
func defaultGCPercent(lookup func(string) (string, bool)) (int, bool) {
	if v, _ := lookup("GOGC"); v != "" {
		return 0, false
	}
	return DefaultGCPercent, true
}

// newMemoryBudget is the process memory budget (SIGLAKE_MEMORY_BUDGET_BYTES, or derived from
// GOMEMLIMIT or the container limit), published in /debug/status and as metrics.
func (p *Process) newMemoryBudget() *membudget.Budget {
	limit := p.Cfg.MemoryBudgetBytes
	if limit <= 0 {
		limit = membudget.LimitFor(merge.MemoryLimit())
	}
	return membudget.New(limit, membudget.Options{Metrics: p.Metrics.Memory, OnChange: func(s membudget.Snapshot) {
		p.Status.Update(func(r *StatusReport) { r.Memory = &s })
	}})
}

// publishMemory puts the budget's current snapshot in the status. The snapshot is taken before
// the status lock: the budget calls OnChange, which takes the status lock, with its own lock held,
// so taking the budget's lock inside Status.Update would invert that order and can deadlock.
func (p *Process) publishMemory() {
	s := p.memory.Snapshot()
	p.Status.Update(func(r *StatusReport) { r.Memory = &s })
}

// Memory is the process memory budget once Run started (nil before): a loop wired outside this
// package (search) takes its share under its name, membudget.LoopSearch for search.
func (p *Process) Memory() *membudget.Budget { return p.memory }

// returnStartupGarbage hands the pages freed since the process started back to the OS at once.
// Package initialisation alone allocates about 36 MB that is garbage right after (iceberg-go
// parses substrait's function catalogue, 32 MB, at init), while an idle process keeps about 5 MB
// live; the runtime's background scavenger returns such pages only slowly, so an idle sidecar
// would sit at several times its live heap for minutes. The pages of the binary that start-up
// alone ran are unmapped too (releaseBinaryPages); how much, and from how many mappings, is logged
// at debug level.
func returnStartupGarbage(log *zap.Logger) {
	debug.FreeOSMemory()
	ranges := releaseBinaryPages()
	var released int64
	for _, r := range ranges {
		released += r.rss
	}
	log.Debug("start-up pages of the binary unmapped",
		zap.Int("mappings", len(ranges)), zap.Int64("released_bytes", released))
}
