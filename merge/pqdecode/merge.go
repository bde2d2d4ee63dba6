package pqdecode

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/kmerge"
	"github.com/siglake/siglake/merge/splice"
	"github.com/siglake/siglake/merge/writer"
)

// Takes says why the merge on values cannot take the inputs opened into files whose footer
// template is tmpl, or nil: each must have exactly the output's Parquet schema (so its values and
// levels are the output's: no conform of added or retyped columns), unencrypted, and an offset
// index by which its largest pages, decoded whole, can be bounded: parquet-go decodes a page
// whole where arrow-go streams it, so the inputs' largest pages must fit a pageBudgetShare-th of
// the merge budget.
func Takes(opened []*input.File, tmpl *metadata.FileMetaData, budget int64) error {
	var pages int64
	for _, in := range opened {
		md := in.Parquet.MetaData()
		if md.FileDecryptor != nil || !splice.SameParquetSchema(md, tmpl) {
			return fmt.Errorf("input %s has another Parquet schema than the output (conform needs Arrow)", in.Path)
		}
		n, ok := input.LargestPages(in)
		if !ok {
			return fmt.Errorf("input %s has no page index to bound its pages by", in.Path)
		}
		pages += n
	}
	if pages > budget/pageBudgetShare {
		return fmt.Errorf("the inputs' largest pages, decoded whole, take %.1f MiB, more than 1/%d of the merge budget %.1f MiB",
			float64(pages)/(1<<20), pageBudgetShare, float64(budget)/(1<<20))
	}
	return nil
}

// pageBudgetShare: the merge on values takes a bin whose inputs' largest pages, decoded whole,
// fit this fraction of the merge budget (siglake's own 256 KiB pages: 32 inputs of 11 columns
// take 88 MiB of the default 512 MiB budget at most when every page is the largest).
const pageBudgetShare = 4

// Cursors opens a prefetching parquet-go source over each input, reading its columns in layout
// (the sink's), for kmerge.Order. On error the cursors opened so far are closed.
func Cursors(ctx context.Context, opened []*input.File, layout writer.ValueLayout, tsName string, batchRows, bufBytes int64) ([]*kmerge.Cursor, error) {
	cursors := make([]*kmerge.Cursor, 0, len(opened))
	for i, in := range opened {
		src, err := NewSource(in, layout, tsName, batchRows, bufBytes)
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

// Runs is the kmerge.RunSink of the merge on values: it appends each run of a batch's rows to
// the chunk field by field (writer.ValueChunk.AppendRun: the values, not copies of their bytes:
// sources never reuse them) and hands each chunk to the sink, which owns it from then on.
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
	if len(c.Batch.Cols.Fields) != len(r.layout.Flat) {
		return fmt.Errorf("input %s: a batch of %d fields, not the output's %d", c.Name, len(c.Batch.Cols.Fields), len(r.layout.Flat))
	}
	r.chunk.AppendRun(&c.Batch.Cols, c.Batch.TS, from, to)
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
