package merge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/index"
)

// DefaultSpliceMinRows is the smallest row group the splice path copies
// (SIGLAKE_MERGE_SPLICE_MIN_ROWS): half the default row-group length.
// Copied row groups keep their size, so copying small ones would keep the
// output's row groups small (what stalled Iceberg's row-group merge); those
// are re-encoded with the rows around them instead.
const DefaultSpliceMinRows = DefaultRowGroupRows / 2

// spliceShare is the share of a bin's bytes that must lie in copyable row
// groups for ChoosePath to take the splice path: below it, the copies save
// too little to give up the in-memory path's whole-file metadata.
const spliceShare = 0.5

// splicePlan says which row groups of each input are copied unchanged.
type splicePlan struct {
	copy       [][]bool // per input, per row group
	copyBytes  int64    // compressed bytes of the copied row groups
	totalBytes int64    // compressed bytes of all row groups
}

func (p *splicePlan) copies() bool { return p != nil && p.copyBytes > 0 }

// spliceCopies is the plan at row-group level: a row group is copied when
// eligible says so (schema, size) and no other input's rows can fall inside
// its time range, bounds included: it lies inside one of isolatedRuns' runs
// of pages. rgRows are each input's row-group lengths. Pure: the tests drive
// it with made-up page indexes.
func spliceCopies(pages [][]tsPage, indexed []bool, rgRows [][]int64, eligible func(in, rg int) bool) [][]bool {
	out := make([][]bool, len(rgRows))
	for i := range rgRows {
		out[i] = make([]bool, len(rgRows[i]))
	}
	runs := isolatedRuns(pages, indexed)
	if runs == nil {
		return out
	}
	for i, rows := range rgRows {
		var start int64
		r := 0
		for rg, n := range rows {
			for r < len(runs[i]) && runs[i][r].row+runs[i][r].n <= start {
				r++
			}
			if r < len(runs[i]) && runs[i][r].row <= start && start+n <= runs[i][r].row+runs[i][r].n && n > 0 && eligible(i, rg) {
				out[i][rg] = true
			}
			start += n
		}
	}
	return out
}

// planSplice plans the splice of opened inputs into files of tmpl's Parquet
// schema: nil when no row group qualifies. A row group whose time range
// holds a density cut (WriterOptions.cutBefore) after its first row is not
// copied, so the writer can cut there. It reads only footers and the
// timestamp column's page index.
func planSplice(opened []*openedInput, tmpl *metadata.FileMetaData, tsName string, minRows int64, cuts []int64) *splicePlan {
	if minRows <= 0 || len(opened) == 0 {
		return nil
	}
	rgRows := make([][]int64, len(opened))
	schemaOK := make([]bool, len(opened))
	qualifies := false
	var total int64
	for i, in := range opened {
		md := in.pf.MetaData()
		schemaOK[i] = sameParquetSchema(md, tmpl) && md.FileDecryptor == nil
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			n := md.RowGroup(rg).NumRows()
			rgRows[i] = append(rgRows[i], n)
			total += md.RowGroup(rg).TotalCompressedSize()
			qualifies = qualifies || schemaOK[i] && n >= minRows
		}
	}
	if !qualifies {
		return nil
	}
	pages, indexed := make([][]tsPage, len(opened)), make([]bool, len(opened))
	for i, in := range opened {
		pages[i], indexed[i] = timestampPages(in, tsName)
	}
	p := &splicePlan{totalBytes: total}
	copyable := func(i, rg int) bool {
		return schemaOK[i] && !externalChunks(opened[i].pf.MetaData(), rg) && !spansCut(pages[i], rgRows[i], rg, cuts)
	}
	p.copy = spliceCopies(pages, indexed, rgRows, func(i, rg int) bool { return rgRows[i][rg] >= minRows && copyable(i, rg) })
	promoteLoneSmall(p.copy, spliceCopies(pages, indexed, rgRows, copyable), pages, rgRows)
	for i, in := range opened {
		for rg, c := range p.copy[i] {
			if c {
				p.copyBytes += in.pf.MetaData().RowGroup(rg).TotalCompressedSize()
			}
		}
	}
	if p.copyBytes == 0 {
		return nil
	}
	return p
}

