package buffer

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestLakePlusBufferExactlyOnce is promise 12 under the race it is about: while ingest seals
// segments and the real drain commits them in batches (and retires or removes them), a reader
// loops "load the table, read it, then read the buffer with its marks", often pausing between
// the two so that commits land in between. Every answered round's lake rows plus buffer rows
// must be exactly the rows sealed up to the newest segment the answer served (fingerprints: a
// gap or a duplicate changes them); a round the buffer cannot answer must be a 409. Run with
// retention off (refusals are the rule when a commit lands in between), with a short retention
// swept concurrently, and with a long one (the committed segments are served from retention).
func TestLakePlusBufferExactlyOnce(t *testing.T) {
	for _, c := range []struct {
		name string
		keep time.Duration
	}{{"retention off", 0}, {"short retention, swept", 40 * time.Millisecond}, {"long retention", time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			// Every attempt checks exactness; more attempts only add interleavings, since on a
			// loaded machine one attempt may see too few of them.
			var st raceStats
			for attempt := 0; attempt < 5; attempt++ {
				r := raceLakeAndBuffer(t, c.keep)
				st.answered, st.raced, st.refused = st.answered+r.answered, st.raced+r.raced, st.refused+r.refused
				st.drained, st.draining, st.fromRetention = st.drained+r.drained, st.draining+r.draining, st.fromRetention+r.fromRetention
				exercised := st.answered >= 5 && (c.keep == 0 || st.raced > 0) && (c.keep != 0 || st.drained > 0) &&
					(c.keep != time.Minute || st.fromRetention > 0)
				if exercised || t.Failed() {
					break
				}
			}
			t.Logf("%d rounds answered (%d with commits between the lake read and the answer), %d refused (%d drained, %d draining), %d retained segments served",
				st.answered, st.raced, st.refused, st.drained, st.draining, st.fromRetention)
			// Without retention a commit between the two reads always refuses; with it, the
			// answer must still be exact.
			if st.answered < 5 || c.keep > 0 && st.raced == 0 {
				t.Fatalf("the race was not exercised: %+v", st)
			}
			switch {
			case c.keep == 0 && st.drained == 0:
				t.Fatalf("without retention a commit between the reads must be refused, and none was: %+v", st)
			case c.keep == time.Minute && st.fromRetention == 0:
				t.Fatalf("with retention the committed segments above an old snapshot come from retention, and none did: %+v", st)
			}
		})
	}
}

type raceStats struct {
	answered, raced, refused, drained, draining, fromRetention int
}

