// Package pqgo encodes the Arrow columns siglake writes with github.com/parquet-go/parquet-go, as
// arrow-go's pqarrow writer would lay them out (merge/writer's parquet-go encoder, issue 36).
package pqgo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	apq "github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// Settings are the writer's: those arrow-go's writer properties give every file.
type Settings struct {
	// PageBytes is the data page size.
	PageBytes int
	// DictionaryBytes is the dictionary size at which a chunk falls back to plain.
	DictionaryBytes int64
	// TimestampColumn is delta-encoded, RawColumn plain, other columns dictionary-encoded.
	TimestampColumn, RawColumn string
	// Compression compresses the pages.
	Compression compress.Codec
}

// The parquet-go encoder writes each top-level column as arrow-go would, so that its chunks fit
// the footer arrow-go's schema describes (writer.Template): the same leaves in the same order
// with the same repetition (so the same levels), the same physical types, and the encodings
// siglake chose: dictionary with a fallback to plain at DictionaryBytes, plain for the raw column
// and booleans, delta for the timestamp column; data page v1 of PageBytes, the writer's zstd,
// statistics, column and offset indexes. The schema, field ids, footer and its key-value
// metadata stay arrow-go's: only the column chunks and their page indexes come from parquet-go.
// Columns of a type it does not write (leafType) are encoded by arrow-go.

// Plan is how one top-level column is shredded and written with parquet-go; the sink makes it
// once and each row group's encoder uses it.
type Plan struct {
	root      *shredNode
	schema    *parquet.Schema
	leaves    int
	dict      []bool // per leaf: dictionary-encoded
	dictBytes int
	opts      []parquet.WriterOption
}

// Leaves is how many leaf columns the column has.
func (plan *Plan) Leaves() int { return plan.leaves }

// Flat says whether the column is one leaf that is not repeated: one value a row.
func (plan *Plan) Flat() bool { return plan.root.kind == leafKind }

// columnIndexLimit is the longest byte-array bound a column index keeps (longer ones are
// truncated, the upper bound rounded up; a truncated bound still prunes).
const columnIndexLimit = MaxStatBytes

// NewPlan plans the parquet-go encoding of field, which arrow-go's schema writes as node; nil
// without error when a leaf's type is not one it writes (leafType).
func NewPlan(field arrow.Field, node schema.Node, set Settings) (*Plan, error) {
	b := shredBuilder{raw: set.RawColumn, ts: set.TimestampColumn}
	root, pn, err := b.build(field.Type, node, 0, 0)
	if err != nil || root == nil {
		return nil, err
	}
	sc := parquet.NewSchema("schema", orderedGroup{fields: []parquet.Field{namedField{Node: pn, name: node.Name()}}})
	return &Plan{root: root, schema: sc, leaves: b.leaves, dict: b.dict, dictBytes: int(set.DictionaryBytes), opts: []parquet.WriterOption{
		sc,
		parquet.PageBufferSize(set.PageBytes),
		parquet.DataPageVersion(1),
		parquet.DataPageStatistics(true),
		parquet.DictionaryMaxBytes(set.DictionaryBytes),
		parquet.ColumnIndexSizeLimit(func([]string) int { return columnIndexLimit }),
		parquet.Compression(set.Compression),
		parquet.CreatedBy("siglake", "", ""),
	}}, nil
}

// shredBuilder walks an Arrow type beside the Parquet node arrow-go writes it as.
type shredBuilder struct {
	raw, ts string
	leaves  int
	dict    []bool
}

