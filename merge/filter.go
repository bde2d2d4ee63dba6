package merge

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/merge/writer"
)

// rowMatcher is a rowfilter.Filter bound to a schema, with values parsed once.
type rowMatcher struct {
	preds      []boundPredicate
	firstMatch bool
	deleted    []int64 // rows dropped, per predicate (a row counts for the first that matches)
}

type boundPredicate struct {
	cols     []boundColumn
	from, to *int64
	keep     bool
}

type boundColumn struct {
	idx   int // in the schema the batches are conformed to
	strs  map[string]struct{}
	ints  map[int64]struct{}
	bools map[bool]struct{}
}

// compileFilter binds f to sc; it fails on a column sc lacks, a type
// rowfilter.CheckType refuses, or a value that does not parse as the column's type.
func compileFilter(f *rowfilter.Filter, sc *arrow.Schema) (*rowMatcher, error) {
	m := &rowMatcher{deleted: make([]int64, len(f.Predicates)), firstMatch: f.FirstMatch}
	for pi, p := range f.Predicates {
		bp, err := compilePredicate(p, sc)
		if err != nil {
			return nil, fmt.Errorf("delete predicate %d: %w", pi, err)
		}
		m.preds = append(m.preds, bp)
	}
	return m, nil
}

func compilePredicate(p rowfilter.Predicate, sc *arrow.Schema) (boundPredicate, error) {
	bp := boundPredicate{from: p.From, to: p.To, keep: p.Keep}
	for _, c := range p.Columns {
		idx := sc.FieldIndices(c.Column)
		if len(idx) == 0 {
			return bp, fmt.Errorf("no column %q", c.Column)
		}
		typ := sc.Field(idx[0]).Type
		if err := rowfilter.CheckType(typ); err != nil {
			return bp, fmt.Errorf("column %q: %w", c.Column, err)
		}
		bc := boundColumn{idx: idx[0]}
		for _, v := range c.Values {
			switch typ.ID() {
			case arrow.STRING, arrow.LARGE_STRING:
				if bc.strs == nil {
					bc.strs = map[string]struct{}{}
				}
				bc.strs[v] = struct{}{}
			case arrow.BOOL:
				b, err := strconv.ParseBool(v)
				if err != nil {
					// Not the value, nor strconv's error quoting it: it may be the personal data a
					// deletion removes, and this error reaches logs and the status pages.
					return bp, fmt.Errorf("column %q (boolean): a value is not a boolean; accepted: true, false", c.Column)
				}
				if bc.bools == nil {
					bc.bools = map[bool]struct{}{}
				}
				bc.bools[b] = struct{}{}
			default:
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return bp, fmt.Errorf("column %q (%s): a value is not an integer; accepted: a decimal integer", c.Column, typ)
				}
				if bc.ints == nil {
					bc.ints = map[int64]struct{}{}
				}
				bc.ints[n] = struct{}{}
			}
		}
		bp.cols = append(bp.cols, bc)
	}
	return bp, nil
}

// matches reports which predicate (index) matches row i, or -1.
func (m *rowMatcher) matches(rec arrow.RecordBatch, ts []int64, i int) int {
next:
	for pi, p := range m.preds {
		inRange := !(p.from != nil && ts[i] < *p.from || p.to != nil && ts[i] >= *p.to)
		if !m.firstMatch && (p.keep || !inRange) {
			continue
		}
		for _, c := range p.cols {
			if !c.holds(rec.Column(c.idx), i) {
				continue next
			}
		}
		if p.keep || !inRange {
			return -1 // FirstMatch: the row's class keeps it
		}
		return pi
	}
	return -1
}

func (c *boundColumn) holds(a arrow.Array, i int) bool {
	if a.IsNull(i) {
		return false
	}
	var ok bool
	switch v := a.(type) {
	case *array.String:
		_, ok = c.strs[v.Value(i)]
	case *array.LargeString:
		_, ok = c.strs[v.Value(i)]
	case *array.Boolean:
		_, ok = c.bools[v.Value(i)]
	case *array.Int8:
		_, ok = c.ints[int64(v.Value(i))]
	case *array.Int16:
		_, ok = c.ints[int64(v.Value(i))]
	case *array.Int32:
		_, ok = c.ints[int64(v.Value(i))]
	case *array.Int64:
		_, ok = c.ints[v.Value(i)]
	}
	return ok
}

