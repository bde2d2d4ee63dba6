package splice

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

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
	"github.com/siglake/siglake/merge/kmerge"
	"github.com/siglake/siglake/merge/writer"
)

// Plan says which row groups of each input are copied unchanged.
type Plan struct {
	copy       [][]bool // per input, per row group
	CopyBytes  int64    // compressed bytes of the copied row groups
	TotalBytes int64    // compressed bytes of all row groups
}

// spliceCopies is the plan at row-group level: a row group is copied when
// eligible says so (schema, size) and no other input's rows can fall inside
// its time range, bounds included: it lies inside one of input.IsolatedRuns' runs
// of pages. rgRows are each input's row-group lengths. Pure: the tests drive
// it with made-up page indexes.
func spliceCopies(pages [][]input.TimestampPage, indexed []bool, rgRows [][]int64, eligible func(in, rg int) bool) [][]bool {
	out := make([][]bool, len(rgRows))
	for i := range rgRows {
		out[i] = make([]bool, len(rgRows[i]))
	}
	runs := input.IsolatedRuns(pages, indexed)
	if runs == nil {
		return out
	}
	for i, rows := range rgRows {
		var start int64
		r := 0
		for rg, n := range rows {
			for r < len(runs[i]) && runs[i][r].Row+runs[i][r].N <= start {
				r++
			}
			if r < len(runs[i]) && runs[i][r].Row <= start && start+n <= runs[i][r].Row+runs[i][r].N && n > 0 && eligible(i, rg) {
				out[i][rg] = true
			}
			start += n
		}
	}
	return out
}

