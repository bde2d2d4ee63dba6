package merge

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// parquetMagic opens and closes every Parquet file.
const parquetMagic = "PAR1"

// copyBufferBytes is the most of a column chunk one read of a copy asks
// for: on an object store every read is a request, so copies read in large
// ranges (io.Copy's 32 KiB would make a 100 MiB file 3,200 requests).
const copyBufferBytes = 4 << 20

// rgSource is a Parquet file whose row groups can be copied into another
// file: its bytes and its parsed footer.
type rgSource struct {
	name string
	r    io.ReaderAt
	size int64
	md   *metadata.FileMetaData
}

// spliceWriter writes the splice path's outputs. It lays each file out
// itself: "PAR1", row groups copied byte for byte (from inputs, or from a
// one-row-group file the re-encoded rows were written to), the page indexes,
// and a footer made from the copied row groups' own metadata with offsets
// rebased. The footer is serialized by arrow-go (metadata.FileMetaData),
// so the thrift encoding is the one its own writer uses.
//
// Rows that are re-encoded go through the same cuts as the sink's: row
// groups of RowGroupRows rows, and a file is closed once it reaches
// TargetFileBytes at a row-group boundary and the timestamp changes, so
// outputs stay pairwise time-disjoint, and before the first row at or past
// each density cut (WriterOptions.cutBefore; the plan copies no row group a
// cut falls inside). A copied row group ends the re-encoded row group before
// it, which may then be short.
type spliceWriter struct {
	fs      icebergio.WriteFileIO
	newPath func(int) string
	schema  *arrow.Schema
	opts    WriterOptions
	meta    metaMode
	tmpl    *metadata.FileMetaData // an empty file's footer: schema, column orders, created_by

	cur     *splicedFile
	outputs []Output
	created []string

	rg      *pendingRowGroup // re-encoded rows not yet a row group
	closing bool
	cuts    []int64 // density cuts not yet passed (WriterOptions.cutBefore)
	lastTs  int64   // last timestamp of the last row group appended
	prevTs  int64   // last timestamp written, to check the order
	wrote   bool

	copiedBytes int64 // bytes of input row groups copied (not re-encoded)
}

// splicedFile is one output being laid out.
type splicedFile struct {
	path         string
	w            icebergio.FileWriter
	cw           *CountingWriter
	md           *metadata.FileMetaData
	colIdx       [][][]byte                       // per row group and column: column index as written by its source
	offIdx       [][]*metadata.OffsetIndexBuilder // per row group and column: offset index, rebased
	meta         *metaBuilder
	rows         int64
	minTs, maxTs int64
	copyBuf      []byte
}

// pendingRowGroup is a one-row-group Parquet file in memory that the
// re-encoded rows of the next output row group are written to.
type pendingRowGroup struct {
	buf  bytes.Buffer
	fw   *pqarrow.FileWriter
	rows int64
}

// spliceTemplate returns the footer of an empty file written with schema and
// opts: the Parquet schema outputs have, which an input's row groups must
// match to be copied.
func spliceTemplate(schema *arrow.Schema, opts WriterOptions) (*metadata.FileMetaData, error) {
	var buf bytes.Buffer
	fw, err := pqarrow.NewFileWriter(schema, &buf, writerProperties(opts), spliceArrowProps(opts))
	if err != nil {
		return nil, fmt.Errorf("preparing the splice footer: %w", err)
	}
	if err := fw.Close(); err != nil {
		return nil, fmt.Errorf("preparing the splice footer: %w", err)
	}
	return fw.FileMetadata()
}

func spliceArrowProps(opts WriterOptions) pqarrow.ArrowWriterProperties {
	return pqarrow.NewArrowWriterProperties(pqarrow.WithAllocator(opts.Allocator), pqarrow.WithCoerceTimestamps(arrow.Microsecond))
}

func newSpliceWriter(fs icebergio.WriteFileIO, newPath func(int) string, schema *arrow.Schema, opts WriterOptions, tmpl *metadata.FileMetaData) *spliceWriter {
	return &spliceWriter{fs: fs, newPath: newPath, schema: schema, opts: opts, meta: metaStreamed(opts.Metadata), tmpl: tmpl,
		cuts: slices.Clone(opts.cutBefore.At)}
}

