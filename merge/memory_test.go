package merge

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// peakAllocator counts live bytes allocated through it and remembers the peak:
// every decoded Arrow buffer and every Parquet reader/writer buffer that goes
// through the allocator is counted.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func newPeakAllocator() *peakAllocator { return &peakAllocator{Allocator: memory.NewGoAllocator()} }

func (a *peakAllocator) add(n int) {
	c := a.cur.Add(int64(n))
	for {
		p := a.peak.Load()
		if c <= p || a.peak.CompareAndSwap(p, c) {
			return
		}
	}
}

func (a *peakAllocator) Allocate(n int) []byte { a.add(n); return a.Allocator.Allocate(n) }
func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.add(n - len(b))
	return a.Allocator.Reallocate(n, b)
}
func (a *peakAllocator) Free(b []byte) { a.add(-len(b)); a.Allocator.Free(b) }

// TestPageBoundedMemoryIndependentOfInputSize merges 4 inputs at two sizes, the
// larger 10x the smaller and over 10x the chunk budget, and checks that the
// page-bounded path's peak allocation does not grow with the input while the
// in-memory path's does.
func TestPageBoundedMemoryIndependentOfInputSize(t *testing.T) {
	sc := testArrowSchema(t)
	const chunkRows = 2048
	const nInputs = 4
	peaks := map[PathKind][2]int64{}
	var decoded [2]int64
	for si, perInput := range testSizes {
		dir := t.TempDir()
		r := rand.New(rand.NewPCG(7, uint64(si)))
		var inputs []Input
		for i := 0; i < nInputs; i++ {
			rec := randRecord(r, sc, perInput, 1_700_000_000_000_000+r.Int64N(1000), 3, true, true)
			decoded[si] += recordBytes(rec)
			inputs = append(inputs, writeInput(t, dir, sc, rec, 1, 8192))
			rec.Release()
		}
		for _, path := range []PathKind{PathPageBounded, PathInMemory, PathKWay} {
			alloc := newPeakAllocator()
			opts := RewriteOptions{ForcePath: path, ChunkRows: chunkRows,
				WriterOptions: WriterOptions{RowGroupRows: chunkRows, Allocator: alloc}}
			res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, string(path)), 2), opts)
			if err != nil {
				t.Fatal(err)
			}
			// arrow-go's DELTA_BINARY_PACKED encoder (our timestamp column)
			// never frees a small buffer per row group; anything beyond that
			// is a leak of ours.
			var rgs int64
			for _, o := range res.Outputs {
				rgs += int64(o.Meta.NumRowGroups())
			}
			if left := alloc.cur.Load(); left > 512*rgs {
				t.Errorf("%s: %d bytes still allocated after the rewrite of %d row groups (leak)", path, left, rgs)
			}
			p := peaks[path]
			p[si] = alloc.peak.Load()
			peaks[path] = p
		}
	}
	chunkBytes := decoded[1] / int64(nInputs*testSizes[1]) * chunkRows
	t.Logf("decoded input: %d and %d bytes; chunk budget %d rows ~ %d bytes", decoded[0], decoded[1], chunkRows, chunkBytes)
	for path, p := range peaks {
		t.Logf("%s: peak allocated %v bytes", path, p)
	}
	pb := peaks[PathPageBounded]
	if decoded[0] < 10*chunkBytes {
		t.Fatalf("input (%d bytes) is not 10x the chunk budget", decoded[0])
	}
	// Half of the smaller peak as slack: which batches happen to be in flight
	// in the decode and encode goroutines at the peak moves it by up to a
	// third between runs; a peak that followed the input would grow 10x.
	if pb[1] > pb[0]+pb[0]/2 {
		t.Errorf("page-bounded peak grew with the input: %d -> %d bytes", pb[0], pb[1])
	}
	// The constant: per-input batches and read buffers, the writer's row group
	// (RowGroupRows = chunk) and page buffers. Bounded well under the input.
	if limit := 24*chunkBytes + 8<<20; pb[1] > limit {
		t.Errorf("page-bounded peak %d exceeds chunk-derived bound %d", pb[1], limit)
	}
	if im := peaks[PathInMemory]; im[1] < 5*im[0] {
		t.Errorf("in-memory peak did not grow with input (%d -> %d): the measurement is not seeing decoded data", im[0], im[1])
	}
}

// testSizes: the smaller input already fills whole row groups and pages (the
// per-input constant: page and dictionary buffers); the larger is 10x it.
var testSizes = []int{8_192, 81_920}
