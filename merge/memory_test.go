package merge

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// peakAllocator counts live bytes allocated through it and remembers the peak:
// every decoded Arrow buffer and every Parquet reader/writer buffer that goes
// through the allocator is counted.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

func newPeakAllocator() *peakAllocator { return &peakAllocator{Allocator: memory.NewGoAllocator()} }

func (a *peakAllocator) Add(n int) {
	c := a.cur.Add(int64(n))
	for {
		p := a.peak.Load()
		if c <= p || a.peak.CompareAndSwap(p, c) {
			return
		}
	}
}

func (a *peakAllocator) Allocate(n int) []byte { a.Add(n); return a.Allocator.Allocate(n) }
func (a *peakAllocator) Reallocate(n int, b []byte) []byte {
	a.Add(n - len(b))
	return a.Allocator.Reallocate(n, b)
}
func (a *peakAllocator) Free(b []byte) { a.Add(-len(b)); a.Allocator.Free(b) }

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
			// arrow-go's decoder: the allocator sees its buffers (the value path's are the Go
			// heap's: TestValuePathMemory).
			opts := RewriteOptions{ForcePath: path, ChunkRows: chunkRows, Decoder: DecoderArrow,
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
	// Some buffers legitimately differ between the two sizes by a few hundred KiB (dictionary
	// pages grow with the distinct values of a row group up to their limit; which chunk meets
	// which page boundary varies from run to run). Growth that follows the input (holding a
	// column, a row group or the plan's rows decoded) is 10x the input and fails this.
	if growth, inputGrowth := pb[1]-pb[0], decoded[1]-decoded[0]; growth > inputGrowth/20 {
		t.Errorf("page-bounded peak grew with the input: %d -> %d bytes (+%d, more than 1/20 of the input's +%d)",
			pb[0], pb[1], growth, inputGrowth)
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

// TestKWayMemoryIndependentOfRowGroupSize: the k-way path's peak follows its
// fan-in and batches, not the inputs' row-group size. The same rows are
// merged from inputs of small row groups and pages (siglake's own layout)
// and from inputs of one row group and one data page per column (as some
// writers make them). A big page costs its compressed bytes and a stream
// buffer of at most 1 MiB (arrow-go's page streaming decodes it in steps),
// never its decoded size: with page streaming off it does, which shows the
// check can fail.
func TestKWayMemoryIndependentOfRowGroupSize(t *testing.T) {
	sc := testArrowSchema(t)
	const fanIn, rows = 4, 150_000
	type layout struct{ rowGroup, page int64 }
	write := func(dir string, rec arrow.RecordBatch, l layout) Input {
		p := filepath.Join(dir, DataFileName(0))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true),
			parquet.WithDictionaryDefault(false), parquet.WithMaxRowGroupLength(l.rowGroup), parquet.WithDataPageSize(l.page))
		fw, err := pqarrow.NewFileWriter(rec.Schema(), f, props, pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := fw.Close(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return Input{Path: p, Size: st.Size(), Rows: rec.NumRows()}
	}
	var recs []arrow.RecordBatch
	r := rand.New(rand.NewPCG(21, 22))
	for i := 0; i < fanIn; i++ {
		recs = append(recs, randRecord(r, sc, rows, 1_700_000_000_000_000, 3, true, true))
	}
	defer releaseAll(recs)
	// peak merges the inputs written in layout l; pages is the compressed
	// and decoded size of their data pages when each column is one page.
	peak := func(l layout, streaming bool) (peak, compressed, decoded int64) {
		t.Helper()
		dir := t.TempDir()
		var inputs []Input
		for _, rec := range recs {
			in := write(dir, rec, l)
			inputs = append(inputs, in)
			pf, err := file.OpenParquetFile(in.Path, false)
			if err != nil {
				t.Fatal(err)
			}
			if l.rowGroup > rows && pf.NumRowGroups() != 1 {
				t.Fatalf("%d row groups, want 1", pf.NumRowGroups())
			}
			for c := 0; c < pf.MetaData().Schema.NumColumns(); c++ {
				cc, _ := pf.MetaData().RowGroup(0).ColumnChunk(c)
				compressed += cc.TotalCompressedSize()
				decoded += cc.TotalUncompressedSize()
			}
			_ = pf.Close()
		}
		pageStreaming = streaming
		defer func() { pageStreaming = true }()
		alloc := newPeakAllocator()
		res, err := Rewrite(context.Background(), localFS, inputs, sc, pathGen(filepath.Join(dir, "out"), 1),
			RewriteOptions{ForcePath: PathKWay, MemoryBudget: 64 << 20, Decoder: DecoderArrow, WriterOptions: WriterOptions{RowGroupRows: 16 << 10, Allocator: alloc}})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, o := range res.Outputs {
			n += o.Rows
		}
		if n != fanIn*rows {
			t.Fatalf("%d rows written, want %d", n, fanIn*rows)
		}
		return alloc.peak.Load(), compressed, decoded
	}
	small, _, _ := peak(layout{8192, 64 << 10}, true)
	onePage, compressed, decoded := peak(layout{1 << 30, 1 << 30}, true)
	unstreamed, _, _ := peak(layout{1 << 30, 1 << 30}, false)
	t.Logf("k-way peak allocated: %d bytes from small row groups and pages, %d from one row group and page per column (pages: %d bytes compressed, %d decoded), %d from those without page streaming",
		small, onePage, compressed, decoded, unstreamed)
	streams := int64(fanIn * len(sc.Fields()))
	limit := small + compressed + streams<<20 + 2<<20
	if onePage > limit {
		t.Errorf("k-way peak grew with the inputs' row-group and page size: %d bytes from small ones, %d from one per column (limit %d)", small, onePage, limit)
	}
	if unstreamed <= limit {
		t.Errorf("without page streaming the peak stays at %d bytes (limit %d): the check above cannot tell", unstreamed, limit)
	}
}

// TestValuePathMemory: the k-way merge on parquet-go values holds what its batches and pages
// need, not its inputs. Its buffers are the Go heap's, not an Arrow allocator's, so the peak
// live heap (as of each collection; the collector at 10%, so they come often) above the live
// heap before the merge is sampled. The same rows merged from 10x the input, and from inputs of one row group
// each (pages and dictionaries per chunk at their limits), may not grow it with the input;
// the in-memory path on the same inputs shows the sampling sees decoded data.
func TestValuePathMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("heap sampling")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	sc := testArrowSchema(t)
	const nInputs = 4
	type run struct {
		perInput, rowGroup int
	}
	peak := func(ins []Input, path PathKind, dir string) (int64, Decoder) {
		t.Helper()
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		runtime.GC()
		metrics.Read(live)
		base := int64(live[0].Value.Uint64())
		var top atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				metrics.Read(s)
				if h := int64(s[0].Value.Uint64()) - base; h > top.Load() {
					top.Store(h)
				}
			}
		}()
		res, err := Rewrite(context.Background(), localFS, ins, sc, pathGen(dir, 1),
			RewriteOptions{ForcePath: path, Decoder: DecoderParquetGo, ChunkRows: 2048, MemoryBudget: 256 << 20,
				WriterOptions: WriterOptions{RowGroupRows: 2048}})
		close(stop)
		<-done
		if err != nil {
			t.Fatal(err)
		}
		return top.Load(), res.Decoder
	}
	var decoded []int64
	var kway, inMemory []int64
	for i, c := range []run{{25_000, 8192}, {250_000, 8192}, {250_000, 1 << 30}} {
		dir := t.TempDir()
		r := rand.New(rand.NewPCG(11, 12)) // the same rows at 10x: the first 25,000 of each input are the small run's
		var ins []Input
		var bytes int64
		for j := 0; j < nInputs; j++ {
			rec := randRecord(r, sc, c.perInput, 1_700_000_000_000_000+r.Int64N(1000), 3, true, true)
			bytes += recordBytes(rec)
			ins = append(ins, writeInput(t, dir, sc, rec, 1, c.rowGroup))
			rec.Release()
		}
		decoded = append(decoded, bytes)
		p, dec := peak(ins, PathKWay, filepath.Join(dir, "kway"))
		if dec != DecoderParquetGo {
			t.Fatalf("run %d: the k-way bin was decoded by %s", i, dec)
		}
		kway = append(kway, p)
		if i < 2 {
			p, _ = peak(ins, PathInMemory, filepath.Join(dir, "mem"))
			inMemory = append(inMemory, p)
		}
	}
	t.Logf("decoded input %v bytes; value path peak heap %v; in-memory %v", decoded, kway, inMemory)
	inputGrowth := decoded[1] - decoded[0]
	if g := inMemory[1] - inMemory[0]; g < inputGrowth/2 {
		t.Fatalf("the in-memory path's heap grew by %d for %d more decoded input: the sampling does not see decoded data", g, inputGrowth)
	}
	// Measured at 0.04-0.22 (up to +12 MiB of live heap for +53 MiB decoded; arrow-go's decoder
	// beside the same encoder grew as much): the output file's search metadata and row-group
	// bookkeeping grow with the rows written. Holding the inputs, decoded or compressed (about
	// 15 MiB here), would pass a third.
	if g := kway[1] - kway[0]; g > inputGrowth/3 {
		t.Errorf("the value path's peak grew with its input: %d -> %d bytes (+%d for +%d decoded)", kway[0], kway[1], g, inputGrowth)
	}
	// One row group an input: per input and column a dictionary (256 KiB at most in siglake's
	// files) and a page compressed and decoded (1 MiB at most each) are held, not the row group
	// (its 15 MiB decoded per input here).
	base := max(kway[0], kway[1])
	if limit := base + nInputs*int64(sc.NumFields())*(2<<20+256<<10) + 8<<20; kway[2] > limit {
		t.Errorf("inputs of one row group: value path peak %d, above %d (many row groups' %d plus a dictionary and two pages per column and input)", kway[2], limit, base)
	}
}
