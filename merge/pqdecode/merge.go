package pqdecode

import (
	"context"

	"github.com/parquet-go/parquet-go"

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

// Runs is the kmerge.RunSink of the merge on values: it gathers each chunk's rows in merge
// order (the rows themselves, not copies: sources never reuse them) and hands the chunk to the
// sink, which owns it from then on.
type Runs struct {
	ctx  context.Context
	out  *writer.AsyncSink
	rows []parquet.Row
	ts   []int64
}

// NewRuns returns a RunSink writing chunks of about chunkRows rows to out.
func NewRuns(ctx context.Context, out *writer.AsyncSink, chunkRows int64) *Runs {
	return &Runs{ctx: ctx, out: out, rows: make([]parquet.Row, 0, chunkRows), ts: make([]int64, 0, chunkRows)}
}

func (r *Runs) Run(c *kmerge.Cursor, from, to int) error {
	r.rows = append(r.rows, c.Batch.Values[from:to]...)
	r.ts = append(r.ts, c.Batch.TS[from:to]...)
	return nil
}

func (r *Runs) ChunkEnd() error {
	if len(r.ts) == 0 {
		return nil
	}
	vc := &writer.ValueChunk{Rows: r.rows, TS: r.ts}
	r.rows, r.ts = make([]parquet.Row, 0, cap(r.rows)), make([]int64, 0, cap(r.ts))
	return r.out.WriteValues(r.ctx, vc)
}

// Release drops the chunk not handed on.
func (r *Runs) Release() { r.rows, r.ts = nil, nil }
