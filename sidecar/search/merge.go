package search

import (
	"container/heap"
	"context"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// batch is a batch of matching rows of one file, in scan order: ts[i] is row i's timestamp (µs);
// with reverse the scan takes them from the last to the first.
type batch struct {
	rec     arrow.RecordBatch
	ts      []int64
	reverse bool
}

// stream is one file's matching rows, batch after batch in scan order; nil at the end.
type stream interface {
	next(ctx context.Context) (*batch, error)
	close() error
}

// pending is a file the scan has not opened yet.
type pending struct {
	// start is the first timestamp of the file in scan order: its MinTime ascending, its MaxTime
	// descending (manifest bounds, inclusive).
	start int64
	// rank orders rows with equal timestamps across files (ascending by path; descending scans
	// reverse it), so the order never depends on the layout.
	rank int
	open func(ctx context.Context) (stream, error) // nil stream: the file was pruned
}

// mergeStats is what the merge saw.
type mergeStats struct {
	opened   int // files whose stream was opened (the rest were not reached)
	maxOpen  int // most streams open at once
	returned int64
}

// orderedMerge emits the rows of the files in timestamp order (desc: newest first; equal
// timestamps by rank, then file order), at most limit of them (0: all). files must be sorted by
// (start, rank) in scan order. A file is opened only when the scan reaches its start, so
// disjoint files are read one after the other and open streams stay at the overlap depth.
func orderedMerge(ctx context.Context, files []pending, desc bool, limit int, emit func(rec arrow.RecordBatch, row int) error) (st mergeStats, err error) {
	h := &cursorHeap{desc: desc}
	defer func() {
		for _, c := range h.cs {
			c.release()
			if cerr := c.s.close(); err == nil {
				err = cerr
			}
		}
	}()
	next := 0
	reached := func(start, ts int64) bool {
		if desc {
			return start >= ts
		}
		return start <= ts
	}
	for {
		if limit > 0 && st.returned >= int64(limit) {
			return st, nil
		}
		// Open every file the scan has reached: its rows may come before the heap's top.
		for next < len(files) && (h.Len() == 0 || reached(files[next].start, h.cs[0].ts())) {
			f := files[next]
			next++
			s, err := f.open(ctx)
			if err != nil {
				return st, err
			}
			st.opened++
			if s == nil {
				continue
			}
			c := &cursor{s: s, rank: f.rank}
			ok, err := c.advance(ctx)
			if err != nil {
				_ = s.close()
				return st, err
			}
			if !ok {
				if err := s.close(); err != nil {
					return st, err
				}
				continue
			}
			heap.Push(h, c)
			st.maxOpen = max(st.maxOpen, h.Len())
		}
		if h.Len() == 0 {
			return st, nil
		}
		c := h.cs[0]
		if err := emit(c.cur.rec, c.row()); err != nil {
			return st, err
		}
		st.returned++
		c.i++
		if c.i < len(c.cur.ts) {
			heap.Fix(h, 0)
			continue
		}
		ok, err := c.advance(ctx)
		if err != nil {
			return st, err
		}
		if ok {
			heap.Fix(h, 0)
			continue
		}
		heap.Pop(h)
		if err := c.s.close(); err != nil {
			return st, err
		}
	}
}

// cursor is one open stream and its position.
type cursor struct {
	s    stream
	rank int
	cur  *batch
	i    int // position in scan order within cur
}

func (c *cursor) row() int {
	if c.cur.reverse {
		return len(c.cur.ts) - 1 - c.i
	}
	return c.i
}

func (c *cursor) ts() int64 { return c.cur.ts[c.row()] }

func (c *cursor) release() {
	if c.cur != nil {
		c.cur.rec.Release()
		c.cur = nil
	}
}

// advance moves to the next non-empty batch; false at the stream's end.
func (c *cursor) advance(ctx context.Context) (bool, error) {
	c.release()
	for {
		r, err := c.s.next(ctx)
		if err != nil || r == nil {
			return false, err
		}
		if len(r.ts) > 0 {
			c.cur, c.i = r, 0
			return true, nil
		}
		r.rec.Release()
	}
}

type cursorHeap struct {
	cs   []*cursor
	desc bool
}

func (h *cursorHeap) Len() int { return len(h.cs) }
func (h *cursorHeap) Less(i, j int) bool {
	a, b := h.cs[i], h.cs[j]
	ta, tb := a.ts(), b.ts()
	if h.desc {
		return ta > tb || ta == tb && a.rank > b.rank
	}
	return ta < tb || ta == tb && a.rank < b.rank
}
func (h *cursorHeap) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursorHeap) Push(x any)    { h.cs = append(h.cs, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// overlapDepth is the most files whose [min, max] time ranges share an instant: how many streams
// the merge may hold open at once (it sizes their share of the memory budget).
func overlapDepth(bounds [][2]int64) int {
	type edge struct {
		t     int64
		delta int
	}
	es := make([]edge, 0, 2*len(bounds))
	for _, b := range bounds {
		es = append(es, edge{b[0], 1}, edge{b[1], -1})
	}
	// Starts before ends at the same instant: inclusive bounds touch.
	sort.Slice(es, func(i, j int) bool { return es[i].t < es[j].t || es[i].t == es[j].t && es[i].delta > es[j].delta })
	depth, best := 0, 0
	for _, e := range es {
		depth += e.delta
		best = max(best, depth)
	}
	return best
}