// build returns the shredding plan and the parquet-go node of t written as n; rep is the
// repetition level of n's parent, depth how deep n lies. A nil plan means a type not written.
func (b *shredBuilder) build(t arrow.DataType, n schema.Node, rep, depth int) (*shredNode, parquet.Node, error) {
	sn := &shredNode{optional: n.RepetitionType() == apq.Repetitions.Optional, first: b.leaves}
	var pn parquet.Node
	var ok bool
	var err error
	switch t := t.(type) {
	case *arrow.MapType:
		sn.kind = mapKind
		pn, ok, err = b.repeated(sn, n, []arrow.DataType{t.KeyType(), t.ItemType()}, rep, depth)
	case *arrow.ListType:
		sn.kind = listKind
		pn, ok, err = b.repeated(sn, n, []arrow.DataType{t.Elem()}, rep, depth)
	case *arrow.StructType:
		sn.kind = structKind
		var fields []parquet.Field
		fields, ok, err = b.group(sn, n, t.Fields(), rep, depth)
		pn = orderedGroup{fields: fields}
	default:
		pn, ok, err = b.leaf(sn, t, n, depth)
	}
	if err != nil || !ok {
		return nil, nil, err
	}
	sn.end = b.leaves
	switch n.RepetitionType() {
	case apq.Repetitions.Optional:
		pn = parquet.Optional(pn)
	case apq.Repetitions.Repeated:
		return nil, nil, fmt.Errorf("column %s: a repeated field outside a list or map", n.Path())
	default:
		pn = parquet.Required(pn)
	}
	return sn, pn, nil
}

// group builds the children of a struct node.
func (b *shredBuilder) group(sn *shredNode, n schema.Node, fields []arrow.Field, rep, depth int) ([]parquet.Field, bool, error) {
	g, isGroup := n.(*schema.GroupNode)
	if !isGroup || g.NumFields() != len(fields) {
		return nil, false, fmt.Errorf("column %s: Parquet node does not match its Arrow type", n.Path())
	}
	out := make([]parquet.Field, len(fields))
	for i, f := range fields {
		c, pn, err := b.build(f.Type, g.Field(i), rep, depth+1)
		if err != nil || c == nil {
			return nil, false, err
		}
		sn.children = append(sn.children, c)
		out[i] = namedField{Node: pn, name: g.Field(i).Name()}
	}
	return out, true, nil
}

// repeated builds a list (one child type) or map (key, value) node: n is a group holding one
// repeated group holding the element, or the key and the value.
func (b *shredBuilder) repeated(sn *shredNode, n schema.Node, kids []arrow.DataType, rep, depth int) (parquet.Node, bool, error) {
	g, isGroup := n.(*schema.GroupNode)
	if !isGroup || g.NumFields() != 1 || g.Field(0).RepetitionType() != apq.Repetitions.Repeated {
		return nil, false, fmt.Errorf("column %s: Parquet node does not match its Arrow list or map", n.Path())
	}
	inner, isGroup := g.Field(0).(*schema.GroupNode)
	if !isGroup || inner.NumFields() != len(kids) {
		return nil, false, fmt.Errorf("column %s: Parquet node does not match its Arrow list or map", n.Path())
	}
	sn.maxRep = rep + 1
	fields := make([]parquet.Field, len(kids))
	for i, kt := range kids {
		c, pn, err := b.build(kt, inner.Field(i), rep+1, depth+2)
		if err != nil || c == nil {
			return nil, false, err
		}
		sn.children = append(sn.children, c)
		fields[i] = namedField{Node: pn, name: inner.Field(i).Name()}
	}
	return orderedGroup{fields: []parquet.Field{namedField{Node: parquet.Repeated(orderedGroup{fields: fields}), name: inner.Name()}}}, true, nil
}

// leaf builds a leaf node with the encoding arrow-go's writerProperties give it.
func (b *shredBuilder) leaf(sn *shredNode, t arrow.DataType, n schema.Node, depth int) (parquet.Node, bool, error) {
	p, isLeaf := n.(*schema.PrimitiveNode)
	if !isLeaf {
		return nil, false, fmt.Errorf("column %s: Parquet node does not match its Arrow type %s", n.Path(), t)
	}
	typ, ok := leafType(t, p)
	if !ok {
		return nil, false, nil
	}
	sn.kind, sn.leaf = leafKind, b.leaves
	b.leaves++
	var enc encoding.Encoding = &parquet.RLEDictionary
	switch {
	case depth == 0 && n.Name() == b.ts:
		enc = &parquet.DeltaBinaryPacked
	case depth == 0 && n.Name() == b.raw, typ.Kind() == parquet.Boolean:
		enc = &parquet.Plain
	}
	b.dict = append(b.dict, enc == &parquet.RLEDictionary)
	return parquet.Encoded(parquet.Leaf(typ), enc), true, nil
}

