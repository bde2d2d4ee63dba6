package merge

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// batch is one decoded piece of an input: its rows (nil for a
// timestamp-only source) and their timestamps in microseconds.
type batch struct {
	rec arrow.RecordBatch
	ts  []int64
}

// source yields an input's rows in file order. next returns ok=false at the
// end. The caller owns (and releases) the returned record.
type source interface {
	next(ctx context.Context) (b batch, ok bool, err error)
	close() error
}

// cursor is one input's position in the k-way merge.
type cursor struct {
	idx    int // input index: the tie-breaker for equal timestamps
	name   string
	src    source
	b      batch
	pos    int   // next row of b
	base   int64 // input row number of b's first row
	lastTs int64 // last timestamp seen, to reject unsorted inputs
	seen   bool
}

// load reads the next non-empty batch; it returns false at the end.
func (c *cursor) load(ctx context.Context) (bool, error) {
	if c.b.rec != nil {
		c.base += int64(len(c.b.ts))
		c.b.rec.Release()
		c.b = batch{}
	} else if c.b.ts != nil {
		c.base += int64(len(c.b.ts))
		c.b = batch{}
	}
	for {
		b, ok, err := c.src.next(ctx)
		if err != nil {
			return false, inputErr("reading input", c.name, err)
		}
		if !ok {
			return false, nil
		}
		if len(b.ts) == 0 {
			if b.rec != nil {
				b.rec.Release()
			}
			continue
		}
		for i, t := range b.ts {
			if c.seen && t < c.lastTs {
				if b.rec != nil {
					b.rec.Release()
				}
				return false, inputErr("reading input", c.name, fmt.Errorf("not sorted by timestamp at row %d (%d after %d)", c.base+int64(i), t, c.lastTs))
			}
			c.lastTs, c.seen = t, true
		}
		c.b, c.pos = b, 0
		return true, nil
	}
}

func (c *cursor) close() error {
	if c.b.rec != nil {
		c.b.rec.Release()
		c.b = batch{}
	}
	return c.src.close()
}

// runSink receives the merge order as runs: rows [from, to) of cursor c's
// current batch go out next. chunkEnd is called after every chunkRows rows
// and once at the end (with fewer rows); runs never cross a chunk boundary.
type runSink interface {
	run(c *cursor, from, to int) error
	chunkEnd() error
}

// mergeOrder runs the k-way merge over cursors: output order is timestamp,
// then input index, then row order within the input, which is the order a
// stable sort of the inputs' concatenation gives. Between heap operations it
// takes the longest run the current minimum input can give before another
// input's head comes first, so nearly disjoint inputs cost a heap operation
// per run, not per row.
func mergeOrder(ctx context.Context, cursors []*cursor, chunkRows int64, out runSink) error {
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
		ts := c.b.ts
		end := len(ts)
		if len(h) > 1 {
			o := h.second()
			t2 := o.b.ts[o.pos]
			if c.idx < o.idx {
				end = c.pos + sort.Search(len(ts)-c.pos, func(i int) bool { return ts[c.pos+i] > t2 })
			} else {
				end = c.pos + sort.Search(len(ts)-c.pos, func(i int) bool { return ts[c.pos+i] >= t2 })
			}
		}
		end = min(end, c.pos+int(chunkRows-inChunk))
		if end <= c.pos {
			return fmt.Errorf("merge of input %s made no progress at row %d (heap order broken)", c.name, c.base+int64(c.pos))
		}
		if err := out.run(c, c.pos, end); err != nil {
			return err
		}
		inChunk += int64(end - c.pos)
		c.pos = end
		if inChunk == chunkRows {
			if err := out.chunkEnd(); err != nil {
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
		return out.chunkEnd()
	}
	return nil
}

// cursorHeap is a binary min-heap of cursors by (head timestamp, input index).
type cursorHeap []*cursor

func (h cursorHeap) less(i, j int) bool {
	a, b := h[i].b.ts[h[i].pos], h[j].b.ts[h[j].pos]
	return a < b || (a == b && h[i].idx < h[j].idx)
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
func (h cursorHeap) second() *cursor {
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
