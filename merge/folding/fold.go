package folding

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Fold makes a rewrite fold the rows of its merged stream that share a time bucket and key
// values into one row (aggregate folding, docs/folding.md): the row's timestamp becomes the
// bucket's start and each aggregated column holds its function over the folded rows. The merged
// stream is in timestamp order, so only one bucket's groups are held at a time.
type Fold struct {
	// Keys are the columns whose values a folded row shares.
	Keys []string
	// Aggregates are the other columns and how they fold.
	Aggregates []Aggregate
	// Bucket is the fold bucket in microseconds; it divides a day, so a bucket never crosses a
	// day partition.
	Bucket int64
	// Tiers coarsen older rows: a row older than a tier's Before folds at the tier's bucket (the
	// first tier that holds, so list the oldest cutoff first).
	Tiers []FoldTier
	// MaxGroups bounds the groups one bucket holds; past it the groups fold so far are written
	// as partial rows (still correct: every function is associative). 0 = DefaultFoldMaxGroups.
	MaxGroups int
}

// FoldTier is a coarser bucket for the rows older than Before (microseconds of the timestamp).
type FoldTier struct {
	Before int64
	Bucket int64
}

// Aggregate is an aggregated column and its function.
type Aggregate struct {
	Column string
	Func   AggFunc
}

// AggFunc is how an aggregated column folds.
type AggFunc string

const (
	AggSum AggFunc = "sum"
	AggMin AggFunc = "min"
	AggMax AggFunc = "max"
	// AggCount is a column holding a count of events: folding adds the counts (an average is
	// stored as a sum and a count).
	AggCount AggFunc = "count"
)

// DefaultFoldMaxGroups is the groups a fold holds by default: at about 100 bytes a group with a
// few short keys, some 25 MB.
const DefaultFoldMaxGroups = 256 * 1024

// FoldStats says what a fold did.
type FoldStats struct {
	RowsIn, RowsOut int64
	// PartialFlushes counts the times MaxGroups forced out a bucket's groups early.
	PartialFlushes int64
}

// FoldableKeyType says whether a fold may key on a column of type t: the types delete
// predicates test (rowfilter.CheckType; TestFoldKeysAreFilterable keeps the two in step), so
// deletion requests work on a rollup's keys.
func FoldableKeyType(t arrow.DataType) error {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.BOOL:
		return nil
	}
	return fmt.Errorf("type %s is not accepted as a fold key: keys are string, integer or boolean columns", t)
}

// FoldableAggregateType says whether column type t can fold with f. Sums and counts need a
// 64-bit integer column: folding adds many rows' values, which a narrower column would wrap
// (a query's sum widens, so the folded table would disagree with it).
func FoldableAggregateType(t arrow.DataType, f AggFunc) error {
	switch f {
	case AggMin, AggMax:
		switch t.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64:
			return nil
		}
		return fmt.Errorf("type %s does not fold with %s: accepted: integer and floating-point columns", t, f)
	case AggSum:
		switch t.ID() {
		case arrow.INT64, arrow.FLOAT32, arrow.FLOAT64:
			return nil
		}
		return fmt.Errorf("type %s does not fold with sum: accepted: long, float and double columns (a narrower integer would wrap)", t)
	case AggCount:
		if t.ID() == arrow.INT64 {
			return nil
		}
		return fmt.Errorf("type %s does not hold a count: accepted: long columns (a narrower integer would wrap)", t)
	}
	return fmt.Errorf("function %q: accepted: sum, min, max, count", f)
}

// Compiled is a Fold bound to a schema (Compile).
type Compiled struct {
	f     Fold
	ts    int
	keys  []int     // schema indices
	aggs  []int     // schema indices
	funcs []AggFunc // per aggs
}