// leafType is the parquet-go type that writes Arrow type t as arrow-go writes it (node p):
// the same physical type and the same order for statistics. ok is false for a type it does not
// write, which the column's arrow-go encoder then writes.
func leafType(t arrow.DataType, p *schema.PrimitiveNode) (parquet.Type, bool) {
	var want apq.Type
	var typ parquet.Type
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		want, typ = apq.Types.ByteArray, parquet.ByteArrayType
	case arrow.FIXED_SIZE_BINARY:
		want, typ = apq.Types.FixedLenByteArray, parquet.FixedLenByteArrayType(t.(*arrow.FixedSizeBinaryType).ByteWidth)
	case arrow.BOOL:
		want, typ = apq.Types.Boolean, parquet.BooleanType
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.DATE32:
		want, typ = apq.Types.Int32, parquet.Int32Type
	case arrow.INT64, arrow.TIME64:
		want, typ = apq.Types.Int64, parquet.Int64Type
	case arrow.TIMESTAMP:
		if t.(*arrow.TimestampType).Unit == arrow.Nanosecond {
			return nil, false // arrow-go coerces nanoseconds to micros, refusing lossy values: its own
		}
		want, typ = apq.Types.Int64, parquet.Int64Type
	case arrow.FLOAT32:
		want, typ = apq.Types.Float, parquet.FloatType
	case arrow.FLOAT64:
		want, typ = apq.Types.Double, parquet.DoubleType
	default:
		return nil, false
	}
	if p.PhysicalType() != want || (want == apq.Types.FixedLenByteArray && p.TypeLength() != typ.Length()) {
		return nil, false
	}
	return typ, true
}

// orderedGroup is a parquet-go group whose fields keep the order given: parquet.Group is a map
// and sorts its fields by name, which would put the leaves out of the template's order.
type orderedGroup struct {
	parquet.Group
	fields []parquet.Field
}

func (g orderedGroup) Fields() []parquet.Field { return g.fields }
func (g orderedGroup) String() string          { return fmt.Sprint(g.fields) }
func (g orderedGroup) GoType() reflect.Type    { return reflect.TypeFor[map[string]any]() }

