package search

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/search/ordered"
)

// ioCount counts what reads through a countingIO cost: bytes and requests. On S3, iceberg-go's
// FileIO (v0.7.0 blobfs) opens a file with a whole-object GET (NewReader, length -1: the size
// comes from its response; the body is left unread and closed) and serves every ReadAt with one
// ranged GET, so an open and each read are one request each.
type ioCount struct {
	bytes, requests atomic.Int64
}

// countingIO is a FileIO whose files count their reads.
type countingIO struct {
	icebergio.IO
	n             *ioCount
	openIsRequest bool // the FileIO's Open is a request (S3)
}

func (c countingIO) Open(name string) (icebergio.File, error) {
	f, err := c.IO.Open(name)
	if c.openIsRequest {
		c.n.requests.Add(1)
	}
	if err != nil {
		return nil, err
	}
	return &countingFile{File: f, n: c.n}, nil
}

type countingFile struct {
	icebergio.File
	n *ioCount
}

func (f *countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.bytes.Add(int64(n))
	f.n.requests.Add(1)
	return n, err
}

func (f *countingFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.n.bytes.Add(int64(n))
	f.n.requests.Add(1)
	return n, err
}

// readShape is how one stream reads: rows per decoded batch and the read-ahead per column.
type readShape struct {
	batchRows int64
	bufBytes  int64
}

// pageBytes is the data page size merge writes: a Parquet column reader holds about one
// decompressed page of each column it reads, whatever the batch length.
const pageBytes = 256 << 10

// shapeFor divides the memory budget among the streams the merge may hold open. Of a stream's
// share, the reader's pages (pageBytes a column) come first: they do not shrink with the batch.
// What is left holds one slice of decoded rows (batchRows, at rowBytes a row) of the tested
// columns, one of the other printed columns, their filtered copies and the record beside them:
// about five slices, so a slice gets a sixth; the read-ahead an eighth, split over the columns.
// Within fixed bounds: a budget below the pages' floor gets the smallest slices.
func shapeFor(budget int64, streams, columns int, rowBytes int64) readShape {
	share := budget / int64(max(streams, 1))
	rest := max(share-int64(max(columns, 1))*pageBytes, 0)
	s := readShape{
		batchRows: clamp(rest/6/max(rowBytes, 1), 256, 64<<10),
		bufBytes:  clamp(rest/8/int64(max(columns, 1)), 16<<10, 1<<20),
	}
	return s
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), hi) }

// fileSource opens one data file at a time for the merge.
type fileSource struct {
	c        *compiled
	fsys     countingIO
	registry puffinidx.Registry // nil when metadata is skipped
	skipMeta bool
	mem      memory.Allocator
	shape    readShape
	ex       *Explain
	// dropKey hides footer entries of a file (tests: every mix of present and absent metadata
	// over the same rows).
	dropKey func(path, key string) bool
	// editFooter changes a file's footer entries before they are decoded (tests: entries that do
	// not describe the file).
	editFooter func(path string, kv map[string]string)
}

