package drain

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/drain/dayfiles"
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
	tsIdx := sc.FieldIndices(lake.TimestampColumn)[0]
	days := dayfiles.New(tsIdx, d.Mem)
	defer days.Release()
	var rows, past int64
	for _, l := range segs {
		for _, rec := range l.seg.Records {
			c, err := input.Conform(rec, sc, d.Mem)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("segment %s: %w", l.info.Path, err)
			}
			if expired != nil && dayfiles.MinTimestamp(c, tsIdx) < cutoff {
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
			err = days.Add(ctx, c)
			c.Release()
			if err != nil {
				return nil, 0, 0, err
			}
		}
		// Its rows are in days now (slices of the same buffers); nothing else may hold the
		// segment's records, or its memory would outlive the write below.
		l.seg.Release()
	}
	outs, err := days.Write(ctx, wfs, sc, func(date string) string { return lake.DataDir(t, date) },
		d.Cfg.fileOptions(t, d.Mem))
	c.out.Written = append(c.out.Written, outs...)
	if err != nil {
		c.removeOutputs(ctx, outs)
		return nil, 0, 0, err
	}
	return outs, rows, past, nil
}

// fileOptions are the writer options of the drain's files for t, with the drain's encoder (auto
// takes parquet-go here); the drain benchmark's floor writes with the same.
func (c Config) fileOptions(t *table.Table, alloc memory.Allocator) merge.WriterOptions {
	return merge.WriterOptions{TimestampColumn: lake.TimestampColumn, TargetFileBytes: c.TargetFileBytes, SplitSparse: c.SplitSparse,
		Generation: 0, Allocator: alloc, Metadata: c.Metadata.For(t), Encoder: writer.EncoderDefault.ForDrain()}
}

// retentionFilter is the row filter of rows already past t's retention, and the latest cutoff;
// nil when retention is not wired or keeps every row.
func (d *Drain) retentionFilter(t *table.Table) (*rowfilter.Filter, int64) {
	if d.Cfg.PastRetention == nil {
		return nil, 0
	}
	return d.Cfg.PastRetention(t, d.Now())
}
