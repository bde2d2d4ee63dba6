package drain

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/internal/membudgettest"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestBatchTakesItsShareOfTheBudget: each batch takes BatchMemory of its segments from the process
// budget before reading them and gives it back after; while another loop holds the budget, the
// batch waits, and a cycle whose context ends meanwhile commits nothing and leaves the segments.
func TestBatchTakesItsShareOfTheBudget(t *testing.T) {
	e := newEnv(t, nil)
	want := e.writeSegments("events", 3, 3000, 1, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	var asked []int64
	b := membudget.New(1<<30, membudget.Options{})
	e.drain.Reserve = func(ctx context.Context, n int64) (func(), error) {
		asked = append(asked, n)
		return b.For(membudget.LoopDrain).Reserve(ctx, n)
	}
	// Another loop holds the whole budget: the batch waits, then gives up with its context.
	other, err := b.Acquire(context.Background(), membudget.LoopMerge, b.Limit())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	res, err := e.drain.Cycle(ctx, true)
	if !errors.Is(err, context.DeadlineExceeded) || res.Committed != 0 || res.Pending != 3 {
		t.Fatalf("cycle without memory: %+v %v, want a context error, nothing committed, 3 pending", res, err)
	}
	other.Release()
	e.drain.backoffUntil = nil // the failed batch's backoff is not what this test is about

	asked = nil
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Pending != 0 {
		t.Fatalf("cycle: %+v %v", res, err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table rows %+v, want %+v", got, want)
	}
	if len(asked) == 0 || asked[0] <= 0 {
		t.Fatalf("shares asked: %v", asked)
	}
	if s := b.Snapshot(); s.HeldBytes != 0 {
		t.Fatalf("budget after the cycle: %+v", s)
	}
}

// peakAllocator counts live bytes allocated through it and remembers the peak.
type peakAllocator struct {
	memory.Allocator
	cur, peak atomic.Int64
}

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

// TestCompressedBatchShareCoversDecode: a zstd segment decodes into allocated buffers beside its
// file bytes, so its share must come from the decoded size, not twice the (compressed) file size.
// What the batch allocates (decode and write, through d.Mem) stays within the share it reserved.
func TestCompressedBatchShareCoversDecode(t *testing.T) {
	e := newEnv(t, nil)
	want := e.writeSegmentsAs(walwriter.CompressionZstd, "events", 2, 20000, 1, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	mem := &peakAllocator{Allocator: memory.NewGoAllocator()}
	e.drain.Mem = mem
	var share int64
	e.drain.Reserve = func(ctx context.Context, n int64) (func(), error) {
		share = max(share, n)
		return func() {}, nil
	}
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Pending != 0 {
		t.Fatalf("cycle: %+v %v", res, err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table rows %+v, want %+v", got, want)
	}
	if peak := mem.peak.Load(); share == 0 || peak > share {
		t.Fatalf("batch allocated up to %d bytes on a share of %d", peak, share)
	}
}

// TestBatchReleasesShareBeforeCommit: the write releases the batch's records, so the share goes
// back before the commit (whose retries can take seconds) rather than after it.
func TestBatchReleasesShareBeforeCommit(t *testing.T) {
	e := newEnv(t, nil)
	e.writeSegments("events", 2, 2000, 1, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	b := membudget.New(1<<30, membudget.Options{})
	e.drain.Reserve = func(ctx context.Context, n int64) (func(), error) {
		return b.For(membudget.LoopDrain).Reserve(ctx, n)
	}
	held := int64(-1)
	e.drain.beforeCommit = func() { held = b.Snapshot().HeldBytes }
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Pending != 0 {
		t.Fatalf("cycle: %+v %v", res, err)
	}
	if held != 0 {
		t.Fatalf("%d bytes of the budget held at the commit, want the share back after the write", held)
	}
}

// TestShutdownWhileWaitingIsNotAFailure: a cycle cancelled while its batch waits for memory
// returns the context's error and puts the table in no backoff (nor logs a failed batch).
func TestShutdownWhileWaitingIsNotAFailure(t *testing.T) {
	e := newEnv(t, nil)
	e.writeSegments("events", 1, 1000, 1, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	b := membudget.New(1<<20, membudget.Options{})
	other, err := b.Acquire(context.Background(), membudget.LoopMerge, b.Limit())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	e.drain.Reserve = func(ctx context.Context, n int64) (func(), error) {
		return b.For(membudget.LoopDrain).Reserve(ctx, n)
	}
	ctx := membudgettest.CancelWhenWaiting(t, b, membudget.LoopDrain)
	_, err = e.drain.Cycle(ctx, true)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cycle error %v, want the context's own error", err)
	}
	if len(e.drain.backoffUntil) != 0 {
		t.Fatalf("shutdown counted as a failed batch: backoff %v", e.drain.backoffUntil)
	}
}

// TestStopEndsTheWaitForMemory: SIGTERM (Drain.Stop) while a batch waits for memory ends the wait
// although the work context lives on (it outlives the stop by the shutdown timeout): memory freed
// right after the stop does not start the batch, whose segments stay for the next start, and the
// stop is no failed batch. Run with once returns nil (the compactor exits 0).
func TestStopEndsTheWaitForMemory(t *testing.T) {
	for _, once := range []bool{false, true} {
		t.Run(fmt.Sprintf("once=%v", once), func(t *testing.T) {
			e := newEnv(t, nil)
			e.writeSegments("events", 1, 1000, 1, time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
			b, stop := membudgettest.StopThenFree(t, 1<<20, membudget.LoopDrain)
			e.drain.Stop = stop
			e.drain.Cfg.CommitBatchMaxAge = time.Nanosecond // due at once without once's flush
			e.drain.Reserve = func(ctx context.Context, n int64) (func(), error) {
				return b.For(membudget.LoopDrain).Reserve(ctx, n)
			}
			var res CycleResult
			var cycleErr error
			err := e.drain.Run(stop, context.Background(), time.Hour, once, func(r CycleResult, err error) { res, cycleErr = r, err })
			if err != nil || cycleErr != nil {
				t.Fatalf("Run: %v, cycle: %v; want the stop to be no error", err, cycleErr)
			}
			if res.Committed != 0 || res.Pending != 1 {
				t.Fatalf("cycle %+v: the batch started after the stop, want it left with its segment", res)
			}
			if len(e.drain.backoffUntil) != 0 {
				t.Fatalf("stop counted as a failed batch: backoff %v", e.drain.backoffUntil)
			}
			if got := b.Snapshot().HeldBytes; got != 0 {
				t.Fatalf("%d bytes of the budget held after the cycle", got)
			}
		})
	}
}

// TestHighRatioSegmentQuarantinedAsOversize: a small zstd segment of one long repeated string
// decodes to far more than its file size; under a small memory budget the drain quarantines it as
// oversize from its metadata (the reservation is capped at the budget, so decoding it would
// allocate past the budget) and drains the good segments behind it.
func TestHighRatioSegmentQuarantinedAsOversize(t *testing.T) {
	e := newEnv(t, nil)
	start := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	const budget = 16 << 20
	w, err := walwriter.New(e.cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour, Compression: walwriter.CompressionZstd})
	if err != nil {
		t.Fatal(err)
	}
	rec := walgen.New(walgen.Options{Seed: 5}).Batch(memory.DefaultAllocator, start, 2000, time.Millisecond)
	bld := array.NewStringBuilder(memory.DefaultAllocator)
	long := strings.Repeat("x", 16<<10) // 2000 rows x 16 KiB: 32 MiB decoded
	for range rec.NumRows() {
		bld.Append(long)
	}
	arr := bld.NewArray()
	fields, cols := replaceColumn(rec, "service", arrow.BinaryTypes.String, arr)
	big := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
	if err := w.Append("events", big); err != nil {
		t.Fatal(err)
	}
	big.Release()
	arr.Release()
	rec.Release()
	if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := localwal.Scan(e.cfg.WALDir)
	if err != nil || len(segs) != 1 || segs[0].Size > 1<<20 {
		t.Fatalf("the high-ratio segment: %+v %v, want one file under 1 MiB", segs, err)
	}
	want := e.writeSegments("events", 3, 3000, 1, start.Add(time.Hour))

	e.drain.MemoryLimit = budget
	b := membudget.New(budget, membudget.Options{})
	e.drain.Reserve = b.For(membudget.LoopDrain).Reserve
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil || res.Pending != 0 || res.Segments != 3 {
		t.Fatalf("cycle: %+v %v, want the 3 good segments drained", res, err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table rows %+v, want the good segments' %+v", got, want)
	}
	if n := quarantinedByReason(t, e.drain.Metrics, localwal.ReasonOversize); n != 1 {
		t.Fatalf("%v segments quarantined as oversize, want 1", n)
	}
	raw, err := os.ReadFile(filepath.Join(e.cfg.WALDir, localwal.QuarantineDir, segs[0].Name+localwal.ReasonSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "SIGLAKE_MEMORY_BUDGET_BYTES") {
		t.Fatalf("reason file %s does not name the option", raw)
	}
}
