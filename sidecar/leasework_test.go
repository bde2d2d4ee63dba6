package sidecar

import (
	"context"
	"testing"
	"time"

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

// TestBinBudgetLeavesWhatOtherLoopsWaitFor: bytes a drain batch, the WAL buffer or the owner's own
// merges wait for are not free for bins (bins leased then would queue behind them, and the drain
// would wait on other members' merges); a leased merge waiting is the worker's own business
// (work.Worker counts its granted bins), so it does not shrink the ask.
func TestBinBudgetLeavesWhatOtherLoopsWaitFor(t *testing.T) {
	p := NewProcess(config.Config{MemoryBudgetBytes: 256 << 20, MergeMemoryBytes: 32 << 20}, zap.NewNop(), "test")
	p.memory = p.newMemoryBudget()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	held, err := p.memory.Acquire(ctx, membudget.LoopDrain, 160<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	// wait starts an acquisition of n bytes for loop that waits, and returns once it does.
	wait := func(loop string, n int64) {
		t.Helper()
		go func() {
			if l, err := p.memory.Acquire(ctx, loop, n); err == nil {
				l.Release()
			}
		}()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			for _, l := range p.memory.Snapshot().Loops {
				if l.Loop == loop && l.WaitingBytes >= n {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %s acquisition of %d bytes waiting: %+v", loop, n, p.memory.Snapshot())
			}
		}
	}
	if w := p.binBudget(); w.Slots() != 3 {
		t.Fatalf("ask %+v with 96 MiB free: want 3 merges of 32 MiB", w)
	}
	wait(membudget.LoopLeasedMerge, 128<<20) // more than is free: it waits
	if w := p.binBudget(); w.Slots() != 3 {
		t.Fatalf("ask %+v with a leased merge waiting: want 3 merges still (the worker counts its own)", w)
	}
	wait(membudget.LoopWALBuffer, 40<<20) // behind the merge, in order
	if w := p.binBudget(); w.Slots() != 1 || w.FreeBytes != 56<<20 {
		t.Fatalf("ask %+v with the WAL buffer waiting for 40 MiB: want 56 MiB free, 1 merge", w)
	}
	wait(membudget.LoopMerge, 32<<20) // the owner's own rewrite
	if w := p.binBudget(); w.Slots() != 0 || w.FreeBytes != 24<<20 {
		t.Fatalf("ask %+v with an owner's merge waiting for 32 MiB too: want 24 MiB free, no merge", w)
	}
	wait(membudget.LoopDrain, 64<<20)
	if w := p.binBudget(); w.FreeBytes != 0 {
		t.Fatalf("ask %+v with a drain batch waiting too: want nothing free", w)
	}
}