// open reads path's footer and decides the footer and row-group stages; nil when the file is
// pruned whole.
func (fs *fileSource) open(ctx context.Context, path string) (ordered.Stream, error) {
	before := fs.fsys.n.snapshot()
	f, err := fs.fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", path, err)
	}
	props := parquet.NewReaderProperties(fs.mem)
	props.BufferedStreamEnabled = true
	props.BufferSize = fs.shape.bufBytes
	pf, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("read Parquet footer of %s: %w", path, err)
	}
	closeFile := pf.Close // it closes f too
	md := pf.MetaData()
	facts, err := fs.facts(path, md)
	if err != nil {
		_ = closeFile()
		return nil, err
	}
	reason := pruneFile(fs.c, facts)
	var rgReasons []Reason
	if reason == notPruned {
		rgReasons = pruneRowGroups(fs.c, facts)
		// Puffin sidecars only for what the footer kept, weighed against the row groups left.
		if fs.puffinPostings(path, md, facts, rgReasons) {
			if reason = pruneFile(fs.c, facts); reason == notPruned {
				rgReasons = pruneRowGroups(fs.c, facts)
			}
		}
	}
	fs.ex.footerRead(fs.fsys.n.snapshot().sub(before))
	if reason != notPruned {
		fs.ex.Files.prune(reason)
		return nil, closeFile()
	}
	fs.ex.Files.Read++
	var read []int
	for rg, r := range rgReasons {
		fs.ex.RowGroups.Considered++
		if r != notPruned {
			fs.ex.RowGroups.prune(r)
			continue
		}
		read = append(read, rg)
	}
	if fs.c.desc {
		slices.Reverse(read)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: fs.shape.batchRows}, fs.mem)
	if err != nil {
		_ = closeFile()
		return nil, fmt.Errorf("read Arrow schema of %s: %w", path, err)
	}
	// A nil column list would read every column: a file without the other printed columns is read
	// in one phase.
	other := leaves(md, minus(fs.c.output, fs.c.tested))
	return &fileStream{fs: fs, path: path, closeFile: closeFile, fr: fr, rgs: read,
		testLeaves: leaves(md, fs.c.tested), otherLeaves: other, onePhase: len(other) == 0,
		lastTs: lastStart(fs.c.desc)}, nil
}

func lastStart(desc bool) int64 {
	if desc {
		return maxTime
	}
	return minTime
}

// facts gathers what the footer stage decides on: the footer's search metadata, the row groups
// and, for --where columns with an inverted index, the matching rows.
func (fs *fileSource) facts(path string, md *metadata.FileMetaData) (*fileFacts, error) {
	f := &fileFacts{postings: map[string][]uint32{}}
	if !fs.skipMeta && fs.dropKey == nil && fs.editFooter == nil {
		// A malformed entry is absent ("maybe"): DecodeFooter's error only lists them.
		f.footer, _ = writer.DecodeFooter(md)
	} else if !fs.skipMeta {
		kv := map[string]string{}
		for _, e := range md.KeyValueMetadata().Keys() {
			if v := md.KeyValueMetadata().FindValue(e); v != nil && (fs.dropKey == nil || !fs.dropKey(path, e)) {
				kv[e] = *v
			}
		}
		if fs.editFooter != nil {
			fs.editFooter(path, kv)
		}
		f.footer, _ = index.Decode(kv)
	}
	tsCol := md.Schema.ColumnIndexByName(fs.c.tsColumn)
	var first int64
	for i := 0; i < md.NumRowGroups(); i++ {
		rg := md.RowGroup(i)
		g := rowGroupFacts{firstRow: first, rows: rg.NumRows()}
		first += g.rows
		if tsCol >= 0 && isMicros(md, tsCol) {
			g.minTs, g.maxTs, g.hasBounds = timestampBounds(rg, tsCol)
		}
		f.rowGroups = append(f.rowGroups, g)
	}
	for _, w := range fs.c.where {
		if md.Schema.ColumnIndexByName(w.Column) < 0 {
			f.missing = append(f.missing, w.Column)
			continue
		}
		if fs.skipMeta {
			continue
		}
		ix, ok := f.footer.Inverted(w.Column)
		if !ok {
			continue
		}
		f.postings[w.Column] = lookup(fs.c, ix, w)
	}
	return f, nil
}