// write appends re-encoded rows (conformed, sorted, not earlier than what
// was written before).
func (w *spliceWriter) write(ctx context.Context, rec arrow.RecordBatch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tsIdx := w.schema.FieldIndices(w.opts.TimestampColumn)[0]
	ts := rec.Column(tsIdx)
	if ts.NullN() > 0 {
		return fmt.Errorf("timestamp column %q has %d null values", w.opts.TimestampColumn, ts.NullN())
	}
	micros := appendMicros(make([]int64, 0, ts.Len()), ts)
	if err := w.checkOrder(micros); err != nil {
		return err
	}
	n := int64(len(micros))
	for off := int64(0); off < n; {
		if w.closing && micros[off] != w.lastTs {
			if err := w.closeFile(); err != nil {
				return err
			}
			continue
		}
		if err := w.passCuts(micros[off]); err != nil {
			return err
		}
		rgRows := int64(0)
		if w.rg != nil {
			rgRows = w.rg.rows
		}
		end := rowGroupCut(micros, off, w.opts.RowGroupRows-rgRows, w.closing, w.lastTs)
		if len(w.cuts) > 0 {
			end = off + int64(sort.Search(int(end-off), func(i int) bool { return micros[off+int64(i)] >= w.cuts[0] }))
		}
		if err := w.encode(rec, off, end, micros[off:end]); err != nil {
			return err
		}
		off = end
		if w.rg.rows == w.opts.RowGroupRows {
			if err := w.endRowGroup(micros[off-1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *spliceWriter) checkOrder(micros []int64) error {
	for _, t := range micros {
		if w.wrote && t < w.prevTs {
			return fmt.Errorf("merge produced rows out of timestamp order (%d after %d): an input's rows disagree with its sort order or page index", t, w.prevTs)
		}
		w.prevTs, w.wrote = t, true
	}
	return nil
}

// passCuts closes the current file before a row at ts when a density cut
// lies at or before ts, as the sink does: the rows before the cut stay in
// the file, this row starts the next one (later than all of them, so the
// files stay disjoint).
func (w *spliceWriter) passCuts(ts int64) error {
	if len(w.cuts) == 0 || w.cuts[0] > ts {
		return nil
	}
	for len(w.cuts) > 0 && w.cuts[0] <= ts {
		w.cuts = w.cuts[1:]
	}
	if w.cur != nil && (w.cur.rows > 0) {
		return w.closeFile()
	}
	return nil
}

// encode writes rows [from, to) of rec into the pending row group.
func (w *spliceWriter) encode(rec arrow.RecordBatch, from, to int64, micros []int64) error {
	if w.cur == nil {
		if err := w.openFile(micros[0]); err != nil {
			return err
		}
	}
	if w.rg == nil {
		rg := &pendingRowGroup{}
		fw, err := pqarrow.NewFileWriter(w.schema, &rg.buf, writerProperties(w.opts), spliceArrowProps(w.opts))
		if err != nil {
			return fmt.Errorf("writing %s: starting row group: %w", w.cur.path, err)
		}
		rg.fw = fw
		w.rg = rg
	}
	part := rec.NewSlice(from, to)
	defer part.Release()
	if err := w.rg.fw.WriteBuffered(part); err != nil {
		return fmt.Errorf("writing %s: %w", w.cur.path, err)
	}
	w.cur.meta.AddRows(part, micros)
	f := w.cur
	if f.rows == 0 {
		f.minTs = micros[0]
	}
	f.maxTs = micros[len(micros)-1]
	f.rows += to - from
	w.rg.rows += to - from
	return nil
}

// endRowGroup finishes the pending row group (last timestamp lastTs) and
// copies it into the current file.
func (w *spliceWriter) endRowGroup(lastTs int64) error {
	rg := w.rg
	if rg == nil {
		return nil
	}
	w.rg = nil
	if err := rg.fw.Close(); err != nil {
		return fmt.Errorf("writing %s: encoding row group: %w", w.cur.path, err)
	}
	md, err := rg.fw.FileMetadata()
	if err != nil {
		return fmt.Errorf("writing %s: encoding row group: %w", w.cur.path, err)
	}
	if md.NumRowGroups() != 1 {
		return fmt.Errorf("writing %s: an encoded row group came out as %d", w.cur.path, md.NumRowGroups())
	}
	b := rg.buf.Bytes()
	if err := w.cur.appendRowGroup(rgSource{name: "encoded row group", r: bytes.NewReader(b), size: int64(len(b)), md: md}, 0); err != nil {
		return err
	}
	w.cur.meta.EndRowGroup()
	w.rowGroupDone(lastTs)
	return nil
}

// rowGroupDone notes a row group appended to the current file ending at
// lastTs, and whether the file is now full.
func (w *spliceWriter) rowGroupDone(lastTs int64) {
	w.lastTs = lastTs
	if w.opts.TargetFileBytes > 0 && w.cur.cw.N >= w.opts.TargetFileBytes {
		w.closing = true
	}
}

// copyRowGroup appends row group rg of src unchanged. ts are its
// timestamps and groups its group columns (index.Builder.GroupColumns
// order), decoded for the footer's counts; bloom is its row-group bloom as
// its own footer encodes it (nil: none).
func (w *spliceWriter) copyRowGroup(ctx context.Context, src rgSource, rg int, ts []int64, groups []arrow.Array, bloom []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ts) == 0 {
		return nil
	}
	if err := w.checkOrder(ts); err != nil {
		return err
	}
	if w.rg != nil {
		if err := w.endRowGroup(w.cur.maxTs); err != nil {
			return err
		}
	}
	// A full file closes at the first new timestamp; a row group that starts
	// with the last one stays in this file, so the outputs stay disjoint.
	if w.closing && ts[0] != w.lastTs {
		if err := w.closeFile(); err != nil {
			return err
		}
	}
	if err := w.passCuts(ts[0]); err != nil {
		return err
	}
	// The plan copies no row group with a cut after its first row; should
	// one come by, the cut is passed over rather than splitting it.
	for len(w.cuts) > 0 && w.cuts[0] <= ts[len(ts)-1] {
		w.cuts = w.cuts[1:]
	}
	if w.cur == nil {
		if err := w.openFile(ts[0]); err != nil {
			return err
		}
	}
	f := w.cur
	before := f.cw.N
	if err := f.appendRowGroup(src, rg); err != nil {
		return err
	}
	w.copiedBytes += f.cw.N - before
	f.meta.AddCopiedRowGroup(groups, ts, bloom)
	if f.rows == 0 {
		f.minTs = ts[0]
	}
	f.maxTs = ts[len(ts)-1]
	f.rows += int64(len(ts))
	w.rowGroupDone(ts[len(ts)-1])
	return nil
}

func (w *spliceWriter) openFile(firstTs int64) error {
	p := pathFor(len(w.outputs), firstTs, w.opts.cutBefore, w.newPath, w.opts.LatePath)
	fw, err := w.fs.Create(p)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	w.created = append(w.created, p)
	cw := &CountingWriter{W: fw}
	if _, err := io.WriteString(cw, parquetMagic); err != nil {
		_ = fw.Close()
		return fmt.Errorf("writing %s: %w", p, err)
	}
	body := *w.tmpl.FileMetaData
	body.RowGroups, body.NumRows, body.KeyValueMetadata = nil, 0, nil
	w.cur = &splicedFile{path: p, w: fw, cw: cw, md: &metadata.FileMetaData{FileMetaData: &body, Schema: w.tmpl.Schema}, meta: newMetaBuilder(w.meta, w.schema)}
	return nil
}

// appendRowGroup copies the column chunks of row group rg of src to the end
// of the file and records its metadata with the offsets moved to where the
// chunks now are. Column and offset indexes are kept for closeFile.
func (f *splicedFile) appendRowGroup(src rgSource, rg int) error {
	if rg < 0 || rg >= len(src.md.RowGroups) {
		return fmt.Errorf("copying row group %d of %s: it has %d", rg, src.name, len(src.md.RowGroups))
	}
	srg := src.md.RowGroups[rg]
	if len(srg.Columns) != f.md.Schema.NumColumns() {
		return fmt.Errorf("copying row group %d of %s: %d column chunks, the output has %d columns", rg, src.name, len(srg.Columns), f.md.Schema.NumColumns())
	}
	out := *srg
	out.Columns = slices.Clone(srg.Columns)
	start := f.cw.N
	var total int64
	colIdx := make([][]byte, len(srg.Columns))
	offIdx := make([]*metadata.OffsetIndexBuilder, len(srg.Columns))
	for j, c := range srg.Columns {
		fail := func(err error) error {
			return inputErr("copying row group", src.name, fmt.Errorf("row group %d column %d: %w", rg, j, err))
		}
		if c.MetaData == nil || c.CryptoMetadata != nil || len(c.EncryptedColumnMetadata) > 0 {
			return fail(errors.New("no plaintext column metadata"))
		}
		if c.FilePath != nil && *c.FilePath != "" {
			return fail(fmt.Errorf("column chunk is in another file (%s)", *c.FilePath))
		}
		cm := *c.MetaData
		// The output's path, not the source's: a chunk is found by it.
		cm.PathInSchema = f.md.Schema.Column(j).ColumnPath()
		from := cm.DataPageOffset
		if d := cm.DictionaryPageOffset; d != nil && *d >= int64(len(parquetMagic)) && *d < from {
			from = *d
		}
		n := cm.TotalCompressedSize
		if from < int64(len(parquetMagic)) || n <= 0 || from+n > src.size {
			return fail(fmt.Errorf("column chunk [%d, +%d) lies outside the file (%d bytes)", from, n, src.size))
		}
		dst := f.cw.N
		if f.copyBuf == nil {
			f.copyBuf = make([]byte, copyBufferBytes)
		}
		if copied, err := io.CopyBuffer(f.cw, io.NewSectionReader(src.r, from, n), f.copyBuf); err != nil || copied != n {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return fail(fmt.Errorf("copying %d bytes at %d: %w", n, from, err))
		}
		shift := dst - from
		cm.DataPageOffset += shift
		if d := cm.DictionaryPageOffset; d != nil {
			v := *d + shift
			if *d < int64(len(parquetMagic)) {
				v = *d // "no dictionary" written as 0 by some writers
			}
			cm.DictionaryPageOffset = &v
		}
		cm.IndexPageOffset = nil
		// Parquet's own bloom filters live outside the chunk; siglake does
		// not write them, and a copied one would need copying too.
		cm.BloomFilterOffset, cm.BloomFilterLength = nil, nil
		cc := *c
		cc.MetaData = &cm
		cc.FilePath = nil
		cc.FileOffset = dst
		cc.ColumnIndexOffset, cc.ColumnIndexLength, cc.OffsetIndexOffset, cc.OffsetIndexLength = nil, nil, nil, nil
		if c.ColumnIndexOffset != nil && c.ColumnIndexLength != nil {
			b, err := readRange(src, *c.ColumnIndexOffset, int64(*c.ColumnIndexLength))
			if err != nil {
				return fail(fmt.Errorf("column index: %w", err))
			}
			colIdx[j] = b
		}
		if c.OffsetIndexOffset != nil && c.OffsetIndexLength != nil {
			b, err := readRange(src, *c.OffsetIndexOffset, int64(*c.OffsetIndexLength))
			if err != nil {
				return fail(fmt.Errorf("offset index: %w", err))
			}
			oi := metadata.NewOffsetIndex(b, nil, nil)
			ob := &metadata.OffsetIndexBuilder{}
			for _, loc := range oi.GetPageLocations() {
				if loc.Offset < from || loc.Offset+int64(loc.CompressedPageSize) > from+n {
					return fail(fmt.Errorf("offset index page at %d lies outside its column chunk", loc.Offset))
				}
				if err := ob.AddPage(loc.Offset+shift, loc.FirstRowIndex, loc.CompressedPageSize); err != nil {
					return fail(err)
				}
			}
			if err := ob.Finish(0); err != nil {
				return fail(err)
			}
			offIdx[j] = ob
		}
		out.Columns[j] = &cc
		total += n
	}
	ord := int16(len(f.md.RowGroups))
	out.FileOffset, out.TotalCompressedSize, out.Ordinal = &start, &total, &ord
	f.md.RowGroups = append(f.md.RowGroups, &out)
	f.md.NumRows += out.NumRows
	f.colIdx = append(f.colIdx, colIdx)
	f.offIdx = append(f.offIdx, offIdx)
	return nil
}

func readRange(src rgSource, off, n int64) ([]byte, error) {
	if off < 0 || n <= 0 || off+n > src.size {
		return nil, fmt.Errorf("[%d, +%d) lies outside the file (%d bytes)", off, n, src.size)
	}
	b := make([]byte, n)
	if _, err := src.r.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && off+n == src.size) {
		return nil, err
	}
	return b, nil
}

// closeFile finishes the pending row group, writes the page indexes and the
// footer of the current file.
func (w *spliceWriter) closeFile() error {
	w.closing = false
	if w.rg != nil {
		if err := w.endRowGroup(w.cur.maxTs); err != nil {
			return err
		}
		w.closing = false
	}
	f := w.cur
	if f == nil {
		return nil
	}
	w.cur = nil
	fail := func(err error) error { _ = f.w.Close(); return fmt.Errorf("writing %s: %w", f.path, err) }
	// Column indexes, then offset indexes, as arrow-go's writer lays them out.
	for rg, cols := range f.colIdx {
		for j, b := range cols {
			if b == nil {
				continue
			}
			off, n := f.cw.N, int32(len(b))
			if _, err := f.cw.Write(b); err != nil {
				return fail(err)
			}
			c := f.md.RowGroups[rg].Columns[j]
			c.ColumnIndexOffset, c.ColumnIndexLength = &off, &n
		}
	}
	for rg, cols := range f.offIdx {
		for j, ob := range cols {
			if ob == nil {
				continue
			}
			off := f.cw.N
			n, err := ob.WriteTo(f.cw, nil)
			if err != nil {
				return fail(fmt.Errorf("offset index: %w", err))
			}
			l := int32(n)
			c := f.md.RowGroups[rg].Columns[j]
			c.OffsetIndexOffset, c.OffsetIndexLength = &off, &l
		}
	}
	var kv metadata.KeyValueMetadata
	if err := kv.Append(FooterGenerationKey, fmt.Sprint(w.opts.Generation)); err != nil {
		return fail(err)
	}
	entries, _, err := f.meta.Finish()
	if err != nil {
		return fail(fmt.Errorf("search metadata: %w", err))
	}
	for _, e := range entries {
		if err := kv.Append(e.Key, e.Value); err != nil {
			return fail(fmt.Errorf("footer key %s: %w", e.Key, err))
		}
	}
	f.md.FileMetaData.KeyValueMetadata = kv
	var footer bytes.Buffer
	if _, err := f.md.WriteTo(&footer, nil); err != nil {
		return fail(fmt.Errorf("encoding footer: %w", err))
	}
	tail := binary.LittleEndian.AppendUint32(nil, uint32(footer.Len()))
	tail = append(tail, parquetMagic...)
	if _, err := f.cw.Write(footer.Bytes()); err != nil {
		return fail(err)
	}
	if _, err := f.cw.Write(tail); err != nil {
		return fail(err)
	}
	if err := f.w.Close(); err != nil {
		return fmt.Errorf("writing %s: closing file: %w", f.path, err)
	}
	md, err := metadata.NewFileMetaData(footer.Bytes(), nil)
	if err != nil {
		return fmt.Errorf("writing %s: reading back footer: %w", f.path, err)
	}
	w.outputs = append(w.outputs, Output{
		Path: f.path, Size: f.cw.N, Rows: f.rows,
		MinTimestamp: f.minTs, MaxTimestamp: f.maxTs,
		Generation: w.opts.Generation, Meta: md,
	})
	return nil
}

// finish closes the last file and returns the outputs; on error it aborts.
func (w *spliceWriter) finish() ([]Output, error) {
	if err := w.closeFile(); err != nil {
		return nil, errors.Join(err, w.abort())
	}
	return w.outputs, nil
}

// abort closes and removes every file written (best effort, as sink.abort).
func (w *spliceWriter) abort() error {
	var errs []error
	if w.rg != nil {
		_ = w.rg.fw.Close()
		w.rg = nil
	}
	if w.cur != nil {
		_ = w.cur.w.Close()
		w.cur = nil
	}
	w.closing = false
	for _, p := range w.created {
		if err := w.fs.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("removing aborted output %s: %w", p, err))
		}
	}
	w.created, w.outputs = nil, nil
	return errors.Join(errs...)
}