// Compile binds f to sc: every column of sc is the timestamp, a key or aggregated, once.
func Compile(f Fold, sc *arrow.Schema, tsName string) (*Compiled, error) {
	c := &Compiled{f: f}
	if f.Bucket <= 0 || (24*3600*1_000_000)%f.Bucket != 0 {
		return nil, fmt.Errorf("fold bucket %d us does not divide a day", f.Bucket)
	}
	// Tier cutoffs start a bucket of their tier and each tier's bucket is a multiple of the
	// finer ones after it, so bucket starts never decrease along the stream.
	c.f.Tiers = make([]FoldTier, len(f.Tiers))
	finer := f.Bucket
	for i := len(f.Tiers) - 1; i >= 0; i-- {
		t := f.Tiers[i]
		if t.Bucket <= 0 || (24*3600*1_000_000)%t.Bucket != 0 || t.Bucket%finer != 0 {
			return nil, fmt.Errorf("fold tier bucket %d us does not divide a day or is not a multiple of %d us", t.Bucket, finer)
		}
		if i > 0 && f.Tiers[i-1].Before > t.Before {
			return nil, fmt.Errorf("fold tiers: list the oldest cutoff first")
		}
		t.Before = floorTo(t.Before, t.Bucket)
		c.f.Tiers[i], finer = t, t.Bucket
	}
	if c.f.MaxGroups <= 0 {
		c.f.MaxGroups = DefaultFoldMaxGroups
	}
	role := make([]string, sc.NumFields())
	claim := func(name, what string) (int, error) {
		idx := sc.FieldIndices(name)
		if len(idx) != 1 {
			return 0, fmt.Errorf("fold %s column %q: the table has no such column", what, name)
		}
		if role[idx[0]] != "" {
			return 0, fmt.Errorf("fold column %q: both %s and %s", name, role[idx[0]], what)
		}
		role[idx[0]] = what
		return idx[0], nil
	}
	var err error
	if c.ts, err = claim(tsName, "timestamp"); err != nil {
		return nil, err
	}
	for _, k := range f.Keys {
		i, err := claim(k, "key")
		if err != nil {
			return nil, err
		}
		if err := FoldableKeyType(sc.Field(i).Type); err != nil {
			return nil, fmt.Errorf("fold key column %q: %w", k, err)
		}
		c.keys = append(c.keys, i)
	}
	for _, a := range f.Aggregates {
		i, err := claim(a.Column, "aggregated")
		if err != nil {
			return nil, err
		}
		if err := FoldableAggregateType(sc.Field(i).Type, a.Func); err != nil {
			return nil, fmt.Errorf("fold column %q: %w", a.Column, err)
		}
		c.aggs, c.funcs = append(c.aggs, i), append(c.funcs, a.Func)
	}
	for i, r := range role {
		if r == "" {
			return nil, fmt.Errorf("column %q is neither the timestamp, a fold key nor aggregated: a fold would not know what to keep of it", sc.Field(i).Name)
		}
	}
	return c, nil
}

// bucketStart is the start of the bucket of ts, after the tiers.
func (c *Compiled) bucketStart(ts int64) int64 {
	b := c.f.Bucket
	for _, t := range c.f.Tiers {
		if ts < t.Before {
			b = t.Bucket
			break
		}
	}
	return floorTo(ts, b)
}

// floorTo rounds ts down to a multiple of b.
func floorTo(ts, b int64) int64 {
	s := ts - ts%b
	if ts < 0 && ts%b != 0 {
		s -= b
	}
	return s
}

// Folder is the stream transform: it takes the merged stream's records in timestamp order and
// writes folded records to out.
type Folder struct {
	c      *Compiled
	sc     *arrow.Schema
	mem    memory.Allocator
	out    func(arrow.RecordBatch) error
	chunk  int
	stats  FoldStats
	bucket int64
	open   bool // bucket holds groups

	index  map[string]int // encoded key -> group
	keyEnc []string       // per group, its encoded key (for the output order)
	keyVal []keyColumn    // per key column, per group
	acc    []accColumn    // per aggregate, per group
	buf    []byte
}

type keyColumn struct {
	strs  []string
	ints  []int64
	bools []bool
	valid []bool
}

type accColumn struct {
	ints  []int64
	flts  []float64
	valid []bool
}

// NewFolder starts folding records of schema sc; chunk bounds the rows of one output record.
// Set its output with SetOut before the first Write.
func NewFolder(c *Compiled, sc *arrow.Schema, mem memory.Allocator, chunk int) *Folder {
	return &Folder{c: c, sc: sc, mem: mem, chunk: max(chunk, 1), index: map[string]int{},
		keyVal: make([]keyColumn, len(c.keys)), acc: make([]accColumn, len(c.aggs))}
}

// write folds rec's rows into the open bucket, writing each bucket as the stream passes it.
func (f *Folder) Write(rec arrow.RecordBatch) error {
	tsCol, ok := rec.Column(f.c.ts).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("fold: timestamp column is %s", rec.Column(f.c.ts).DataType())
	}
	n := int(rec.NumRows())
	f.stats.RowsIn += int64(n)
	for i := 0; i < n; i++ {
		b := f.c.bucketStart(int64(tsCol.Value(i)))
		if f.open && b != f.bucket {
			if b < f.bucket {
				return fmt.Errorf("fold: stream not in timestamp order (bucket %d after %d)", b, f.bucket)
			}
			if err := f.Flush(); err != nil {
				return err
			}
		}
		f.bucket, f.open = b, true
		f.buf = f.encodeKey(rec, i, f.buf[:0])
		g, ok := f.index[string(f.buf)]
		if !ok {
			if len(f.keyEnc) >= f.c.f.MaxGroups {
				f.stats.PartialFlushes++
				if err := f.Flush(); err != nil {
					return err
				}
				f.bucket, f.open = b, true
			}
			g = f.newGroup(rec, i)
		}
		if err := f.accumulate(rec, i, g); err != nil {
			return err
		}
	}
	return nil
}

