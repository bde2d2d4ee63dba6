package walgen

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestTimestampsNotInTheFuture: with the default start, no generated row is later than the clock
// when it is written (the demo and `siglake walgen` used to run minutes ahead at the default
// step), as fast as possible or at a rate; an explicit start is kept as given.
func TestTimestampsNotInTheFuture(t *testing.T) {
	for _, c := range []struct {
		name string
		o    RunOptions
	}{
		{"as fast as possible", RunOptions{Rows: 40000, Tables: []string{"events", "audit"}, BatchRows: 2000}},
		{"at a rate", RunOptions{Rows: 30000, Rate: 60000, Tables: []string{"events", "audit", "other"}, BatchRows: 1000}},
		{"unbounded", RunOptions{Rows: 0, BatchRows: 5000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := c.o
			o.WALDir, o.Stream, o.SegmentSize, o.RollAge = t.TempDir(), "test", 1<<20, time.Second
			o.Gen = Options{Seed: 1, LateFraction: 0.02, MaxLateness: time.Minute}
			timeout := time.Minute // a bounded run writes all its rows, however loaded the machine
			if o.Rows == 0 {
				timeout = 2 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			began := time.Now()
			var newest time.Time
			rows := 0
			_, err := Run(ctx, o, func(_ string, rec arrow.RecordBatch) {
				now := time.Now()
				ts := rec.Column(0).(*array.Timestamp)
				for i := 0; i < ts.Len(); i++ {
					at := time.UnixMicro(int64(ts.Value(i)))
					if at.After(now) {
						t.Fatalf("row %d at %v, %v after the clock", rows+i, at, at.Sub(now))
					}
					if at.After(newest) {
						newest = at
					}
				}
				rows += ts.Len()
			})
			if err != nil {
				t.Fatal(err)
			}
			if o.Rows > 0 && int64(rows) != o.Rows {
				t.Fatalf("wrote %d rows, want %d", rows, o.Rows)
			}
			if lag := began.Sub(newest); lag > time.Second && o.Rate == 0 {
				t.Errorf("the newest row is %v before the run began; want the rows to end at about now", lag)
			}
		})
	}

	// An explicit start is the caller's: kept even in the future.
	future := time.Now().Add(time.Hour).UTC()
	var first time.Time
	_, err := Run(context.Background(), RunOptions{WALDir: t.TempDir(), Stream: "test", Rows: 10, Start: future, SegmentSize: 1 << 20, RollAge: time.Second},
		func(_ string, rec arrow.RecordBatch) {
			first = time.UnixMicro(int64(rec.Column(0).(*array.Timestamp).Value(0)))
		})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Equal(future.Truncate(time.Microsecond)) {
		t.Fatalf("first row at %v, want the given start %v", first, future)
	}
}

// TestRollup: with Rollup set, every events batch's per-minute rollup is sealed beside it (the
// rollup's events add up to the events rows, nothing else), counted apart from the events rows.
func TestRollup(t *testing.T) {
	o := RunOptions{WALDir: t.TempDir(), Stream: "pod-1", Rows: 20000, BatchRows: 2000, SegmentSize: 1 << 20, RollAge: time.Hour,
		Step: 10 * time.Millisecond, Rollup: RollupTable, Gen: Options{Seed: 4}}
	res, err := Run(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows != 20000 || res.RollupRows == 0 {
		t.Fatalf("result %+v: want 20000 events rows and some rollup rows", res)
	}
	g := New(Options{Seed: 4})
	rec := g.Batch(memory.DefaultAllocator, time.Date(2026, 11, 2, 0, 0, 30, 0, time.UTC), 6000, 10*time.Millisecond)
	defer rec.Release()
	roll := Rollup(memory.DefaultAllocator, rec)
	defer roll.Release()
	var events int64
	ts := roll.Column(0).(*array.Timestamp)
	for i := 0; i < int(roll.NumRows()); i++ {
		events += roll.Column(3).(*array.Int64).Value(i)
		if i > 0 && ts.Value(i) < ts.Value(i-1) {
			t.Fatal("rollup rows not in time order")
		}
		if int64(ts.Value(i))%60e6 != 0 {
			t.Fatalf("rollup row %d at %d is not a minute start", i, ts.Value(i))
		}
	}
	if events != 6000 {
		t.Fatalf("the rollup counts %d events of 6000", events)
	}
}