// lookup returns the rows of ix whose value is one of w's.
func lookup(c *compiled, ix *index.Inverted, w rows.Condition) []uint32 {
	var ids []uint32
	for _, v := range w.Values {
		ids = append(ids, ix.Lookup(indexTerm(c.filterSchema, w.Column, v))...)
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// puffinPostings adds the postings of --where columns without a footer index from registered
// Puffin sidecars, for a file the footer stage kept; it reports whether it added any. A blob is
// read only when it is smaller than scanning the tested columns of the row groups still kept.
func (fs *fileSource) puffinPostings(path string, md *metadata.FileMetaData, f *fileFacts, rgReasons []Reason) bool {
	if fs.skipMeta || fs.registry[path].Sidecars == nil {
		return false
	}
	var kept []int
	for rg, r := range rgReasons {
		if r == notPruned {
			kept = append(kept, rg)
		}
	}
	if len(kept) == 0 {
		return false
	}
	scan := testedBytes(md, fs.c.tested, kept)
	added := false
	for _, w := range fs.c.where {
		if _, ok := f.postings[w.Column]; ok {
			continue
		}
		if ix := fs.inverted(path, w.Column, scan); ix != nil {
			f.postings[w.Column] = lookup(fs.c, ix, w)
			added = true
		}
	}
	return added
}

// inverted returns the file's index of column from a registered Puffin sidecar, else nil (scan).
// A sidecar's index is read only when its blob is smaller than scanBytes, what scanning the tested
// columns costs: an index of a nearly unique column can be larger than the column itself, and
// reading it would cost more than it saves.
func (fs *fileSource) inverted(path, column string, scanBytes int64) *index.Inverted {
	for _, sc := range fs.registry[path].Sidecars {
		if !slices.Contains(sc.Columns, column) {
			continue
		}
		ix, _, err := puffinidx.ReadSidecarUpTo(fs.fsys, sc.Path, path, column, max(scanBytes, 1))
		if err != nil {
			// A sidecar we cannot read costs pruning, never rows: scan the file.
			fs.ex.Warnings = append(fs.ex.Warnings, err.Error())
			return nil
		}
		if ix == nil {
			fs.ex.IndexesNotRead++
		} else {
			fs.ex.PuffinIndexesRead++
		}
		return ix
	}
	return nil
}

// testedBytes is what reading the tested columns of row groups rgs costs (compressed chunks).
func testedBytes(md *metadata.FileMetaData, tested []string, rgs []int) int64 {
	cols := leaves(md, tested)
	var n int64
	for _, i := range rgs {
		rg := md.RowGroup(i)
		for _, c := range cols {
			if cc, err := rg.ColumnChunk(c); err == nil {
				n += cc.TotalCompressedSize()
			}
		}
	}
	return n
}

// indexTerm is a condition value as the inverted index holds it: strings as is, integers and
// booleans as Arrow prints them.
func indexTerm(sc *arrow.Schema, column, v string) string {
	idx := sc.FieldIndices(column)
	if len(idx) != 1 {
		return v
	}
	switch sc.Field(idx[0]).Type.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case arrow.BOOL:
		if b, err := strconv.ParseBool(v); err == nil {
			return strconv.FormatBool(b)
		}
	}
	return v
}

// timestampBounds reads a row group's timestamp statistics (µs; siglake writes MICROS).
func timestampBounds(rg *metadata.RowGroupMetaData, col int) (lo, hi int64, ok bool) {
	cc, err := rg.ColumnChunk(col)
	if err != nil {
		return 0, 0, false
	}
	if set, err := cc.StatsSet(); err != nil || !set {
		return 0, 0, false
	}
	st, err := cc.Statistics()
	if err != nil || st == nil || !st.HasMinMax() {
		return 0, 0, false
	}
	is, ok := st.(*metadata.Int64Statistics)
	if !ok {
		return 0, 0, false
	}
	return is.Min(), is.Max(), true
}

// isMicros reports whether leaf column col is a timestamp in microseconds (what siglake writes;
// other units' statistics are not used).
func isMicros(md *metadata.FileMetaData, col int) bool {
	lt, ok := md.Schema.Column(col).LogicalType().(*schema.TimestampLogicalType)
	return ok && lt.TimeUnit() == schema.TimeUnitMicros
}

// leaves lists the Parquet leaf columns of the top-level columns in names that the file has.
func leaves(md *metadata.FileMetaData, names []string) []int {
	var out []int
	for i := 0; i < md.Schema.NumColumns(); i++ {
		if p := md.Schema.Column(i).ColumnPath(); len(p) > 0 && slices.Contains(names, p[0]) {
			out = append(out, i)
		}
	}
	return out
}

// fileStream reads the row groups a file kept, in scan order, and evaluates their rows.
type fileStream struct {
	fs        *fileSource
	path      string
	closeFile func() error
	fr        *pqarrow.FileReader
	rgs       []int // left to read, in scan order
	// testLeaves are the leaf columns of the predicate, otherLeaves those of the printed columns
	// it does not test; with onePhase there are none, so the first read is the only one.
	testLeaves, otherLeaves []int
	onePhase                bool
	produced                int64 // rows handed to the merge
	lastTs                  int64 // the previous slice's edge in scan order: files must be sorted
	cur                     *rowGroupRead
	// matcher is the query's filter bound to this file's record schema.
	matcher       *merge.Matcher
	matcherSchema *arrow.Schema
}

// rowGroupRead is the row group a stream is reading, slice by slice: a stream holds one slice of
// shape.batchRows rows at a time, whatever the row group's length, so the streams' decoded memory
// follows the budget. Descending takes the slices from the last, seeking to each.
type rowGroupRead struct {
	rg              int
	slices          []int64 // first rows of the slices left, in scan order
	test, other     pqarrow.RecordReader
	testAt, otherAt int64 // the row each reader is at
}

func (r *rowGroupRead) release() {
	if r.test != nil {
		r.test.Release()
	}
	if r.other != nil {
		r.other.Release()
	}
}

func (s *fileStream) Next(ctx context.Context) (*ordered.Batch, error) {
	for s.remaining() != 0 {
		if s.cur == nil {
			if len(s.rgs) == 0 {
				return nil, nil
			}
			rg := s.rgs[0]
			s.rgs = s.rgs[1:]
			if err := s.startRowGroup(ctx, rg); err != nil {
				return nil, fmt.Errorf("read row group %d of %s: %w", rg, s.path, err)
			}
		}
		if len(s.cur.slices) == 0 {
			s.cur.release()
			s.cur = nil
			continue
		}
		lo := s.cur.slices[0]
		s.cur.slices = s.cur.slices[1:]
		r, err := s.readSlice(ctx, lo)
		if err != nil {
			return nil, fmt.Errorf("read row group %d of %s: %w", s.cur.rg, s.path, err)
		}
		if r != nil {
			s.produced += int64(len(r.TS))
			return r, nil
		}
	}
	return nil, nil
}

func (s *fileStream) startRowGroup(ctx context.Context, rg int) error {
	s.fs.ex.RowGroups.Read++
	n := s.fr.ParquetReader().MetaData().RowGroup(rg).NumRows()
	step := max(s.fs.shape.batchRows, 1)
	r := &rowGroupRead{rg: rg}
	for lo := int64(0); lo < n; lo += step {
		r.slices = append(r.slices, lo)
	}
	if s.fs.c.desc {
		slices.Reverse(r.slices)
	}
	rr, err := s.fr.GetRecordReader(ctx, s.testLeaves, []int{rg})
	if err != nil {
		return err
	}
	r.test = rr
	s.cur = r
	return nil
}

// remaining is how many more rows this stream could contribute (-1: no limit). The merge returns
// at most limit rows, so no stream needs more than that many: the rest of a file is left unread.
func (s *fileStream) remaining() int64 {
	if s.fs.c.limit == 0 {
		return -1
	}
	return max(int64(s.fs.c.limit)-s.produced, 0)
}

// sliceOf reads the batch of rr that starts at row lo (reader rows are batchRows long, so one
// batch is one slice), seeking when rr is elsewhere.
func sliceOf(rr pqarrow.RecordReader, at *int64, lo int64) (arrow.RecordBatch, error) {
	if *at != lo {
		if err := rr.SeekToRow(lo); err != nil {
			return nil, err
		}
	}
	if !rr.Next() {
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, fmt.Errorf("no rows at row %d", lo)
	}
	rec := rr.RecordBatch()
	*at = lo + rec.NumRows()
	return rec, nil
}

// readSlice returns the matching rows of the slice at row lo of the current row group (nil when
// none), in two reads: the tested columns select the rows, and only when some match are the
// other printed columns decoded, cut to them and put beside the tested ones (so no column is
// read twice).
func (s *fileStream) readSlice(ctx context.Context, lo int64) (*ordered.Batch, error) {
	c, r := s.fs.c, s.cur
	rec, err := sliceOf(r.test, &r.testAt, lo)
	if err != nil {
		return nil, err
	}
	ts, err := micros(rec, c.tsColumn)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(ts); i++ {
		if ts[i] < ts[i-1] {
			return nil, s.unsorted()
		}
	}
	if len(ts) > 0 {
		// Slices and row groups come in scan order: the file must be sorted across them too.
		first, last := ts[0], ts[len(ts)-1]
		if !c.desc && first < s.lastTs || c.desc && last > s.lastTs {
			return nil, s.unsorted()
		}
		s.lastTs = last
		if c.desc {
			s.lastTs = first
		}
	}
	s.fs.ex.RowsExamined += int64(len(ts))
	mask, err := s.match(rec)
	if err != nil {
		return nil, err
	}
	b := selected{mask: mask}
	for i, ok := range mask {
		if ok {
			b.ts = append(b.ts, ts[i])
		}
	}
	if len(b.ts) == 0 {
		return nil, nil
	}
	s.fs.ex.RowsMatched += int64(len(b.ts))
	if b.kept, err = filterRows(ctx, rec, mask, s.fs.mem); err != nil {
		return nil, err
	}
	s.keepFirst(&b)
	if s.onePhase {
		return &ordered.Batch{Rec: b.kept, TS: b.ts, Reverse: c.desc}, nil
	}
	defer b.kept.Release()
	if r.other == nil {
		if r.other, err = s.fr.GetRecordReader(ctx, s.otherLeaves, []int{r.rg}); err != nil {
			return nil, err
		}
	}
	orec, err := sliceOf(r.other, &r.otherAt, lo)
	if err != nil {
		return nil, err
	}
	if int(orec.NumRows()) != len(b.mask) {
		return nil, fmt.Errorf("row %d: %d rows of the printed columns beside %d of the tested ones", lo, orec.NumRows(), len(b.mask))
	}
	other, err := filterRows(ctx, orec, b.mask, s.fs.mem)
	if err != nil {
		return nil, err
	}
	defer other.Release()
	return &ordered.Batch{Rec: beside(b.kept, other), TS: b.ts, Reverse: c.desc}, nil
}

// selected is one slice of the tested columns: which rows match, those rows, their timestamps.
type selected struct {
	mask []bool
	kept arrow.RecordBatch
	ts   []int64
}

// keepFirst cuts b to the rows this stream can still give, the first in scan order (descending,
// the slice's last), so no more is decoded than the limit can use.
func (s *fileStream) keepFirst(b *selected) {
	n := s.remaining()
	k := int64(len(b.ts))
	if n < 0 || k <= n {
		return
	}
	// Keep n of b's k rows: the first n ascending, the last n descending.
	lo, hi := int64(0), n
	if s.fs.c.desc {
		lo, hi = k-n, k
	}
	seen := int64(0)
	for r, ok := range b.mask {
		if ok {
			b.mask[r] = seen >= lo && seen < hi
			seen++
		}
	}
	cut := b.kept.NewSlice(lo, hi)
	b.kept.Release()
	b.kept, b.ts = cut, b.ts[lo:hi]
}

func (s *fileStream) unsorted() error {
	return fmt.Errorf("data file %s is not sorted by %s: an ordered search needs sorted files", s.path, s.fs.c.tsColumn)
}

// beside is one record of a's columns then b's (the same rows).
func beside(a, b arrow.RecordBatch) arrow.RecordBatch {
	fields := append(slices.Clone(a.Schema().Fields()), b.Schema().Fields()...)
	cols := append(slices.Clone(a.Columns()), b.Columns()...)
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, a.NumRows())
}