// apply drops b's matching rows and counts them. It keeps b as is when no row
// matches; otherwise it releases b's record and returns the kept rows, copied
// run by run (deletions are usually a few runs of one user or service).
func (m *rowMatcher) apply(b input.Batch, sc *arrow.Schema, mem memory.Allocator) (input.Batch, error) {
	n := len(b.TS)
	var runs [][2]int  // kept [from, to)
	var counts []int64 // per predicate, added to m.deleted once per batch
	start, dropped := 0, 0
	for i := 0; i < n; i++ {
		p := m.matches(b.Rec, b.TS, i)
		if p < 0 {
			continue
		}
		if counts == nil {
			counts = make([]int64, len(m.deleted))
		}
		counts[p]++
		dropped++
		if i > start {
			runs = append(runs, [2]int{start, i})
		}
		start = i + 1
	}
	if dropped == 0 {
		return b, nil
	}
	// The k-way path filters each input in its own prefetch goroutine.
	for p, c := range counts {
		atomic.AddInt64(&m.deleted[p], c)
	}
	if start < n {
		runs = append(runs, [2]int{start, n})
	}
	defer b.Rec.Release()
	out := input.Batch{TS: make([]int64, 0, n-dropped)}
	if len(runs) == 0 {
		out.Rec = b.Rec.NewSlice(0, 0)
		return out, nil
	}
	pieces := make([]arrow.RecordBatch, len(runs))
	for i, r := range runs {
		pieces[i] = b.Rec.NewSlice(int64(r[0]), int64(r[1]))
		out.TS = append(out.TS, b.TS[r[0]:r[1]]...)
	}
	defer func() {
		for _, p := range pieces {
			p.Release()
		}
	}()
	if len(pieces) == 1 {
		pieces[0].Retain()
		out.Rec = pieces[0]
		return out, nil
	}
	rec, err := input.ConcatRecords(sc, pieces, mem)
	if err != nil {
		return input.Batch{}, err
	}
	out.Rec = rec
	return out, nil
}

// filterSource drops the matching rows of a full-width source's batches.
type filterSource struct {
	src    input.Source
	m      *rowMatcher
	schema *arrow.Schema
	mem    memory.Allocator
}

func (s *filterSource) Next(ctx context.Context) (input.Batch, bool, error) {
	b, ok, err := s.src.Next(ctx)
	if err != nil || !ok {
		return b, ok, err
	}
	b, err = s.m.apply(b, s.schema, s.mem)
	return b, err == nil, err
}

func (s *filterSource) Close() error { return s.src.Close() }

// filtered wraps src in the rewrite's row filter, if it has one: the one hook
// the merge paths need for delete tasks.
func (o *RewriteOptions) filtered(src input.Source, schema *arrow.Schema) input.Source {
	if o.matcher == nil {
		return src
	}
	return &filterSource{src: src, m: o.matcher, schema: schema, mem: o.Allocator}
}

// CountMatches reads only the timestamp column and the columns f tests from
// the data file at path and returns, per predicate, how many rows it would
// drop (a row counts for the first predicate that matches), and the file's
// row count. schema is the table's Arrow schema; columns a file lacks are null.
func CountMatches(ctx context.Context, fs icebergio.IO, path string, schema *arrow.Schema, tsName string, f *rowfilter.Filter, mem memory.Allocator) (perPredicate []int64, rows int64, err error) {
	defer writer.RecoverAbort(&err, nil)
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	need := map[string]bool{tsName: true}
	for _, p := range f.Predicates {
		for _, c := range p.Columns {
			need[c.Column] = true
		}
	}
	var fields []arrow.Field
	for _, fl := range schema.Fields() {
		if need[fl.Name] {
			fields = append(fields, fl)
		}
	}
	sub := arrow.NewSchema(fields, nil)
	m, err := compileFilter(f, sub)
	if err != nil {
		return nil, 0, err
	}
	in, err := input.Open(fs, path, mem, kwayBatchRows(1))
	if err != nil {
		return nil, 0, err
	}
	defer in.Close()
	src, err := input.NewPQSource(ctx, in, sub, tsName, false, mem)
	if err != nil {
		return nil, 0, err
	}
	defer src.Close()
	for {
		b, ok, err := src.Next(ctx)
		if err != nil {
			return nil, 0, input.NewError("reading input", path, err)
		}
		if !ok {
			break
		}
		rows += int64(len(b.TS))
		for i := range b.TS {
			if p := m.matches(b.Rec, b.TS, i); p >= 0 {
				m.deleted[p]++
			}
		}
		b.Rec.Release()
	}
	return m.deleted, rows, nil
}