// sameParquetSchema says whether md's row groups can be copied into files
// with tmpl's footer schema. Schema.Equals compares only the leaves and
// their levels, so a renamed map, list or struct column would pass it and
// its copied chunks would keep the old path_in_schema (parquet-java matches
// chunks by path). So every schema element must match: names, repetition,
// types, logical and converted types, field ids; only the root's name is
// free (it is not part of any path).
func sameParquetSchema(md, tmpl *metadata.FileMetaData) bool {
	if !md.Schema.Equals(tmpl.Schema) {
		return false
	}
	a, b := md.FileMetaData.Schema, tmpl.FileMetaData.Schema
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == nil || b[i] == nil {
			return false
		}
		x, y := *a[i], *b[i]
		if i == 0 {
			x.Name, y.Name = "", ""
		}
		if !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// promoteLoneSmall marks for copying the row groups that are isolated (no
// other input's rows inside their time range) but below the minimum size,
// when the row groups next to them in time are copied and no re-encoded row
// group's range touches theirs or their neighbours': re-encoded, such a row
// group would become a row group of its own rows, as small as it is now,
// since each copy ends the re-encoded row group before it. Copying it keeps
// the layout and skips the re-encode (an L1 file's short last row group in
// a bin of time-disjoint files). copies is updated in place; pure otherwise.
func promoteLoneSmall(copies, isolated [][]bool, pages [][]tsPage, rgRows [][]int64) {
	type span struct {
		in, rg int
		lo, hi int64
	}
	var spans []span
	for i, rows := range rgRows {
		var start int64
		for rg, n := range rows {
			lo, hi, ok := rowGroupRange(pages[i], start, start+n)
			start += n
			if n == 0 {
				continue
			}
			if !ok {
				return // a row group without page bounds: its neighbours are unknown
			}
			spans = append(spans, span{i, rg, lo, hi})
		}
	}
	slices.SortFunc(spans, func(a, b span) int {
		return cmp.Or(cmp.Compare(a.lo, b.lo), cmp.Compare(a.hi, b.hi), cmp.Compare(a.in, b.in), cmp.Compare(a.rg, b.rg))
	})
	copied := func(s span) bool { return copies[s.in][s.rg] }
	var promote []span
	for k, s := range spans {
		if copied(s) || !isolated[s.in][s.rg] {
			continue
		}
		lo, hi, ok := s.lo, s.hi, true
		if k > 0 {
			ok, lo = copied(spans[k-1]), spans[k-1].lo
		}
		if k+1 < len(spans) {
			ok, hi = ok && copied(spans[k+1]), spans[k+1].hi
		}
		for j, o := range spans {
			if ok && j != k && !copied(o) && o.lo <= hi && o.hi >= lo {
				ok = false
			}
		}
		if ok {
			promote = append(promote, s)
		}
	}
	for _, s := range promote {
		copies[s.in][s.rg] = true
	}
}

// rowGroupRange is the time range of the rows [start, end) of an input,
// from its timestamp pages inside them; ok is false when none is.
func rowGroupRange(pages []tsPage, start, end int64) (lo, hi int64, ok bool) {
	for _, pg := range pages {
		if pg.row < start || pg.row >= end {
			continue
		}
		if !ok {
			lo, hi, ok = pg.min, pg.max, true
		}
		lo, hi = min(lo, pg.min), max(hi, pg.max)
	}
	return lo, hi, ok
}

// spansCut says whether a density cut falls after the first row of row
// group rg (rows per row group rgRows) and at or before its last, judged
// from the timestamp pages inside it.
func spansCut(pages []tsPage, rgRows []int64, rg int, cuts []int64) bool {
	if len(cuts) == 0 {
		return false
	}
	var start int64
	for _, n := range rgRows[:rg] {
		start += n
	}
	lo, hi, seen := rowGroupRange(pages, start, start+rgRows[rg])
	if !seen {
		return true
	}
	for _, c := range cuts {
		if lo < c && c <= hi {
			return true
		}
	}
	return false
}

// externalChunks says whether a column chunk of row group rg lives in
// another file (file_path set): its offsets are not into this file, so its
// bytes cannot be copied from here.
func externalChunks(md *metadata.FileMetaData, rg int) bool {
	for _, c := range md.RowGroups[rg].Columns {
		if c.FilePath != nil && *c.FilePath != "" {
			return true
		}
	}
	return false
}

// mergeSplice is the row-group splice path: the k-way merge over every
// input, in which each copied row group goes by as one block of timestamps
// (decoded with the group columns, for the footer's counts) and is then
// copied into the output byte for byte, while the rows around it are merged,
// re-encoded and written between the copies. Memory is the k-way path's
// plus one encoded row group.
func mergeSplice(ctx context.Context, fs icebergio.WriteFileIO, opened []*openedInput, schema *arrow.Schema, newPath func(int) string, opts RewriteOptions, plan *splicePlan) (outs []Output, copied int64, err error) {
	w, err := newSink(fs, newPath, schema, opts.WriterOptions, metaStreamed(opts.Metadata))
	if err != nil {
		return nil, 0, err
	}
	defer recoverAbort(&err, w)
	groupCols := newMetaBuilder(w.meta, schema).GroupColumns()
	cursors := make([]*cursor, 0, len(opened))
	runs := &spliceRuns{w: w, pending: make([]*copyJob, len(opened)), emitted: make([]int64, len(opened))}
	closeAll := func() error {
		var errs []error
		for _, c := range cursors {
			if cerr := c.close(); cerr != nil {
				errs = append(errs, fmt.Errorf("closing input %s: %w", c.name, cerr))
			}
		}
		for _, j := range runs.pending {
			j.release()
		}
		return errors.Join(errs...)
	}
	for i, in := range opened {
		var copies []bool
		if plan != nil {
			copies = plan.copy[i]
		}
		footer, _ := DecodeFooter(in.pf.MetaData())
		if n, ok := footer.NumRowGroups(); !ok || n != in.pf.MetaData().NumRowGroups() {
			footer = nil // blooms that do not match the row groups are not copied
		}
		src := &spliceSource{in: in, schema: schema, tsName: opts.TimestampColumn, opts: opts, copies: copies,
			groupCols: groupCols, footer: footer, crcs: chunkCRCs(in.pf.MetaData()), idx: i, runs: runs}
		cursors = append(cursors, &cursor{idx: i, name: in.path, src: src})
	}
	runs.asm = newAssembler(ctx, schema, opts.Allocator, func(r arrow.RecordBatch) error { return w.write(ctx, r) })
	err = mergeOrder(ctx, cursors, min(opts.RowGroupRows, kwayChunkRows), runs)
	if err == nil {
		err = runs.asm.chunkEnd()
	}
	runs.asm.release()
	if cerr := closeAll(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, 0, errors.Join(err, w.abort())
	}
	outs, err = w.finish()
	return outs, w.copiedBytes, err
}

// copyJob is a row group on its way through the merge as a block.
type copyJob struct {
	src      rgSource
	rg       int
	ts       []int64
	groups   []arrow.Array
	bloom    []byte
	crcs     []uint32 // the chunks' sums from the input's footer, checked as they are copied
	verified bool     // its pages were read and found sound
}

func (j *copyJob) release() {
	if j == nil {
		return
	}
	for _, g := range j.groups {
		g.Release()
	}
	j.groups = nil
}

// spliceRuns receives the merge order: runs of decoded rows go to the
// assembler; once every row of a copied row group has gone by, the rows
// assembled so far are written and the row group is copied after them.
type spliceRuns struct {
	asm     *assembler
	w       *sink
	pending []*copyJob // per input: the row group its cursor is on
	emitted []int64    // per input: rows of pending already in the order
}

func (s *spliceRuns) run(c *cursor, from, to int) error {
	if c.b.rec != nil {
		return s.asm.run(c, from, to)
	}
	j := s.pending[c.idx]
	if j == nil {
		return fmt.Errorf("merge of input %s: a copied row group went by without its plan", c.name)
	}
	s.emitted[c.idx] += int64(to - from)
	if s.emitted[c.idx] < int64(len(j.ts)) {
		return nil
	}
	// No other input has rows inside the row group's range, so nothing can
	// come between its first and last row: copy it as a whole.
	if err := s.asm.chunkEnd(); err != nil {
		return err
	}
	err := s.w.copyRowGroup(s.asm.ctx, j.src, j.rg, j.ts, j.groups, j.bloom, j.crcs, j.verified)
	j.release()
	s.pending[c.idx], s.emitted[c.idx] = nil, 0
	return err
}

func (s *spliceRuns) chunkEnd() error { return s.asm.chunkEnd() }

// spliceSource yields one input's rows for the splice: decoded batches for
// the row groups that are re-encoded, and for each copied row group one
// batch of its timestamps without rows (its copyJob goes to runs).
type spliceSource struct {
	in        *openedInput
	schema    *arrow.Schema
	tsName    string
	opts      RewriteOptions
	copies    []bool
	groupCols []string
	footer    *index.Footer
	crcs      [][]uint32 // chunkCRCs of the input
	idx       int
	// dictReader reads the copied row groups' timestamp and group columns,
	// string group columns as dictionaries.
	dictReader *pqarrow.FileReader
	runs       *spliceRuns

	rg   int    // next row group
	cur  source // the decoded run of row groups being read
	size int64  // of the input file, once a copy needs it
}

func (s *spliceSource) next(ctx context.Context) (batch, bool, error) {
	n := s.in.pf.NumRowGroups()
	for {
		if s.cur != nil {
			b, ok, err := s.cur.next(ctx)
			if err != nil || ok {
				return b, ok, err
			}
			err = s.cur.close()
			s.cur = nil
			if err != nil {
				return batch{}, false, err
			}
		}
		if s.rg >= n {
			return batch{}, false, nil
		}
		if s.rg < len(s.copies) && s.copies[s.rg] {
			j, err := s.readCopy(ctx, s.rg)
			s.rg++
			if err != nil {
				return batch{}, false, err
			}
			s.runs.pending[s.idx] = j
			s.runs.emitted[s.idx] = 0
			return batch{ts: j.ts}, true, nil
		}
		var rgs []int
		for ; s.rg < n && !(s.rg < len(s.copies) && s.copies[s.rg]); s.rg++ {
			rgs = append(rgs, s.rg)
		}
		src, err := newPQSourceRG(ctx, s.in, s.schema, s.tsName, false, s.opts.Allocator, rgs)
		if err != nil {
			return batch{}, false, err
		}
		s.cur = newPrefetchSource(ctx, s.opts.filtered(src, s.schema))
	}
}

// readCopy decodes the timestamp and group columns of row group rg. String
// group columns are read as dictionaries: the counts need each distinct
// value once, not a string per row.
func (s *spliceSource) readCopy(ctx context.Context, rg int) (*copyJob, error) {
	names := append([]string{s.tsName}, s.groupCols...)
	var leaves []int
	for _, name := range names {
		leaves = append(leaves, leafIndices(s.in, name)...)
	}
	if s.dictReader == nil {
		props := pqarrow.ArrowReadProperties{BatchSize: s.in.pf.MetaData().RowGroup(rg).NumRows()}
		sc := s.in.pf.MetaData().Schema
		for _, name := range s.groupCols {
			for _, l := range leafIndices(s.in, name) {
				if sc.Column(l).PhysicalType() == parquet.Types.ByteArray {
					props.SetReadDict(l, true)
				}
			}
		}
		fr, err := pqarrow.NewFileReader(s.in.pf, props, s.opts.Allocator)
		if err != nil {
			return nil, inputErr("reading input", s.in.path, err)
		}
		s.dictReader = fr
	}
	tbl, err := s.dictReader.ReadRowGroups(ctx, leaves, []int{rg})
	if err != nil {
		return nil, inputErr("reading input", s.in.path, fmt.Errorf("row group %d: %w", rg, err))
	}
	defer tbl.Release()
	if s.size == 0 {
		st, err := s.in.f.Stat()
		if err != nil {
			return nil, inputErr("reading input", s.in.path, &IOError{Err: err})
		}
		s.size = st.Size()
	}
	j := &copyJob{rg: rg, src: rgSource{name: s.in.path, r: readerAtSeeker{s.in.f, s.in.read}, size: s.size, md: s.in.pf.MetaData()}}
	for k, name := range names {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) == 0 {
			j.release()
			return nil, inputErr("reading input", s.in.path, fmt.Errorf("row group %d has no column %q", rg, name))
		}
		col, err := oneChunk(tbl.Column(idx[0]).Data().Chunks(), s.opts.Allocator)
		if err != nil {
			j.release()
			return nil, inputErr("reading input", s.in.path, fmt.Errorf("row group %d column %q: %w", rg, name, err))
		}
		if k == 0 {
			if col.NullN() > 0 {
				col.Release()
				j.release()
				return nil, inputErr("reading input", s.in.path, fmt.Errorf("timestamp column %q has null values", s.tsName))
			}
			j.ts = appendMicros(make([]int64, 0, col.Len()), col)
			col.Release()
			continue
		}
		j.groups = append(j.groups, col)
	}
	if want := s.in.pf.MetaData().RowGroup(rg).NumRows(); int64(len(j.ts)) != want {
		j.release()
		return nil, inputErr("reading input", s.in.path, fmt.Errorf("row group %d holds %d timestamps, its footer says %d rows", rg, len(j.ts), want))
	}
	// A bloom that describes other rows would prune rows it never saw (here
	// and in every later splice of the output): copy it only when its entry
	// is this row group's, else the output's entry answers maybe.
	if e, ok := s.footer.RowGroupInfo(rg); ok && e.Rows == int64(len(j.ts)) && len(j.ts) > 0 &&
		e.MinMicros == j.ts[0] && e.MaxMicros == j.ts[len(j.ts)-1] {
		j.bloom = s.footer.RowGroupBloom(rg)
	}
	// Chunks whose sums the input's footer records are checked as they are
	// copied (any changed byte fails the copy); the pages of others are read.
	if rg < len(s.crcs) && s.crcs[rg] != nil {
		j.crcs = s.crcs[rg]
		return j, nil
	}
	if s.opts.SpliceUnverified {
		return j, nil
	}
	if err := verifyPages(s.in, rg, leaves); err != nil {
		j.release()
		return nil, err
	}
	j.verified = true
	return j, nil
}