// minus is a without the names in b.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

func (s *fileStream) Close() error {
	if s.cur != nil {
		s.cur.release()
		s.cur = nil
	}
	if err := s.closeFile(); err != nil {
		return fmt.Errorf("close data file %s: %w", s.path, err)
	}
	return nil
}

// micros returns rec's timestamps in microseconds.
func micros(rec arrow.RecordBatch, tsColumn string) ([]int64, error) {
	idx := rec.Schema().FieldIndices(tsColumn)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no timestamp column %q", tsColumn)
	}
	col, ok := rec.Column(idx[0]).(*array.Timestamp)
	if !ok {
		return nil, fmt.Errorf("column %q has type %s, not a timestamp", tsColumn, rec.Column(idx[0]).DataType())
	}
	unit := col.DataType().(*arrow.TimestampType).Unit
	out := make([]int64, col.Len())
	for i := range out {
		if col.IsNull(i) {
			return nil, fmt.Errorf("row %d has a null %s", i, tsColumn)
		}
		out[i] = col.Value(i).ToTime(unit).UnixMicro()
	}
	return out, nil
}

// match says which rows of rec match the query exactly: the time range and --where through the
// merge filter (the delete tasks' and the WAL buffer's semantics: a null never matches), then
// --contains/--token on raw.
func (s *fileStream) match(rec arrow.RecordBatch) ([]bool, error) {
	c := s.fs.c
	if s.matcher == nil || s.matcherSchema != rec.Schema() {
		m, err := merge.CompileFilter(c.filter, rec.Schema(), c.tsColumn)
		if err != nil {
			return nil, err
		}
		s.matcher, s.matcherSchema = m, rec.Schema()
	}
	mask := s.matcher.Match(rec)
	if c.contains != nil || c.token != nil {
		raw := -1
		if idx := rec.Schema().FieldIndices(c.rawColumn); len(idx) == 1 {
			raw = idx[0]
		}
		for i, ok := range mask {
			mask[i] = ok && rawMatches(c, rec, raw, i)
		}
	}
	return mask, nil
}