// namedField is a field of an orderedGroup. Rows are never written as Go values (the sink hands
// the column writers values), so Value is never asked.
type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string                      { return f.name }
func (f namedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

// Column is the parquet-go encoder of one top-level column for one row group: a one-row-group
// Parquet file in memory.
type Column struct {
	plan  *Plan
	w     *parquet.Writer
	buf   *bytes.Buffer
	cols  []*parquet.ColumnWriter
	vals  [][]parquet.Value // per leaf: whole rows not yet handed to its column writer
	bytes []int             // per leaf: bytes of the values in vals
	grown []int             // per dictionary leaf: value bytes handed since the last page cut we made
}

// NewColumn starts a column of plan's that writes its file into buf.
func (plan *Plan) NewColumn(buf *bytes.Buffer) *Column {
	w := parquet.NewWriter(buf, plan.opts...)
	return &Column{plan: plan, w: w, buf: buf, cols: w.ColumnWriters(),
		vals: make([][]parquet.Value, plan.leaves), bytes: make([]int, plan.leaves), grown: make([]int, plan.leaves)}
}

// flushValues and flushBytes bound the values held before they go to the column
// writer: it cuts a page only between calls, so a call's values must stay well under a page.
const (
	flushValues = 1024
	flushBytes  = 32 << 10
)

// Write appends the rows of col.
func (c *Column) Write(col arrow.Array) error { return c.WriteArrays([]arrow.Array{col}) }

// WriteArrays appends the rows of cols, in order: the runs of a sorted chunk, handed over as
// slices of the records they are in rather than copied into one array. The values handed to
// the column writer only at the end (or when a page's worth is held) may point into any of
// cols, which the caller keeps alive until this returns.
func (c *Column) WriteArrays(cols []arrow.Array) error {
	for _, col := range cols {
		root, err := c.bind(col)
		if err != nil {
			return err
		}
		if root.n.kind == leafKind {
			err = c.writeFlat(root, col.Len())
		} else {
			err = c.writeNested(root, col.Len())
		}
		if err != nil {
			return err
		}
	}
	for l := range c.vals {
		if err := c.flush(l); err != nil {
			return err
		}
	}
	return nil
}

// writeNested shreds rows of a nested column, handing each leaf's values on once a page's worth
// is held.
func (c *Column) writeNested(root *boundNode, rows int) error {
	for i := 0; i < rows; i++ {
		c.shred(root, i, 0, 0)
		for l := range c.vals {
			if len(c.vals[l]) >= flushValues || c.bytes[l] >= flushBytes {
				if err := c.flush(l); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// writeFlat is write for a top-level leaf column (most columns): one value a row, levels 0 and
// 0 or 1, without the walk of shred.
func (c *Column) writeFlat(b *boundNode, rows int) error {
	d := 0
	if b.n.optional {
		d = 1
	}
	nulls := b.n.optional && b.arr.NullN() > 0
	for i := 0; i < rows; i++ {
		if nulls && b.arr.IsNull(i) {
			c.vals[0] = append(c.vals[0], parquet.Value{}.Level(0, 0, 0))
		} else {
			v, size := b.value(i)
			c.vals[0] = append(c.vals[0], v.Level(0, d, 0))
			c.bytes[0] += size
		}
		if len(c.vals[0]) >= flushValues || c.bytes[0] >= flushBytes {
			if err := c.flush(0); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteValues appends whole rows given as parquet-go values already shredded (merge/pqdecode):
// this column's values of each row, rows in order, each row's values of the column's leaves
// (leaves first, first+1, ... of the whole schema) in leaf order, with their levels. The levels
// must be those of this column's schema: the values come from a file of the same Parquet schema.
func (c *Column) WriteValues(vals []parquet.Value, first int) error {
	if c.plan.Flat() {
		return c.writeFlatValues(vals, first)
	}
	for _, v := range vals {
		l := v.Column() - first
		if l < 0 || l >= len(c.vals) {
			return fmt.Errorf("parquet-go values: leaf %d outside the column's leaves %d-%d", v.Column(), first, first+len(c.vals)-1)
		}
		if l == 0 && v.RepetitionLevel() == 0 {
			// A row starts: every leaf holds whole rows, which may go to its column writer.
			for l := range c.vals {
				if len(c.vals[l]) >= flushValues || c.bytes[l] >= flushBytes {
					if err := c.flush(l); err != nil {
						return err
					}
				}
			}
		}
		c.vals[l] = append(c.vals[l], v.Level(v.RepetitionLevel(), v.DefinitionLevel(), l))
		c.bytes[l] += valueBytes(v)
	}
	for l := range c.vals {
		if err := c.flush(l); err != nil {
			return err
		}
	}
	return nil
}

// writeFlatValues is WriteValues for a flat column: one value a row, already with this column's
// levels, so the values go to the column writer as they are, in the pieces flush would hand it,
// without the copy that re-levels them. The column writer takes its own column index, not the
// values' (the leaf's in the whole schema); TestDecodersWriteTheSameRows compares these files
// with those of values re-levelled from Arrow.
func (c *Column) writeFlatValues(vals []parquet.Value, first int) error {
	for len(vals) > 0 {
		n, size := 0, 0
		for ; n < len(vals) && n < flushValues && size < flushBytes; n++ {
			if vals[n].Column() != first {
				return fmt.Errorf("parquet-go values: leaf %d, not the column's leaf %d", vals[n].Column(), first)
			}
			size += valueBytes(vals[n])
		}
		if err := c.hand(0, vals[:n], size); err != nil {
			return err
		}
		vals = vals[n:]
	}
	return nil
}

// valueBytes is the size of v's value, as leafValue counts it.
func valueBytes(v parquet.Value) int {
	if v.IsNull() {
		return 0
	}
	switch v.Kind() {
	case parquet.ByteArray, parquet.FixedLenByteArray:
		return len(v.ByteArray())
	case parquet.Boolean:
		return 1
	case parquet.Int32, parquet.Float:
		return 4
	}
	return 8
}

// flush hands leaf l's held rows to its column writer, which copies them.
func (c *Column) flush(l int) error {
	if len(c.vals[l]) == 0 {
		return nil
	}
	if err := c.hand(l, c.vals[l], c.bytes[l]); err != nil {
		return err
	}
	clear(c.vals[l]) // they point into the Arrow buffers
	c.vals[l], c.bytes[l] = c.vals[l][:0], 0
	return nil
}

// hand gives whole rows of leaf l, of size bytes of values, to its column writer.
func (c *Column) hand(l int, vals []parquet.Value, size int) error {
	if _, err := c.cols[l].WriteRowValues(vals); err != nil {
		return fmt.Errorf("parquet-go column writer: %w", err)
	}
	// parquet-go checks a dictionary against its limit only where it cuts a page, which for
	// dictionary indexes is every 64 Ki values: the dictionary of mostly distinct values (trace
	// ids) would grow to megabytes first. A page cut after each quarter limit's worth of values
	// keeps it within about a third past the limit (arrow-go: a batch of values past it).
	if c.plan.dict[l] {
		if c.grown[l] += size; c.grown[l] >= c.plan.dictBytes/4 {
			c.grown[l] = 0
			if err := c.cols[l].Flush(); err != nil {
				return fmt.Errorf("parquet-go column writer: %w", err)
			}
		}
	}
	return nil
}

// Finish writes the file's footer and returns it parsed.
func (c *Column) Finish() (*metadata.FileMetaData, error) {
	if err := c.w.Close(); err != nil {
		return nil, fmt.Errorf("parquet-go writer: %w", err)
	}
	md, err := footerOf(c.buf.Bytes())
	if err != nil {
		return nil, err
	}
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			if cc.MetaData != nil && cc.MetaData.Statistics != nil {
				dropLongBounds(&cc.MetaData.Statistics.MinValue, &cc.MetaData.Statistics.Min)
				dropLongBounds(&cc.MetaData.Statistics.MaxValue, &cc.MetaData.Statistics.Max)
			}
		}
	}
	return md, nil
}

// MaxStatBytes is arrow-go's default MaxStatsSize: a chunk's bound longer than this is left out
// of the footer (a few very long raw lines would otherwise make every reader parse them).
const MaxStatBytes = 4096

// dropLongBounds leaves out a chunk bound (and its deprecated twin) longer than MaxStatBytes,
// as arrow-go's writer does.
func dropLongBounds(v, deprecated *[]byte) {
	if len(*v) > MaxStatBytes || len(*deprecated) > MaxStatBytes {
		*v, *deprecated = nil, nil
	}
}

// Abort drops the column: nothing to release.
func (c *Column) Abort() {
	// Held values may point into the caller's Arrow buffers (WriteArrays failed midway): drop them.
	for l := range c.vals {
		clear(c.vals[l])
		c.vals[l] = c.vals[l][:0]
	}
}

// footerOf parses the footer of the Parquet file b.
func footerOf(b []byte) (*metadata.FileMetaData, error) {
	n := len(b)
	if n < 12 || string(b[n-4:]) != "PAR1" {
		return nil, errors.New("encoded column: not a Parquet file")
	}
	fl := int(binary.LittleEndian.Uint32(b[n-8:]))
	if fl <= 0 || fl > n-12 {
		return nil, fmt.Errorf("encoded column: footer length %d in a file of %d bytes", fl, n)
	}
	return metadata.NewFileMetaData(b[n-8-fl:n-8], nil)
}
