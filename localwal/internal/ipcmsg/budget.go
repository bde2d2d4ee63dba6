package ipcmsg

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Budget is an allocator that refuses to allocate more than its limit in
// total while a segment is decoded: it panics, and Arrow's reader turns the
// panic into an error. A compressed buffer declares its own uncompressed
// length, so without it a few corrupt bytes could demand terabytes.
type Budget struct {
	mem      memory.Allocator
	limit    int64
	used     atomic.Int64
	disarmed atomic.Bool
	tripped  atomic.Bool // the limit was hit
}

// NewBudget allocates from mem, at most limit bytes in total.
func NewBudget(mem memory.Allocator, limit int64) *Budget {
	return &Budget{mem: mem, limit: limit}
}

type budgetExceeded struct{ want, used, limit int64 }

func (b budgetExceeded) Error() string {
	return fmt.Sprintf("decoding would allocate %d more bytes after %d (budget %d)", b.want, b.used, b.limit)
}

func (b *Budget) charge(n int) {
	if b.disarmed.Load() || n <= 0 {
		return
	}
	if used := b.used.Add(int64(n)); used > b.limit {
		b.tripped.Store(true)
		panic(budgetExceeded{int64(n), used - int64(n), b.limit})
	}
}

// Disarm stops counting once the decode is over: what is later allocated
// through the returned records must never panic.
func (b *Budget) Disarm() { b.disarmed.Store(true) }

// Tripped reports whether an allocation was refused.
func (b *Budget) Tripped() bool { return b.tripped.Load() }

func (b *Budget) Allocate(size int) []byte {
	b.charge(size)
	return b.mem.Allocate(size)
}

func (b *Budget) Reallocate(size int, buf []byte) []byte {
	b.charge(size - len(buf))
	return b.mem.Reallocate(size, buf)
}

func (b *Budget) Free(buf []byte) { b.mem.Free(buf) }