// pageChecks counts the row groups verifyPages read, for the tests to tell
// which check a copy had.
var pageChecks atomic.Int64

// verifyPages reads every page of row group rg's columns except the leaves
// already decoded: each page header must parse and its data decompress (zstd
// frames carry a checksum), and the pages must hold the values the footer
// says. Values are not decoded. A copy does not re-encode, so this is what
// keeps damaged input from being carried into the output unnoticed.
func verifyPages(in *openedInput, rg int, decoded []int) error {
	pageChecks.Add(1)
	r := in.pf.RowGroup(rg)
	for i := 0; i < r.NumColumns(); i++ {
		if slices.Contains(decoded, i) {
			continue
		}
		fail := func(err error) error {
			return inputErr("reading input", in.path, fmt.Errorf("row group %d column %d: %w", rg, i, err))
		}
		cc, err := r.MetaData().ColumnChunk(i)
		if err != nil {
			return fail(err)
		}
		pr, err := r.GetColumnPageReader(i)
		if err != nil {
			return fail(err)
		}
		var values int64
		for pr.Next() {
			if dp, ok := pr.Page().(file.DataPage); ok {
				values += int64(dp.NumValues())
			}
		}
		err = pr.Err()
		_ = pr.Close()
		if err != nil {
			return fail(err)
		}
		if values != cc.NumValues() {
			return fail(fmt.Errorf("pages hold %d values, the footer says %d", values, cc.NumValues()))
		}
	}
	return nil
}

// oneChunk returns chunks as one array. Dictionary chunks with different
// dictionaries (a writer that started a new one) are decoded to their
// values first, since concatenating them needs one dictionary.
func oneChunk(chunks []arrow.Array, mem memory.Allocator) (arrow.Array, error) {
	if len(chunks) == 1 {
		chunks[0].Retain()
		return chunks[0], nil
	}
	if len(chunks) > 0 {
		if _, ok := chunks[0].DataType().(*arrow.DictionaryType); ok {
			plain := make([]arrow.Array, 0, len(chunks))
			defer func() {
				for _, a := range plain {
					a.Release()
				}
			}()
			for _, c := range chunks {
				v, err := compute.TakeArray(context.Background(), c.(*array.Dictionary).Dictionary(), c.(*array.Dictionary).Indices())
				if err != nil {
					return nil, err
				}
				plain = append(plain, v)
			}
			return array.Concatenate(plain, mem)
		}
	}
	return array.Concatenate(chunks, mem)
}

func (s *spliceSource) close() error {
	if s.cur != nil {
		err := s.cur.close()
		s.cur = nil
		return err
	}
	return nil
}
