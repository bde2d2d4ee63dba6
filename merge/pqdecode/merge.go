package pqdecode

import (
	"context"
	"fmt"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/kmerge"
	"github.com/siglake/siglake/merge/writer"
)

// Cursors opens a prefetching parquet-go source over each input, for kmerge.Order. On error
// the cursors opened so far are closed.
func Cursors(ctx context.Context, opened []*input.File, tsName string, batchRows, bufBytes int64) ([]*kmerge.Cursor, error) {
	cursors := make([]*kmerge.Cursor, 0, len(opened))
	for i, in := range opened {
		src, err := NewSource(in, tsName, batchRows, bufBytes)
		if err != nil {
			for _, c := range cursors {
				_ = c.Close()
			}
			return nil, err
		}
		cursors = append(cursors, &kmerge.Cursor{Idx: i, Name: in.Path, Src: input.NewPrefetch(ctx, src)})
	}
	return cursors, nil
}

// Runs is the kmerge.RunSink of the merge on values: it lays each chunk's rows out by field in
// merge order (writer.ValueChunk; the values, not copies of their bytes: sources never reuse
// them) and hands the chunk to the sink, which owns it from then on. Laying them out here, once,
// lets the encoders and the metadata builder read each field's values in sequence rather than
// every row's from wherever its batch lies.
type Runs struct {
	ctx    context.Context
	out    *writer.AsyncSink
	layout writer.ValueLayout
	rows   int
	chunk  *writer.ValueChunk
}

// NewRuns returns a RunSink writing chunks of about chunkRows rows of layout to out.
func NewRuns(ctx context.Context, out *writer.AsyncSink, layout writer.ValueLayout, chunkRows int64) *Runs {
	return &Runs{ctx: ctx, out: out, layout: layout, rows: int(chunkRows), chunk: writer.NewValueChunk(layout, int(chunkRows))}
}

func (r *Runs) Run(c *kmerge.Cursor, from, to int) error {
	for i := from; i < to; i++ {
		if err := r.chunk.AppendRow(r.layout, c.Batch.Values[i], c.Batch.TS[i]); err != nil {
			return fmt.Errorf("input %s row %d: %w", c.Name, c.Base+int64(i), err)
		}
	}
	return nil
}

func (r *Runs) ChunkEnd() error {
	if r.chunk.Rows() == 0 {
		return nil
	}
	vc := r.chunk
	r.chunk = writer.NewValueChunk(r.layout, r.rows)
	return r.out.WriteValues(r.ctx, vc)
}

// Release drops the chunk not handed on.
func (r *Runs) Release() { r.chunk = nil }