// filterRows returns the rows of rec that mask selects (rec itself, retained, when it selects
// all); the caller keeps its reference to rec.
func filterRows(ctx context.Context, rec arrow.RecordBatch, mask []bool, mem memory.Allocator) (arrow.RecordBatch, error) {
	if !slices.Contains(mask, false) {
		rec.Retain()
		return rec, nil
	}
	b := array.NewBooleanBuilder(mem)
	defer b.Release()
	b.AppendValues(mask, nil)
	arr := b.NewBooleanArray()
	defer arr.Release()
	out, err := compute.FilterRecordBatch(compute.WithAllocator(ctx, mem), rec, arr, compute.DefaultFilterOptions())
	if err != nil {
		return nil, fmt.Errorf("filter rows: %w", err)
	}
	return out, nil
}

func rawMatches(c *compiled, rec arrow.RecordBatch, raw, i int) bool {
	if raw < 0 || rec.Column(raw).IsNull(i) {
		return false
	}
	var s string
	switch a := rec.Column(raw).(type) {
	case *array.String:
		s = a.Value(i)
	case *array.LargeString:
		s = a.Value(i)
	default:
		return false
	}
	if c.contains != nil && !strings.Contains(s, *c.contains) {
		return false
	}
	return c.token == nil || index.ContainsToken(s, *c.token)
}
