package drain

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
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/density"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/lake"
)

// conforms checks that every record of seg converts to the table schema sc. Some do not although the
// Iceberg types match (uint64 data for a long column, nulls in a required column); without this
// check such a segment would fail its batch on every retry and stall the table's drain.
func conforms(sc *arrow.Schema, seg *localwal.Segment, mem memory.Allocator) error {
	for _, rec := range seg.Records {
		c, err := input.Conform(rec, sc, mem)
		if err != nil {
			return fmt.Errorf("segment rows do not fit the table schema: %w", err)
		}
		c.Release()
	}
	return nil
}

// writeFiles conforms every record to the table schema, drops the rows already past the table's
// retention, splits the rest by day and writes one sorted generation-0 file per day. It returns
// the rows written and the rows dropped. It releases the segments' records as it goes (their
// headers stay): a batch's memory shrinks while its files are written.
func (d *Drain) writeFiles(ctx context.Context, c *batchCommit) ([]merge.Output, int64, int64, error) {
	t, segs := c.table, c.segs
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return nil, 0, 0, err
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("open FileIO of %s: %w", t.Location(), err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, 0, 0, fmt.Errorf("FileIO of %s cannot write", t.Location())
	}
	expired, cutoff := d.retentionFilter(t)
	byDay := map[int64][]arrow.RecordBatch{}
	defer func() {
		for _, rs := range byDay {
			for _, r := range rs {
				r.Release()
			}
		}
	}()
	var rows, past int64
	tsIdx := sc.FieldIndices(lake.TimestampColumn)[0]
	for _, l := range segs {
		for _, rec := range l.seg.Records {
			c, err := input.Conform(rec, sc, d.Mem)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("segment %s: %w", l.info.Path, err)
			}
			if expired != nil && minTimestamp(c, tsIdx) < cutoff {
				kept, dropped, err := merge.FilterRecord(c, lake.TimestampColumn, expired, d.Mem)
				c.Release()
				if err != nil {
					return nil, 0, 0, fmt.Errorf("segment %s: drop rows past retention: %w", l.info.Path, err)
				}
				for _, n := range dropped {
					past += n
				}
				c = kept
			}
			rows += c.NumRows()
			err = splitByDay(ctx, c, tsIdx, d.Mem, byDay)
			c.Release()
			if err != nil {
				return nil, 0, 0, err
			}
		}
		// Its rows are in byDay now (slices of the same buffers); nothing else may hold the
		// segment's records, or its memory would outlive the write below.
		l.seg.Release()
	}
	// One set of density cuts for the whole batch: the rows it brings to a day that has closed
	// are all late, and go to the late stream, as its late rows in the current day do.
	var all []arrow.RecordBatch
	for _, recs := range byDay {
		all = append(all, recs...)
	}
	cuts := density.BatchCuts(all, lake.TimestampColumn, d.Cfg.SplitSparse)
	var latePath func(int) string
	var outs []merge.Output
	for day, recs := range byDay {
		delete(byDay, day) // the writer owns recs now and releases each as it writes its rows
		dir := lake.DataDir(t, time.Unix(day*86400, 0).UTC().Format("2006-01-02"))
		if d.Cfg.SplitSparse > 0 {
			latePath = func(int) string { return dir + "/" + merge.LateFileName(0) }
		}
		o, err := writer.WriteSortedReleasing(ctx, wfs, func(int) string { return dir + "/" + merge.DataFileName(0) }, sc, recs,
			merge.WriterOptions{TimestampColumn: lake.TimestampColumn, TargetFileBytes: d.Cfg.TargetFileBytes, SplitSparse: d.Cfg.SplitSparse, Generation: 0, Allocator: d.Mem,
				Cuts: &cuts, LatePath: latePath, Metadata: d.Cfg.Metadata.For(t)})
		if err != nil {
			c.removeOutputs(ctx, outs)
			return nil, 0, 0, fmt.Errorf("write %s: %w", dir, err)
		}
		c.out.Written = append(c.out.Written, o...)
		outs = append(outs, o...)
	}
	return outs, rows, past, nil
}

// retentionFilter is the row filter of rows already past t's retention, and the latest cutoff;
// nil when retention is not wired or keeps every row.
func (d *Drain) retentionFilter(t *table.Table) (*rowfilter.Filter, int64) {
	if d.Cfg.PastRetention == nil {
		return nil, 0
	}
	return d.Cfg.PastRetention(t, d.Now())
}

// minTimestamp is the smallest value of rec's timestamp column ts (microseconds).
func minTimestamp(rec arrow.RecordBatch, ts int) int64 {
	col := rec.Column(ts).(*array.Timestamp)
	m := int64(math.MaxInt64)
	for i := 0; i < col.Len(); i++ {
		if col.IsValid(i) {
			m = min(m, int64(col.Value(i)))
		}
	}
	return m
}

// splitByDay appends rec's rows to out by UTC day of column ts (microseconds).
func splitByDay(ctx context.Context, rec arrow.RecordBatch, ts int, mem memory.Allocator, out map[int64][]arrow.RecordBatch) error {
	col := rec.Column(ts).(*array.Timestamp)
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
		out[first] = append(out[first], rec)
		return nil
	}
	days := map[int64]bool{}
	for i := 0; i < n; i++ {
		days[day(i)] = true
	}
	for dd := range days {
		mb := array.NewBooleanBuilder(mem)
		for i := 0; i < n; i++ {
			mb.Append(day(i) == dd)
		}
		mask := mb.NewBooleanArray()
		mb.Release()
		part, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
		mask.Release()
		if err != nil {
			return fmt.Errorf("split rows by day: %w", err)
		}
		out[dd] = append(out[dd], part)
	}
	return nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
