package kmerge

import (
	"context"
	"fmt"
	"sort"

	"github.com/siglake/siglake/merge/input"
)

// Cursor is one input's position in the k-way merge.
type Cursor struct {
	Idx    int // input index: the tie-breaker for equal timestamps
	Name   string
	Src    input.Source
	Batch  input.Batch // the current batch
	pos    int         // next row of Batch
	Base   int64       // input row number of Batch's first row
	lastTs int64       // last timestamp seen, to reject unsorted inputs
	seen   bool
}

// load reads the next non-empty batch; it returns false at the end.
func (c *Cursor) load(ctx context.Context) (bool, error) {
	if c.Batch.Rec != nil {
		c.Base += int64(len(c.Batch.TS))
		c.Batch.Rec.Release()
		c.Batch = input.Batch{}
	} else if c.Batch.TS != nil {
		c.Base += int64(len(c.Batch.TS))
		c.Batch = input.Batch{}
	}
	for {
		b, ok, err := c.Src.Next(ctx)
		if err != nil {
			return false, input.NewError("reading input", c.Name, err)
		}
		if !ok {
			return false, nil
		}
		if len(b.TS) == 0 {
			if b.Rec != nil {
				b.Rec.Release()
			}
			continue
		}
		for i, t := range b.TS {
			if c.seen && t < c.lastTs {
				if b.Rec != nil {
					b.Rec.Release()
				}
				return false, input.NewError("reading input", c.Name, fmt.Errorf("not sorted by timestamp at row %d (%d after %d)", c.Base+int64(i), t, c.lastTs))
			}
			c.lastTs, c.seen = t, true
		}
		c.Batch, c.pos = b, 0
		return true, nil
	}
}

func (c *Cursor) Close() error {
	if c.Batch.Rec != nil {
		c.Batch.Rec.Release()
		c.Batch = input.Batch{}
	}
	return c.Src.Close()
}

// RunSink receives the merge order as runs: rows [from, to) of cursor c's
// current batch go out next. chunkEnd is called after every chunkRows rows
// and once at the end (with fewer rows); runs never cross a chunk boundary.
type RunSink interface {
	Run(c *Cursor, from, to int) error
	ChunkEnd() error
}

// Order runs the k-way merge over cursors: output order is timestamp,
// then input index, then row order within the input, which is the order a
// stable sort of the inputs' concatenation gives. Between heap operations it
// takes the longest run the current minimum input can give before another
// input's head comes first, so nearly disjoint inputs cost a heap operation
// per run, not per row.
func Order(ctx context.Context, cursors []*Cursor, chunkRows int64, out RunSink) error {
	h := make(cursorHeap, 0, len(cursors))
	for _, c := range cursors {
		ok, err := c.load(ctx)
		if err != nil {
			return err
		}
		if ok {
			h = append(h, c)
		}
	}
	h.init()
	var inChunk int64
	for len(h) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := h[0]
		ts := c.Batch.TS
		end := len(ts)
		if len(h) > 1 {
			o := h.second()
			t2 := o.Batch.TS[o.pos]
			if c.Idx < o.Idx {
				end = c.pos + sort.Search(len(ts)-c.pos, func(i int) bool { return ts[c.pos+i] > t2 })
			} else {
				end = c.pos + sort.Search(len(ts)-c.pos, func(i int) bool { return ts[c.pos+i] >= t2 })
			}
		}
		end = min(end, c.pos+int(chunkRows-inChunk))
		if end <= c.pos {
			return fmt.Errorf("merge of input %s made no progress at row %d (heap order broken)", c.Name, c.Base+int64(c.pos))
		}
		if err := out.Run(c, c.pos, end); err != nil {
			return err
		}
		inChunk += int64(end - c.pos)
		c.pos = end
		if inChunk == chunkRows {
			if err := out.ChunkEnd(); err != nil {
				return err
			}
			inChunk = 0
		}
		if c.pos == len(ts) {
			ok, err := c.load(ctx)
			if err != nil {
				return err
			}
			if !ok {
				h.pop()
				continue
			}
		}
		h.fix0()
	}
	if inChunk > 0 {
		return out.ChunkEnd()
	}
	return nil
}

// cursorHeap is a binary min-heap of cursors by (head timestamp, input index).
type cursorHeap []*Cursor

func (h cursorHeap) less(i, j int) bool {
	a, b := h[i].Batch.TS[h[i].pos], h[j].Batch.TS[h[j].pos]
	return a < b || (a == b && h[i].Idx < h[j].Idx)
}

func (h cursorHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h cursorHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (h cursorHeap) fix0() { h.down(0) }

// second returns the smallest cursor other than the root.
func (h cursorHeap) second() *Cursor {
	if len(h) == 2 || !h.less(2, 1) {
		return h[1]
	}
	return h[2]
}

func (h *cursorHeap) pop() {
	old := *h
	n := len(old) - 1
	old[0] = old[n]
	old[n] = nil
	*h = old[:n]
	h.down(0)
}