func raceLakeAndBuffer(t *testing.T, keep time.Duration) raceStats {
	h := newHarness(t, nil)
	ctx := context.Background()
	const nSegs, rows = 60, 40
	var ret *segments.Retention
	if keep > 0 {
		ret = &segments.Retention{Keep: keep, Now: time.Now}
		h.e.Drain.Retire = ret.Retire
	}

	var mu sync.Mutex
	sealed := map[uint64]rowsum.Sum{} // per seq
	var wg sync.WaitGroup
	writing, draining, stop := make(chan struct{}), make(chan struct{}), make(chan struct{})
	defer func() { close(stop); wg.Wait() }() // also when the reader fails
	wg.Add(1)
	go func() { // ingest: one segment every few milliseconds
		defer wg.Done()
		defer close(writing)
		var cur rowsum.Sum
		w, err := walwriter.New(h.e.WAL, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour,
			OnSeal: func(s walwriter.SealedSegment) {
				mu.Lock()
				sealed[s.Seq] = cur
				mu.Unlock()
			}})
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		g := walgen.New(walgen.Options{Seed: 99, LateFraction: 0.05, MaxLateness: time.Minute})
		for i := 0; i < nSegs; i++ {
			select {
			case <-stop:
				return
			default:
			}
			rec := g.Batch(memory.DefaultAllocator, t0.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
			cur = rowsum.Sum{}
			if err := cur.Add(rec, walgen.Columns...); err != nil {
				t.Error(err)
			}
			err := w.Append("events", rec)
			rec.Release()
			if err == nil {
				err = w.SealDue(time.Now().Add(2 * time.Hour))
			}
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(1+i%4) * time.Millisecond)
		}
	}()
	segSize := int64(0)
	wg.Add(1)
	go func() { // the drain: batches of about three segments, retired or removed after each commit
		defer wg.Done()
		defer close(draining)
		for done := false; ; {
			select {
			case <-stop:
				return
			case <-writing:
				done = true
			default:
			}
			if segSize == 0 {
				if segs, _ := localwal.Scan(h.e.WAL); len(segs) > 0 {
					segSize = segs[0].Size
					h.e.Drain.Cfg.CommitBatchTargetBytes = 3 * segSize
				} else {
					time.Sleep(time.Millisecond)
					continue
				}
			}
			res, err := h.e.Drain.Cycle(ctx, true)
			if err != nil {
				t.Error(err)
				return
			}
			if ret != nil && keep < time.Minute {
				_, _, _ = ret.Sweep([]string{h.e.WAL})
			}
			if done && res.Pending == 0 {
				return
			}
			time.Sleep(time.Duration(2+rand.IntN(8)) * time.Millisecond)
		}
	}()

	var st raceStats
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; ; round++ {
		select {
		case <-draining:
			return st
		default:
		}
		tbl, err := h.e.Lake.LoadTable(ctx, "events")
		tblMarks := reader.Marks{}
		var lakeSum rowsum.Sum
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable):
		case err != nil:
			t.Fatal(err)
		default:
			if tblMarks, err = reader.TableMarks(tbl); err != nil {
				t.Fatal(err)
			}
			if lakeSum, err = rowsum.Table(ctx, tbl, walgen.Columns...); err != nil {
				t.Fatal(err)
			}
		}
		if rng.IntN(3) > 0 {
			time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond) // let commits land between the reads
		}
		bufSum, ans, err := h.read(reader.Query{After: tblMarks}, walgen.Columns...)
		var ref *reader.RefusedError
		var se *reader.StatusError
		if errors.As(err, &se) && se.Code == 404 && tbl == nil {
			continue // nothing sealed yet
		}
		if errors.As(err, &ref) {
			st.refused++
			switch ref.Reason {
			case "drained":
				st.drained++
			case "draining":
				st.draining++
			default:
				t.Fatalf("refusal without a known reason: %+v", ref)
			}
			if ref.Marks.Get("pod-0").Less(tblMarks.Get("pod-0")) || ref.Marks.Get("pod-0") == tblMarks.Get("pod-0") {
				t.Fatalf("refused although the table's mark %v did not move past the reader's %v", ref.Marks, tblMarks)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		top := ans.Through.Get("pod-0")
		want := expected(t, &mu, sealed, top)
		got := lakeSum
		got.Merge(bufSum)
		if got != want {
			t.Fatalf("round %d: reader at %v, table at %v, answer through %v: lake %d rows + buffer %d rows = %+v, sealed up to there %+v",
				round, tblMarks, ans.Marks, top, lakeSum.Rows, bufSum.Rows, got, want)
		}
		st.answered++
		if tblMarks.Get("pod-0").Less(ans.Marks.Get("pod-0")) {
			st.raced++
		}
		for _, name := range ans.Segments {
			_, inc, seq, _ := localwal.ParseSegmentName(name)
			if !ans.Marks.Get("pod-0").Less(marks.Mark{Incarnation: inc, Seq: seq}) {
				st.fromRetention++ // at or below the table's mark: committed, served from retention
			}
		}
	}
}

