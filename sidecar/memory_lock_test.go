package sidecar

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/membudget"
)

// TestMemoryStatusNoLockInversion: loops acquiring and releasing shares (the budget's lock, then
// the status lock through OnChange) while the status is refreshed from the budget must not
// deadlock.
func TestMemoryStatusNoLockInversion(t *testing.T) {
	p := NewProcess(config.Config{MemoryBudgetBytes: 1 << 20}, zap.NewNop(), "test")
	p.memory = p.newMemoryBudget()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i := 0; i < 4; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < 2000; j++ {
					l, err := p.memory.Acquire(context.Background(), membudget.LoopDrain, 1<<10)
					if err != nil {
						t.Error(err)
						return
					}
					l.Release()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 2000; j++ {
				p.publishMemory()
			}
		}()
		wg.Wait()
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("deadlock: budget updates and status refreshes did not finish")
	}
}
