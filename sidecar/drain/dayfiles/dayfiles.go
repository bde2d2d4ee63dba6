// Package dayfiles is how a drain batch's rows become files: split by the UTC day of their
// timestamp (the table's day partition), and written as one sorted generation-0 file set per
// day, with one set of density cuts over the whole batch.
package dayfiles

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/writer"
)

// Days holds a batch's rows by UTC day: slices of the records added, which it retains.
type Days struct {
	ts    int // the timestamp column's index (microseconds)
	mem   memory.Allocator
	byDay map[int64][]arrow.RecordBatch
}

// New is an empty Days over records whose timestamp column is column ts.
func New(ts int, mem memory.Allocator) *Days {
	return &Days{ts: ts, mem: mem, byDay: map[int64][]arrow.RecordBatch{}}
}

// Release releases the rows not written or taken yet.
func (d *Days) Release() { releaseAll(d.byDay) }

// releaseAll releases and forgets every record of m.
func releaseAll[K comparable](m map[K][]arrow.RecordBatch) {
	for k, rs := range m {
		for _, r := range rs {
			r.Release()
		}
		delete(m, k)
	}
}

// Add appends rec's rows to their days; the caller keeps its own reference to rec.
func (d *Days) Add(ctx context.Context, rec arrow.RecordBatch) error {
	col := rec.Column(d.ts).(*array.Timestamp)
	day := func(i int) int64 { return floorDiv(int64(col.Value(i)), 86400_000_000) }
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	first, uniform := day(0), true
	for i := 1; i < n && uniform; i++ {
		uniform = day(i) == first
	}
	if uniform {
		rec.Retain()
		d.byDay[first] = append(d.byDay[first], rec)
		return nil
	}
	days := map[int64]bool{}
	for i := 0; i < n; i++ {
		days[day(i)] = true
	}
	for dd := range days {
		mb := array.NewBooleanBuilder(d.mem)
		for i := 0; i < n; i++ {
			mb.Append(day(i) == dd)
		}
		mask := mb.NewBooleanArray()
		mb.Release()
		part, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, d.mem), rec, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			return fmt.Errorf("split rows by day: %w", err)
		}
		d.byDay[dd] = append(d.byDay[dd], part)
	}
	return nil
}

// Write writes each day's rows as one sorted file set in dirOf(its date, 2006-01-02), through
// wfs, with opts (its Cuts and LatePath are set here). The writer owns and releases each day's
// records as it writes them. It returns the outputs written, also those written before an error,
// so the caller can remove them.
func (d *Days) Write(ctx context.Context, wfs icebergio.WriteFileIO, sc *arrow.Schema, dirOf func(date string) string, opts merge.WriterOptions) ([]merge.Output, error) {
	// One set of density cuts for the whole batch: the rows it brings to a day that has closed
	// are all late, and go to the late stream, as its late rows in the current day do.
	var all []arrow.RecordBatch
	for _, recs := range d.byDay {
		all = append(all, recs...)
	}
	cuts := density.BatchCuts(all, opts.TimestampColumn, opts.SplitSparse)
	opts.Cuts = &cuts
	byDate := d.Take()
	defer releaseAll(byDate)
	var outs []merge.Output
	for date, recs := range byDate {
		delete(byDate, date) // the writer owns recs now and releases each as it writes its rows
		dir := dirOf(date)
		if opts.SplitSparse > 0 {
			opts.LatePath = func(int) string { return dir + "/" + merge.LateFileName(0) }
		}
		o, err := writer.WriteSortedReleasing(ctx, wfs, func(int) string { return dir + "/" + merge.DataFileName(0) }, sc, recs, opts)
		if err != nil {
			return outs, fmt.Errorf("write %s: %w", dir, err)
		}
		outs = append(outs, o...)
	}
	return outs, nil
}

// Take hands the rows over by date (2006-01-02) and leaves Days empty: the caller owns them.
func (d *Days) Take() map[string][]arrow.RecordBatch {
	out := make(map[string][]arrow.RecordBatch, len(d.byDay))
	for day, recs := range d.byDay {
		out[time.Unix(day*86400, 0).UTC().Format("2006-01-02")] = recs
		delete(d.byDay, day)
	}
	return out
}

// MinTimestamp is the smallest value of rec's timestamp column ts (microseconds).
func MinTimestamp(rec arrow.RecordBatch, ts int) int64 {
	col := rec.Column(ts).(*array.Timestamp)
	m := int64(math.MaxInt64)
	for i := 0; i < col.Len(); i++ {
		if col.IsValid(i) {
			m = min(m, int64(col.Value(i)))
		}
	}
	return m
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
