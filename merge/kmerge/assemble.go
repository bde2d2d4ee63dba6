package kmerge

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// assembler turns runs over decoded batches into output records: at each
// chunk end it builds one record of the chunk's rows in merge order and
// hands it to the sink.
type Assembler struct {
	ctx    context.Context
	schema *arrow.Schema
	mem    memory.Allocator
	out    func(arrow.RecordBatch) error

	parts []part          // source row ranges touched in this chunk
	open  map[*Cursor]int // cursor -> its part in parts, for its current batch
	recOf map[*Cursor]arrow.RecordBatch
	runs  []span // output order, as ranges of parts
	Rows  int64

	// OutParts, when set, takes a chunk of long runs instead of out: one slice of its record
	// per run, in output order, not copied into one record (the sink reads them where they
	// lie). Chunks of short interleaved runs still go to out as one record.
	OutParts func([]arrow.RecordBatch) error
}

// part is a contiguous row range of one decoded record.
type part struct {
	rec    arrow.RecordBatch // retained until the chunk is flushed
	lo, hi int64
}

type span struct {
	part    int
	off, ln int64 // offset within the part's range
}

func NewAssembler(ctx context.Context, schema *arrow.Schema, mem memory.Allocator, out func(arrow.RecordBatch) error) *Assembler {
	return &Assembler{ctx: ctx, schema: schema, mem: mem, out: out, open: map[*Cursor]int{}, recOf: map[*Cursor]arrow.RecordBatch{}}
}

func (a *Assembler) Run(c *Cursor, from, to int) error {
	a.Add(c, c.Batch.Rec, int64(from), int64(to))
	return nil
}

// add appends rows [from, to) of rec, read through key, to the chunk. Rows a
// key adds are consecutive in its record, so each (key, record) pair needs
// only one part.
func (a *Assembler) Add(key *Cursor, rec arrow.RecordBatch, from, to int64) {
	p, ok := a.open[key]
	if !ok || a.recOf[key] != rec || a.parts[p].hi != from {
		rec.Retain()
		a.parts = append(a.parts, part{rec: rec, lo: from, hi: from})
		p = len(a.parts) - 1
		a.open[key], a.recOf[key] = p, rec
	}
	pp := &a.parts[p]
	off := pp.hi - pp.lo
	pp.hi = to
	if n := len(a.runs); n > 0 && a.runs[n-1].part == p && a.runs[n-1].off+a.runs[n-1].ln == off {
		a.runs[n-1].ln += to - from
	} else {
		a.runs = append(a.runs, span{part: p, off: off, ln: to - from})
	}
	a.Rows += to - from
}

func (a *Assembler) ChunkEnd() error {
	if a.Rows == 0 {
		return nil
	}
	if a.OutParts != nil && a.longRuns() {
		parts := make([]arrow.RecordBatch, len(a.runs))
		for i, r := range a.runs {
			p := a.parts[r.part]
			parts[i] = p.rec.NewSlice(p.lo+r.off, p.lo+r.off+r.ln)
		}
		a.reset()
		defer func() {
			for _, p := range parts {
				p.Release()
			}
		}()
		return a.OutParts(parts)
	}
	rec, err := a.build()
	a.reset()
	if err != nil {
		return err
	}
	defer rec.Release()
	return a.out(rec)
}

func (a *Assembler) reset() {
	for _, p := range a.parts {
		p.rec.Release()
	}
	clear(a.parts) // the GC must not keep released records alive through the backing array
	a.parts = a.parts[:0]
	a.runs = a.runs[:0]
	clear(a.open)
	clear(a.recOf)
	a.Rows = 0
}

func (a *Assembler) Release() { a.reset() }

// longRuns says whether the chunk's runs are long enough (32 rows on average) to be copied
// slice by slice rather than gathered by one Take.
func (a *Assembler) longRuns() bool { return len(a.runs) <= 1 || int64(len(a.runs))*32 <= a.Rows }

// build copies the chunk's rows into one record. Long runs are concatenated
// slice by slice; short interleaved runs are gathered with one Take over the
// concatenated parts, which costs a second copy but no per-run overhead.
func (a *Assembler) build() (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, a.schema.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	if a.longRuns() {
		for c := range cols {
			slices := make([]arrow.Array, len(a.runs))
			for i, r := range a.runs {
				p := a.parts[r.part]
				slices[i] = array.NewSlice(p.rec.Column(c), p.lo+r.off, p.lo+r.off+r.ln)
			}
			var err error
			cols[c], err = concat(slices, a.mem)
			for _, s := range slices {
				s.Release()
			}
			if err != nil {
				return nil, fmt.Errorf("assembling column %q: %w", a.schema.Field(c).Name, err)
			}
		}
		return array.NewRecordBatch(a.schema, cols, a.Rows), nil
	}
	base := make([]int64, len(a.parts))
	var n int64
	for i, p := range a.parts {
		base[i] = n
		n += p.hi - p.lo
	}
	ib := array.NewInt64Builder(a.mem)
	ib.Reserve(int(a.Rows))
	for _, r := range a.runs {
		start := base[r.part] + r.off
		for j := int64(0); j < r.ln; j++ {
			ib.UnsafeAppend(start + j)
		}
	}
	idx := ib.NewInt64Array()
	ib.Release()
	defer idx.Release()
	ctx := compute.WithAllocator(a.ctx, a.mem)
	for c := range cols {
		slices := make([]arrow.Array, len(a.parts))
		for i, p := range a.parts {
			slices[i] = array.NewSlice(p.rec.Column(c), p.lo, p.hi)
		}
		all, err := concat(slices, a.mem)
		for _, s := range slices {
			s.Release()
		}
		if err != nil {
			return nil, fmt.Errorf("assembling column %q: %w", a.schema.Field(c).Name, err)
		}
		cols[c], err = compute.TakeArray(ctx, all, idx)
		all.Release()
		if err != nil {
			return nil, fmt.Errorf("reordering column %q: %w", a.schema.Field(c).Name, err)
		}
	}
	return array.NewRecordBatch(a.schema, cols, a.Rows), nil
}

func concat(parts []arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	if len(parts) == 1 {
		parts[0].Retain()
		return parts[0], nil
	}
	return array.Concatenate(parts, mem)
}
