package pqgo

import (
	"fmt"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/parquet-go/parquet-go"
)

// Shredding: the rows of an Arrow array become per-leaf parquet-go values with their repetition
// and definition levels (Dremel), in row order, as arrow-go's own writer computes them.

type shredKind uint8

const (
	leafKind shredKind = iota
	structKind
	listKind
	mapKind
)

// shredNode is one node of a column's shredding plan.
type shredNode struct {
	kind       shredKind
	optional   bool
	leaf       int // leafKind: its leaf column
	first, end int // the leaf columns under it
	maxRep     int // listKind, mapKind: the repetition level of their entries
	children   []*shredNode
}

// boundNode is a shredNode with the Arrow array of one write.
type boundNode struct {
	n     *shredNode
	arr   arrow.Array
	value func(i int) (parquet.Value, int) // leafKind: value i and its size in bytes
	offs  func(i int) (int64, int64)       // listKind, mapKind: entry range of row i
	kids  []*boundNode
}

// bind pairs the plan with col's arrays.
func (c *Column) bind(col arrow.Array) (*boundNode, error) {
	return bindNode(c.plan.root, col)
}

func bindNode(n *shredNode, arr arrow.Array) (*boundNode, error) {
	b := &boundNode{n: n, arr: arr}
	var kids []arrow.Array
	switch n.kind {
	case leafKind:
		v, err := leafValue(arr)
		if err != nil {
			return nil, err
		}
		b.value = v
	case structKind:
		s, ok := arr.(*array.Struct)
		if !ok {
			return nil, fmt.Errorf("shredding: %s is not a struct array", arr.DataType())
		}
		for k := range n.children {
			kids = append(kids, s.Field(k))
		}
	case listKind:
		l, ok := arr.(*array.List)
		if !ok {
			return nil, fmt.Errorf("shredding: %s is not a list array", arr.DataType())
		}
		b.offs, kids = l.ValueOffsets, []arrow.Array{l.ListValues()}
	case mapKind:
		m, ok := arr.(*array.Map)
		if !ok {
			return nil, fmt.Errorf("shredding: %s is not a map array", arr.DataType())
		}
		b.offs, kids = m.ValueOffsets, []arrow.Array{m.Keys(), m.Items()}
	}
	for k, a := range kids {
		kb, err := bindNode(n.children[k], a)
		if err != nil {
			return nil, err
		}
		b.kids = append(b.kids, kb)
	}
	return b, nil
}

// shred appends the values of row (or entry) i of b at repetition level r and definition
// level d (those of b's parent).
func (c *Column) shred(b *boundNode, i, r, d int) {
	n := b.n
	if n.optional {
		if b.arr.IsNull(i) {
			c.nulls(n, r, d)
			return
		}
		d++
	}
	switch n.kind {
	case leafKind:
		v, size := b.value(i)
		c.vals[n.leaf] = append(c.vals[n.leaf], v.Level(r, d, n.leaf))
		c.bytes[n.leaf] += size
	case structKind:
		for _, k := range b.kids {
			c.shred(k, i, r, d)
		}
	case listKind, mapKind:
		start, end := b.offs(i)
		if start == end {
			c.nulls(n, r, d)
			return
		}
		// The repeated group between this node and its entries is never null: its definition
		// level counts an entry being there.
		for e := start; e < end; e++ {
			re := r
			if e > start {
				re = n.maxRep
			}
			for _, k := range b.kids {
				c.shred(k, int(e), re, d+1)
			}
		}
	}
}

// nulls appends a null at levels (r, d) to every leaf under n.
func (c *Column) nulls(n *shredNode, r, d int) {
	for l := n.first; l < n.end; l++ {
		c.vals[l] = append(c.vals[l], parquet.Value{}.Level(r, d, l))
	}
}

// bytesOf is s's bytes without a copy; parquet-go copies what it keeps.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// leafValue returns how value i of arr becomes a parquet-go value (leafType lists the types).
func leafValue(arr arrow.Array) (func(int) (parquet.Value, int), error) {
	switch a := arr.(type) {
	case *array.String:
		return func(i int) (parquet.Value, int) { s := a.Value(i); return parquet.ByteArrayValue(bytesOf(s)), len(s) }, nil
	case *array.LargeString:
		return func(i int) (parquet.Value, int) { s := a.Value(i); return parquet.ByteArrayValue(bytesOf(s)), len(s) }, nil
	case *array.Binary:
		return func(i int) (parquet.Value, int) { b := a.Value(i); return parquet.ByteArrayValue(b), len(b) }, nil
	case *array.LargeBinary:
		return func(i int) (parquet.Value, int) { b := a.Value(i); return parquet.ByteArrayValue(b), len(b) }, nil
	case *array.FixedSizeBinary:
		return func(i int) (parquet.Value, int) { b := a.Value(i); return parquet.FixedLenByteArrayValue(b), len(b) }, nil
	case *array.Boolean:
		return func(i int) (parquet.Value, int) { return parquet.BooleanValue(a.Value(i)), 1 }, nil
	case *array.Int8:
		return func(i int) (parquet.Value, int) { return parquet.Int32Value(int32(a.Value(i))), 4 }, nil
	case *array.Int16:
		return func(i int) (parquet.Value, int) { return parquet.Int32Value(int32(a.Value(i))), 4 }, nil
	case *array.Int32:
		return func(i int) (parquet.Value, int) { return parquet.Int32Value(a.Value(i)), 4 }, nil
	case *array.Date32:
		return func(i int) (parquet.Value, int) { return parquet.Int32Value(int32(a.Value(i))), 4 }, nil
	case *array.Int64:
		return func(i int) (parquet.Value, int) { return parquet.Int64Value(a.Value(i)), 8 }, nil
	case *array.Time64:
		return func(i int) (parquet.Value, int) { return parquet.Int64Value(int64(a.Value(i))), 8 }, nil
	case *array.Timestamp:
		mul := map[arrow.TimeUnit]int64{arrow.Second: 1_000_000, arrow.Millisecond: 1_000, arrow.Microsecond: 1}[a.DataType().(*arrow.TimestampType).Unit]
		if mul == 0 {
			return nil, fmt.Errorf("shredding: timestamps of %s", a.DataType())
		}
		return func(i int) (parquet.Value, int) { return parquet.Int64Value(int64(a.Value(i)) * mul), 8 }, nil
	case *array.Float32:
		return func(i int) (parquet.Value, int) { return parquet.FloatValue(a.Value(i)), 4 }, nil
	case *array.Float64:
		return func(i int) (parquet.Value, int) { return parquet.DoubleValue(a.Value(i)), 8 }, nil
	}
	return nil, fmt.Errorf("shredding: arrays of %s", arr.DataType())
}