// expected is the fingerprint of every sealed segment up to top (sealed in seq order, so all of
// them exist once top does; the writer records a segment's rows as it seals it).
func expected(t *testing.T, mu *sync.Mutex, sealed map[uint64]rowsum.Sum, top marks.Mark) rowsum.Sum {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		var s rowsum.Sum
		complete := true
		for seq := uint64(1); seq <= top.Seq; seq++ {
			x, ok := sealed[seq]
			if !ok {
				complete = false
				break
			}
			s.Merge(x)
		}
		mu.Unlock()
		if complete {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("segments up to %v were served but not all recorded as sealed", top)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestReadConsistent drives the reader's side of promise 12, ReadConsistent, the way `siglake
// tail` does: the rows it hands out in its last attempt are exactly the sealed rows.
func TestReadConsistent(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	recs := gen(t, 21, 6, 200, t0)
	h.e.Seal("events", recs[:3]...)
	h.e.DrainAll()
	h.e.Seal("events", recs[3:]...)
	var lakeSum, bufSum rowsum.Sum
	load := func(ctx context.Context) (*table.Table, error) { return h.e.Lake.LoadTable(ctx, "events") }
	attempts := 0
	// The first attempt's buffer read sees a commit that removed segments: refused, and retried.
	through, err := reader.ReadConsistent(ctx, load, reader.Buffers{h.client}, "events", reader.Query{}, 3,
		func(attempt int, tbl *table.Table) error {
			attempts = attempt
			lakeSum = rowsum.Sum{}
			bufSum = rowsum.Sum{}
			s, err := rowsum.Table(ctx, tbl, walgen.Columns...)
			lakeSum = s
			if attempt == 1 {
				h.e.DrainAll() // committed and removed between this lake read and the buffer read
			}
			return err
		},
		func(_ int, rec arrow.RecordBatch) error { return bufSum.Add(rec, walgen.Columns...) })
	if err != nil {
		t.Fatal(err)
	}
	lakeSum.Merge(bufSum)
	if want := h.e.Sum("events"); attempts != 2 || lakeSum != want || bufSum.Rows != 0 {
		t.Fatalf("attempts %d, lake+buffer %+v, want %+v", attempts, lakeSum, want)
	}
	if through.Get("pod-0").Seq != 6 {
		t.Fatalf("through %v", through)
	}
}

// TestLakePlusBufferExactlyOncePastRetention is promise 12 for the rows the drain drops past
// retention: 1,000 rows 40 days old (a replayed WAL) beside a segment that straddles the 30-day
// cutoff and fresh rows. What a reader gets from the lake plus the buffer before the drain is
// exactly what the lake holds after it: the buffer leaves out the rows the drain drops, with the
// drain's own hook, whether the table exists or is still to be created.
func TestLakePlusBufferExactlyOncePastRetention(t *testing.T) {
	for _, c := range []struct {
		name   string
		exists bool
	}{{"table exists", true}, {"table not created yet", false}} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, nil)
			hook := retention.DrainFilter(30 * 24 * time.Hour)
			h.e.Drain.Cfg.PastRetention = hook
			h.srv.PastRetention = hook
			now := time.Now().UTC()
			g := walgen.New(walgen.Options{Seed: 12})
			batch := func(start time.Time, rows int, every time.Duration) arrow.RecordBatch {
				rec := g.Batch(memory.DefaultAllocator, start, rows, every)
				t.Cleanup(rec.Release)
				return rec
			}
			fresh := batch(now.Add(-time.Hour), 200, time.Second)
			old := batch(now.Add(-40*24*time.Hour), 1000, time.Second)
			straddling := batch(now.Add(-35*24*time.Hour), 100, 2*time.Hour) // 35 to 27 days old
			if c.exists {
				h.e.Seal("events", fresh)
				h.e.DrainAll()
			}
			marks, lakeSum := reader.Marks{}, rowsum.Sum{}
			if c.exists {
				var err error
				if marks, err = reader.TableMarks(h.table()); err != nil {
					t.Fatal(err)
				}
				lakeSum = h.e.Sum("events")
			} else {
				h.e.Seal("events", fresh)
			}
			h.e.Seal("events", old, straddling)
			bufSum, _, err := h.read(reader.Query{After: marks}, walgen.Columns...)
			if err != nil {
				t.Fatal(err)
			}
			h.e.DrainAll()
			after := h.e.Sum("events")
			if after.Rows >= 1300 {
				t.Fatalf("setup: the drain dropped no row past retention (%d rows in the table)", after.Rows)
			}
			got := lakeSum
			got.Merge(bufSum)
			if got != after {
				t.Fatalf("lake %d rows + buffer %d rows = %+v before the drain; the table holds %+v after it (%d rows)",
					lakeSum.Rows, bufSum.Rows, got, after, after.Rows)
			}
		})
	}
}