// encodeKey appends row i's key values to buf so that byte order is key order (column by
// column; a null first, then the values in their order): the encoding both identifies a group
// and sorts the bucket's rows for output.
func (f *Folder) encodeKey(rec arrow.RecordBatch, i int, buf []byte) []byte {
	for _, k := range f.c.keys {
		a := rec.Column(k)
		if a.IsNull(i) {
			buf = append(buf, 0)
			continue
		}
		buf = append(buf, 1)
		switch v := a.(type) {
		case *array.String:
			buf = appendOrderedString(buf, v.Value(i))
		case *array.LargeString:
			buf = appendOrderedString(buf, v.Value(i))
		case *array.Boolean:
			if v.Value(i) {
				buf = append(buf, 1)
			} else {
				buf = append(buf, 0)
			}
		default:
			// Big-endian with the sign bit flipped, so byte order is numeric order.
			buf = binary.BigEndian.AppendUint64(buf, uint64(intValue(a, i))^(1<<63))
		}
	}
	return buf
}

// appendOrderedString appends s so that byte order is string order and no encoding is a
// prefix of another: a 0 byte is escaped as 0 0xff and the string ends with 0 0 (a length
// prefix would sort by length first).
func appendOrderedString(buf []byte, s string) []byte {
	for j := 0; j < len(s); j++ {
		if s[j] == 0 {
			buf = append(buf, 0, 0xff)
		} else {
			buf = append(buf, s[j])
		}
	}
	return append(buf, 0, 0)
}

func (f *Folder) newGroup(rec arrow.RecordBatch, i int) int {
	g := len(f.keyEnc)
	key := string(f.buf)
	f.index[key] = g
	f.keyEnc = append(f.keyEnc, key)
	for j, k := range f.c.keys {
		kc := &f.keyVal[j]
		a := rec.Column(k)
		kc.valid = append(kc.valid, !a.IsNull(i))
		switch v := a.(type) {
		case *array.String:
			// Value is a view into the record's buffer, which is released (and may be reused)
			// after the chunk while the group lives on: keep a copy.
			kc.strs = append(kc.strs, strings.Clone(v.Value(i)))
		case *array.LargeString:
			kc.strs = append(kc.strs, strings.Clone(v.Value(i)))
		case *array.Boolean:
			kc.bools = append(kc.bools, !a.IsNull(i) && v.Value(i))
		default:
			if a.IsNull(i) {
				kc.ints = append(kc.ints, 0)
			} else {
				kc.ints = append(kc.ints, intValue(a, i))
			}
		}
	}
	for j := range f.c.aggs {
		ac := &f.acc[j]
		ac.ints, ac.flts, ac.valid = append(ac.ints, 0), append(ac.flts, 0), append(ac.valid, false)
	}
	return g
}

// accumulate folds row i of rec into group g; nulls are left out (an all-null group stays null).
// A long sum that would overflow fails the fold rather than wrap (promise 11).
func (f *Folder) accumulate(rec arrow.RecordBatch, i, g int) error {
	for j, col := range f.c.aggs {
		a := rec.Column(col)
		if a.IsNull(i) {
			continue
		}
		ac := &f.acc[j]
		fn := f.c.funcs[j]
		if isFloat(a.DataType()) {
			x := floatValue(a, i)
			switch {
			case !ac.valid[g]:
				ac.flts[g] = x
			case fn == AggSum:
				ac.flts[g] += x
			case fn == AggMin:
				ac.flts[g] = math.Min(ac.flts[g], x)
			case fn == AggMax:
				ac.flts[g] = math.Max(ac.flts[g], x)
			}
		} else {
			x := intValue(a, i)
			switch {
			case !ac.valid[g]:
				ac.ints[g] = x
			case fn == AggSum || fn == AggCount:
				y := ac.ints[g] + x
				if (x > 0 && y < ac.ints[g]) || (x < 0 && y > ac.ints[g]) {
					return fmt.Errorf("fold: %s of column %q overflows a long", fn, f.sc.Field(col).Name)
				}
				ac.ints[g] = y
			case fn == AggMin:
				ac.ints[g] = min(ac.ints[g], x)
			case fn == AggMax:
				ac.ints[g] = max(ac.ints[g], x)
			}
		}
		ac.valid[g] = true
	}
	return nil
}