// PlanCopies plans the splice of opened inputs into files of tmpl's Parquet
// schema: nil when no row group qualifies. A row group whose time range
// holds a density cut (WriterOptions.cutBefore) after its first row is not
// copied, so the writer can cut there. It reads only footers and the
// timestamp column's page index.
func PlanCopies(opened []*input.File, tmpl *metadata.FileMetaData, tsName string, minRows int64, cuts []int64) *Plan {
	if minRows <= 0 || len(opened) == 0 {
		return nil
	}
	rgRows := make([][]int64, len(opened))
	schemaOK := make([]bool, len(opened))
	qualifies := false
	var total int64
	for i, in := range opened {
		md := in.Parquet.MetaData()
		schemaOK[i] = SameParquetSchema(md, tmpl) && md.FileDecryptor == nil
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
	pages, indexed := make([][]input.TimestampPage, len(opened)), make([]bool, len(opened))
	for i, in := range opened {
		pages[i], indexed[i] = input.TimestampPages(in, tsName)
	}
	p := &Plan{TotalBytes: total}
	copyable := func(i, rg int) bool {
		return schemaOK[i] && !externalChunks(opened[i].Parquet.MetaData(), rg) && !spansCut(pages[i], rgRows[i], rg, cuts)
	}
	p.copy = spliceCopies(pages, indexed, rgRows, func(i, rg int) bool { return rgRows[i][rg] >= minRows && copyable(i, rg) })
	promoteLoneSmall(p.copy, spliceCopies(pages, indexed, rgRows, copyable), pages, rgRows)
	for i, in := range opened {
		for rg, c := range p.copy[i] {
			if c {
				p.CopyBytes += in.Parquet.MetaData().RowGroup(rg).TotalCompressedSize()
			}
		}
	}
	if p.CopyBytes == 0 {
		return nil
	}
	return p
}

// SameParquetSchema says whether md's row groups can be copied into files
// with tmpl's footer schema. Schema.Equals compares only the leaves and
// their levels, so a renamed map, list or struct column would pass it and
// its copied chunks would keep the old path_in_schema (parquet-java matches
// chunks by path). So every schema element must match: names, repetition,
// types, logical and converted types, field ids; only the root's name is
// free (it is not part of any path).
func SameParquetSchema(md, tmpl *metadata.FileMetaData) bool {
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
func promoteLoneSmall(copies, isolated [][]bool, pages [][]input.TimestampPage, rgRows [][]int64) {
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
func rowGroupRange(pages []input.TimestampPage, start, end int64) (lo, hi int64, ok bool) {
	for _, pg := range pages {
		if pg.Row < start || pg.Row >= end {
			continue
		}
		if !ok {
			lo, hi, ok = pg.Min, pg.Max, true
		}
		lo, hi = min(lo, pg.Min), max(hi, pg.Max)
	}
	return lo, hi, ok
}

// spansCut says whether a density cut falls after the first row of row
// group rg (rows per row group rgRows) and at or before its last, judged
// from the timestamp pages inside it.
func spansCut(pages []input.TimestampPage, rgRows []int64, rg int, cuts []int64) bool {
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

// Options are what the splice path runs with.
type Options struct {
	Writer writer.Options
	// ChunkRows is the re-encoded rows assembled and handed to the encoder at a time.
	ChunkRows int64
	// Unverified skips reading the pages of copied row groups whose input has no chunk sums
	// (RewriteOptions.SpliceUnverified).
	Unverified bool
}

// Stats is what a splice measured.
type Stats struct {
	CopiedBytes int64 // bytes of input row groups copied without re-encoding
	// VerifiedRowGroups counts the copied row groups whose pages were read to check them
	// (the input had no chunk sums).
	VerifiedRowGroups int64
}

// Merge is the row-group splice path: the k-way merge over every
// input, in which each copied row group goes by as one block of timestamps
// (decoded with the group columns, for the footer's counts) and is then
// copied into the output byte for byte, while the rows around it are merged,
// re-encoded and written between the copies. Memory is the k-way path's
// plus one encoded row group.
func Merge(ctx context.Context, fs icebergio.WriteFileIO, opened []*input.File, schema *arrow.Schema, newPath func(int) string, opts Options, plan *Plan) (outs []writer.Output, st Stats, err error) {
	w, err := writer.NewSink(fs, newPath, schema, opts.Writer, writer.MetaStreamed(opts.Writer.Metadata))
	if err != nil {
		return nil, Stats{}, err
	}
	defer writer.RecoverAbort(&err, w)
	groupCols := w.GroupColumns()
	cursors := make([]*kmerge.Cursor, 0, len(opened))
	runs := &spliceRuns{ctx: ctx, w: w, pending: make([]*copyJob, len(opened)), emitted: make([]int64, len(opened))}
	closeAll := func() error {
		var errs []error
		for _, c := range cursors {
			if cerr := c.Close(); cerr != nil {
				errs = append(errs, fmt.Errorf("closing input %s: %w", c.Name, cerr))
			}
		}
		for _, j := range runs.pending {
			j.Release()
		}
		return errors.Join(errs...)
	}
	for i, in := range opened {
		var copies []bool
		if plan != nil {
			copies = plan.copy[i]
		}
		footer, _ := writer.DecodeFooter(in.Parquet.MetaData())
		if n, ok := footer.NumRowGroups(); !ok || n != in.Parquet.MetaData().NumRowGroups() {
			footer = nil // blooms that do not match the row groups are not copied
		}
		src := &spliceSource{in: in, schema: schema, tsName: opts.Writer.TimestampColumn, opts: opts, copies: copies,
			groupCols: groupCols, footer: footer, crcs: chunksum.RowGroupSums(in.Parquet.MetaData()), idx: i, runs: runs}
		cursors = append(cursors, &kmerge.Cursor{Idx: i, Name: in.Path, Src: src})
	}
	runs.asm = kmerge.NewAssembler(ctx, schema, opts.Writer.Allocator, func(r arrow.RecordBatch) error { return w.Write(ctx, r) })
	err = kmerge.Order(ctx, cursors, min(opts.Writer.RowGroupRows, opts.ChunkRows), runs)
	if err == nil {
		err = runs.asm.ChunkEnd()
	}
	runs.asm.Release()
	if cerr := closeAll(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, Stats{}, errors.Join(err, w.Abort())
	}
	outs, err = w.Finish()
	return outs, Stats{CopiedBytes: w.CopiedBytes(), VerifiedRowGroups: runs.verified.Load()}, err
}

// copyJob is a row group on its way through the merge as a block.
type copyJob struct {
	src      writer.RowGroupSource
	rg       int
	ts       []int64
	groups   []arrow.Array
	bloom    []byte
	crcs     []uint32 // the chunks' sums from the input's footer, checked as they are copied
	verified bool     // its pages were read and found sound
}

func (j *copyJob) Release() {
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
	ctx      context.Context
	verified atomic.Int64 // row groups whose pages verifyPages read
	asm      *kmerge.Assembler
	w        *writer.Sink
	pending  []*copyJob // per input: the row group its cursor is on
	emitted  []int64    // per input: rows of pending already in the order
}

func (s *spliceRuns) Run(c *kmerge.Cursor, from, to int) error {
	if c.Batch.Rec != nil {
		return s.asm.Run(c, from, to)
	}
	j := s.pending[c.Idx]
	if j == nil {
		return fmt.Errorf("merge of input %s: a copied row group went by without its plan", c.Name)
	}
	s.emitted[c.Idx] += int64(to - from)
	if s.emitted[c.Idx] < int64(len(j.ts)) {
		return nil
	}
	// No other input has rows inside the row group's range, so nothing can
	// come between its first and last row: copy it as a whole.
	if err := s.asm.ChunkEnd(); err != nil {
		return err
	}
	err := s.w.CopyRowGroup(s.ctx, j.src, j.rg, j.ts, j.groups, j.bloom, j.crcs, j.verified)
	j.Release()
	s.pending[c.Idx], s.emitted[c.Idx] = nil, 0
	return err
}

func (s *spliceRuns) ChunkEnd() error { return s.asm.ChunkEnd() }

// spliceSource yields one input's rows for the splice: decoded batches for
// the row groups that are re-encoded, and for each copied row group one
// batch of its timestamps without rows (its copyJob goes to runs).
type spliceSource struct {
	in        *input.File
	schema    *arrow.Schema
	tsName    string
	opts      Options
	copies    []bool
	groupCols []string
	footer    *index.Footer
	crcs      [][]uint32 // chunksum.RowGroupSums of the input
	idx       int
	// dictReader reads the copied row groups' timestamp and group columns,
	// string group columns as dictionaries.
	dictReader *pqarrow.FileReader
	runs       *spliceRuns

	rg   int          // next row group
	cur  input.Source // the decoded run of row groups being read
	size int64        // of the input file, once a copy needs it
}

func (s *spliceSource) Next(ctx context.Context) (input.Batch, bool, error) {
	n := s.in.Parquet.NumRowGroups()
	for {
		if s.cur != nil {
			b, ok, err := s.cur.Next(ctx)
			if err != nil || ok {
				return b, ok, err
			}
			err = s.cur.Close()
			s.cur = nil
			if err != nil {
				return input.Batch{}, false, err
			}
		}
		if s.rg >= n {
			return input.Batch{}, false, nil
		}
		if s.rg < len(s.copies) && s.copies[s.rg] {
			j, err := s.readCopy(ctx, s.rg)
			s.rg++
			if err != nil {
				return input.Batch{}, false, err
			}
			s.runs.pending[s.idx] = j
			s.runs.emitted[s.idx] = 0
			return input.Batch{TS: j.ts}, true, nil
		}
		var rgs []int
		for ; s.rg < n && !(s.rg < len(s.copies) && s.copies[s.rg]); s.rg++ {
			rgs = append(rgs, s.rg)
		}
		src, err := input.NewPQSourceRG(ctx, s.in, s.schema, s.tsName, false, s.opts.Writer.Allocator, rgs)
		if err != nil {
			return input.Batch{}, false, err
		}
		s.cur = input.NewPrefetch(ctx, src)
	}
}

// readCopy decodes the timestamp and group columns of row group rg. String
// group columns are read as dictionaries: the counts need each distinct
// value once, not a string per row.
func (s *spliceSource) readCopy(ctx context.Context, rg int) (*copyJob, error) {
	names := append([]string{s.tsName}, s.groupCols...)
	var leaves []int
	for _, name := range names {
		leaves = append(leaves, input.LeafIndices(s.in, name)...)
	}
	if s.dictReader == nil {
		props := pqarrow.ArrowReadProperties{BatchSize: s.in.Parquet.MetaData().RowGroup(rg).NumRows()}
		sc := s.in.Parquet.MetaData().Schema
		for _, name := range s.groupCols {
			for _, l := range input.LeafIndices(s.in, name) {
				if sc.Column(l).PhysicalType() == parquet.Types.ByteArray {
					props.SetReadDict(l, true)
				}
			}
		}
		fr, err := pqarrow.NewFileReader(s.in.Parquet, props, s.opts.Writer.Allocator)
		if err != nil {
			return nil, input.NewError("reading input", s.in.Path, err)
		}
		s.dictReader = fr
	}
	tbl, err := s.dictReader.ReadRowGroups(ctx, leaves, []int{rg})
	if err != nil {
		return nil, input.NewError("reading input", s.in.Path, fmt.Errorf("row group %d: %w", rg, err))
	}
	defer tbl.Release()
	if s.size == 0 {
		size, err := s.in.Size()
		if err != nil {
			return nil, err
		}
		s.size = size
	}
	j := &copyJob{rg: rg, src: writer.RowGroupSource{Name: s.in.Path, Reader: s.in.ReaderAt(), Size: s.size, Meta: s.in.Parquet.MetaData()}}
	for k, name := range names {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) == 0 {
			j.Release()
			return nil, input.NewError("reading input", s.in.Path, fmt.Errorf("row group %d has no column %q", rg, name))
		}
		col, err := oneChunk(tbl.Column(idx[0]).Data().Chunks(), s.opts.Writer.Allocator)
		if err != nil {
			j.Release()
			return nil, input.NewError("reading input", s.in.Path, fmt.Errorf("row group %d column %q: %w", rg, name, err))
		}
		if k == 0 {
			if col.NullN() > 0 {
				col.Release()
				j.Release()
				return nil, input.NewError("reading input", s.in.Path, fmt.Errorf("timestamp column %q has null values", s.tsName))
			}
			j.ts = input.AppendMicros(make([]int64, 0, col.Len()), col)
			col.Release()
			continue
		}
		j.groups = append(j.groups, col)
	}
	if want := s.in.Parquet.MetaData().RowGroup(rg).NumRows(); int64(len(j.ts)) != want {
		j.Release()
		return nil, input.NewError("reading input", s.in.Path, fmt.Errorf("row group %d holds %d timestamps, its footer says %d rows", rg, len(j.ts), want))
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
	if s.opts.Unverified {
		return j, nil
	}
	s.runs.verified.Add(1)
	if err := verifyPages(s.in, rg, leaves); err != nil {
		j.Release()
		return nil, err
	}
	j.verified = true
	return j, nil
}

// verifyPages reads every page of row group rg's columns except the leaves
// already decoded: each page header must parse and its data decompress (zstd
// frames carry a checksum), and the pages must hold the values the footer
// says. Values are not decoded. A copy does not re-encode, so this is what
// keeps damaged input from being carried into the output unnoticed.
func verifyPages(in *input.File, rg int, decoded []int) error {
	r := in.Parquet.RowGroup(rg)
	for i := 0; i < r.NumColumns(); i++ {
		if slices.Contains(decoded, i) {
			continue
		}
		fail := func(err error) error {
			return input.NewError("reading input", in.Path, fmt.Errorf("row group %d column %d: %w", rg, i, err))
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

func (s *spliceSource) Close() error {
	if s.cur != nil {
		err := s.cur.Close()
		s.cur = nil
		return err
	}
	return nil
}