// FilterRecord returns rec without the rows f drops, and how many it dropped per predicate (nil
// when none). tsName is rec's timestamp column (microseconds). The result is rec itself, retained,
// when no row matched; the caller releases rec and the result.
func FilterRecord(rec arrow.RecordBatch, tsName string, f *rowfilter.Filter, mem memory.Allocator) (arrow.RecordBatch, []int64, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	m, err := compileFilter(f, rec.Schema())
	if err != nil {
		return nil, nil, err
	}
	idx := rec.Schema().FieldIndices(tsName)
	if len(idx) == 0 {
		return nil, nil, fmt.Errorf("no timestamp column %q", tsName)
	}
	col, ok := rec.Column(idx[0]).(*array.Timestamp)
	if !ok {
		return nil, nil, fmt.Errorf("column %q is %s, not a timestamp", tsName, rec.Column(idx[0]).DataType())
	}
	ts := make([]int64, col.Len())
	for i := range ts {
		if col.IsNull(i) {
			// The table's timestamp is required; a null one would count as 1970 here.
			return nil, nil, fmt.Errorf("row %d has a null %s: rows need a time", i, tsName)
		}
		ts[i] = int64(col.Value(i))
	}
	rec.Retain()
	out, err := m.apply(input.Batch{Rec: rec, TS: ts}, rec.Schema(), mem)
	if err != nil {
		return nil, nil, err
	}
	var dropped []int64
	for _, n := range m.deleted {
		if n > 0 {
			dropped = m.deleted
			break
		}
	}
	return out.Rec, dropped, nil
}

// Matcher is a rowfilter.Filter bound to a schema for readers that keep the rows it matches (the WAL
// buffer's query filter) where a delete-task rewrite drops them.
type Matcher struct {
	m  *rowMatcher
	ts int // index of the timestamp column, microseconds
}

// CompileFilter binds f to sc, whose column tsName is the timestamp in microseconds. It fails as
// the rewrite's binding fails: a column sc lacks, a type rowfilter.CheckType refuses, a value that
// does not parse as the column's type.
func CompileFilter(f *rowfilter.Filter, sc *arrow.Schema, tsName string) (*Matcher, error) {
	idx := sc.FieldIndices(tsName)
	if len(idx) != 1 {
		return nil, fmt.Errorf("filter: schema has %d columns named %q", len(idx), tsName)
	}
	if ts, ok := sc.Field(idx[0]).Type.(*arrow.TimestampType); !ok || ts.Unit != arrow.Microsecond {
		return nil, fmt.Errorf("filter: column %q has type %s, want timestamp[us]", tsName, sc.Field(idx[0]).Type)
	}
	m := &rowMatcher{deleted: make([]int64, len(f.Predicates))}
	for pi, p := range f.Predicates {
		bp, err := compilePredicate(p, sc)
		if err != nil && len(f.Predicates) > 1 {
			return nil, fmt.Errorf("predicate %d: %w", pi, err)
		}
		if err != nil {
			return nil, err
		}
		m.preds = append(m.preds, bp)
	}
	return &Matcher{m: m, ts: idx[0]}, nil
}

// Keep returns the rows of rec (of the schema the matcher was compiled for) that any predicate
// matches, in their order; rec itself, retained, when every row matches. The caller releases
// the result.
func (m *Matcher) Keep(ctx context.Context, rec arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	n := int(rec.NumRows())
	hits := m.Match(rec)
	mb := array.NewBooleanBuilder(mem)
	defer mb.Release()
	mb.AppendValues(hits, nil)
	kept := 0
	for _, hit := range hits {
		if hit {
			kept++
		}
	}
	if kept == n {
		rec.Retain()
		return rec, nil
	}
	mask := mb.NewBooleanArray()
	defer mask.Release()
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, mask, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("filter rows: %w", err)
	}
	return out, nil
}

// Match reports, per row of rec (of the schema the matcher was compiled for), whether some
// predicate matches it: the rows Keep keeps.
func (m *Matcher) Match(rec arrow.RecordBatch) []bool {
	n := int(rec.NumRows())
	col := rec.Column(m.ts).(*array.Timestamp)
	ts := make([]int64, n)
	for i := range ts {
		ts[i] = int64(col.Value(i))
	}
	hits := make([]bool, n)
	for i := range hits {
		hits[i] = m.m.matches(rec, ts, i) >= 0
	}
	return hits
}
