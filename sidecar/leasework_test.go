package sidecar

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/membudget"
)

// TestBinBudgetAsksForAMergeTheBudgetHolds: a worker whose --merge-memory-bytes is above its whole
// memory budget still asks for one merge (membudget cuts the merge's reservation to the limit),
// rather than for none, which would leave every bin of the cluster's tables on offer for good; a
// budget held by other loops asks for what is left.
func TestBinBudgetAsksForAMergeTheBudgetHolds(t *testing.T) {
	p := NewProcess(config.Config{MemoryBudgetBytes: 256 << 20, MergeMemoryBytes: 1 << 30}, zap.NewNop(), "test")
	p.memory = p.newMemoryBudget()
	if w := p.binBudget(); w.Slots() != 1 || w.MergeBytes != 256<<20 {
		t.Fatalf("ask %+v: %d merges, want 1 of the whole 256 MiB budget", w, w.Slots())
	}
	l, err := p.memory.Acquire(context.Background(), membudget.LoopDrain, 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if w := p.binBudget(); w.Slots() != 0 || w.FreeBytes != 192<<20 {
		t.Fatalf("ask %+v with 64 MiB held: want 192 MiB free, no whole merge", w)
	}
	p = NewProcess(config.Config{MemoryBudgetBytes: 256 << 20, MergeMemoryBytes: 64 << 20}, zap.NewNop(), "test")
	p.memory = p.newMemoryBudget()
	if w := p.binBudget(); w.Slots() != 4 {
		t.Fatalf("ask %+v: %d merges, want 4 of 64 MiB", w, w.Slots())
	}
}
