package sidecar

import (
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/membudget"
)

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
