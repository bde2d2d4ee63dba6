// Package ordered merges the time-ordered row batches of several files into one order (search's
// last stage): a file is opened only when the scan reaches its first timestamp, so disjoint files
// are read one after the other and open streams stay at the overlap depth. Pure: the files come
// as Stream values.
package ordered

import (
	"container/heap"
	"context"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// Batch is a batch of matching rows of one file, in scan order: TS[i] is row i's timestamp (µs);
// with Reverse the scan takes them from the last to the first.
type Batch struct {
	Rec     arrow.RecordBatch
	TS      []int64
	Reverse bool
}

// Stream is one file's matching rows, batch after batch in scan order; nil at the end.
type Stream interface {
	Next(ctx context.Context) (*Batch, error)
	Close() error
}

// File is a file the scan has not opened yet.
type File struct {
	// Start is the first timestamp of the file in scan order: its MinTime ascending, its MaxTime
	// descending (manifest bounds, inclusive).
	Start int64
	// Rank orders rows with equal timestamps across files (ascending by path; descending scans
	// reverse it), so the order never depends on the layout.
	Rank int
	Open func(ctx context.Context) (Stream, error) // nil Stream: the file was pruned
}

// Stats is what the merge saw.
type Stats struct {
	Opened   int // files whose stream was opened (the rest were not reached)
	MaxOpen  int // most streams open at once
	Returned int64
}

// Merge emits the rows of the files in timestamp order (desc: newest first; equal
// timestamps by rank, then file order), at most limit of them (0: all). files must be sorted by
// (Start, Rank) in scan order. A file is opened only when the scan reaches its start, so
// disjoint files are read one after the other and open streams stay at the overlap depth.
func Merge(ctx context.Context, files []File, desc bool, limit int, emit func(rec arrow.RecordBatch, row int) error) (st Stats, err error) {
	h := &cursorHeap{desc: desc}
	defer func() {
		for _, c := range h.cs {
			c.release()
			if cerr := c.s.Close(); err == nil {
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
		if limit > 0 && st.Returned >= int64(limit) {
			return st, nil
		}
		// Open every file the scan has reached: its rows may come before the heap's top.
		for next < len(files) && (h.Len() == 0 || reached(files[next].Start, h.cs[0].ts())) {
			f := files[next]
			next++
			s, err := f.Open(ctx)
			if err != nil {
				return st, err
			}
			st.Opened++
			if s == nil {
				continue
			}
			c := &cursor{s: s, rank: f.Rank}
			ok, err := c.advance(ctx)
			if err != nil {
				_ = s.Close()
				return st, err
			}
			if !ok {
				if err := s.Close(); err != nil {
					return st, err
				}
				continue
			}
			heap.Push(h, c)
			st.MaxOpen = max(st.MaxOpen, h.Len())
		}
		if h.Len() == 0 {
			return st, nil
		}
		c := h.cs[0]
		if err := emit(c.cur.Rec, c.row()); err != nil {
			return st, err
		}
		st.Returned++
		c.i++
		if c.i < len(c.cur.TS) {
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
		if err := c.s.Close(); err != nil {
			return st, err
		}
	}
}

// cursor is one open stream and its position.
type cursor struct {
	s    Stream
	rank int
	cur  *Batch
	i    int // position in scan order within cur
}

func (c *cursor) row() int {
	if c.cur.Reverse {
		return len(c.cur.TS) - 1 - c.i
	}
	return c.i
}

func (c *cursor) ts() int64 { return c.cur.TS[c.row()] }

func (c *cursor) release() {
	if c.cur != nil {
		c.cur.Rec.Release()
		c.cur = nil
	}
}

// advance moves to the next non-empty batch; false at the stream's end.
func (c *cursor) advance(ctx context.Context) (bool, error) {
	c.release()
	for {
		r, err := c.s.Next(ctx)
		if err != nil || r == nil {
			return false, err
		}
		if len(r.TS) > 0 {
			c.cur, c.i = r, 0
			return true, nil
		}
		r.Rec.Release()
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

// OverlapDepth is the most files whose [min, max] time ranges share an instant: how many streams
// the merge may hold open at once (it sizes their share of the memory budget).
func OverlapDepth(bounds [][2]int64) int {
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