// flush writes the open bucket's groups, in key order, at the bucket's start, and empties it. A
// partial flush (MaxGroups) ends one sorted run: the bucket's later groups follow in another.
func (f *Folder) Flush() error {
	if !f.open || len(f.keyEnc) == 0 {
		f.open = false
		return nil
	}
	order := make([]int, len(f.keyEnc))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case f.keyEnc[a] < f.keyEnc[b]:
			return -1
		case f.keyEnc[a] > f.keyEnc[b]:
			return 1
		}
		return 0
	})
	for lo := 0; lo < len(order); lo += f.chunk {
		rec, err := f.build(order[lo:min(lo+f.chunk, len(order))])
		if err != nil {
			return err
		}
		f.stats.RowsOut += rec.NumRows()
		err = f.out(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	clear(f.index)
	f.keyEnc = f.keyEnc[:0]
	for j := range f.keyVal {
		kc := &f.keyVal[j]
		kc.strs, kc.ints, kc.bools, kc.valid = kc.strs[:0], kc.ints[:0], kc.bools[:0], kc.valid[:0]
	}
	for j := range f.acc {
		ac := &f.acc[j]
		ac.ints, ac.flts, ac.valid = ac.ints[:0], ac.flts[:0], ac.valid[:0]
	}
	f.open = false
	return nil
}

// build makes one output record of groups gs.
func (f *Folder) build(gs []int) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, f.sc.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for fi, fl := range f.sc.Fields() {
		b := array.NewBuilder(f.mem, fl.Type)
		b.Reserve(len(gs))
		switch {
		case fi == f.c.ts:
			tb := b.(*array.TimestampBuilder)
			for range gs {
				tb.UnsafeAppend(arrow.Timestamp(f.bucket))
			}
		default:
			if j := slices.Index(f.c.keys, fi); j >= 0 {
				kc := &f.keyVal[j]
				for _, g := range gs {
					if !kc.valid[g] {
						b.AppendNull()
						continue
					}
					switch {
					case kc.strs != nil:
						appendString(b, kc.strs[g])
					case kc.bools != nil:
						b.(*array.BooleanBuilder).Append(kc.bools[g])
					default:
						appendInt(b, kc.ints[g])
					}
				}
			} else {
				j := slices.Index(f.c.aggs, fi)
				ac := &f.acc[j]
				float := isFloat(fl.Type)
				for _, g := range gs {
					switch {
					case !ac.valid[g]:
						b.AppendNull()
					case float:
						appendFloat(b, ac.flts[g])
					default:
						appendInt(b, ac.ints[g])
					}
				}
			}
		}
		cols[fi] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(f.sc, cols, int64(len(gs)))
	return rec, nil
}

func intValue(a arrow.Array, i int) int64 {
	switch v := a.(type) {
	case *array.Int8:
		return int64(v.Value(i))
	case *array.Int16:
		return int64(v.Value(i))
	case *array.Int32:
		return int64(v.Value(i))
	case *array.Int64:
		return v.Value(i)
	}
	return 0
}

func floatValue(a arrow.Array, i int) float64 {
	switch v := a.(type) {
	case *array.Float32:
		return float64(v.Value(i))
	case *array.Float64:
		return v.Value(i)
	}
	return 0
}

func isFloat(t arrow.DataType) bool { return t.ID() == arrow.FLOAT32 || t.ID() == arrow.FLOAT64 }

func appendInt(b array.Builder, x int64) {
	switch bb := b.(type) {
	case *array.Int8Builder:
		bb.Append(int8(x))
	case *array.Int16Builder:
		bb.Append(int16(x))
	case *array.Int32Builder:
		bb.Append(int32(x))
	case *array.Int64Builder:
		bb.Append(x)
	}
}

func appendFloat(b array.Builder, x float64) {
	switch bb := b.(type) {
	case *array.Float32Builder:
		bb.Append(float32(x))
	case *array.Float64Builder:
		bb.Append(x)
	}
}

func appendString(b array.Builder, s string) {
	switch bb := b.(type) {
	case *array.StringBuilder:
		bb.Append(s)
	case *array.LargeStringBuilder:
		bb.Append(s)
	}
}

// CheckFold says whether f can fold tables of schema sc (timestamp column tsName): every column
// is the timestamp, a key or aggregated, the types fit, the buckets divide a day.
func CheckFold(f Fold, sc *arrow.Schema, tsName string) error {
	_, err := Compile(f, sc, tsName)
	return err
}

// SetOut sets where the folded records go; out must not keep a record past its return without
// retaining it.
func (f *Folder) SetOut(out func(arrow.RecordBatch) error) { f.out = out }

// Stats says what the fold did so far.
func (f *Folder) Stats() FoldStats { return f.stats }
