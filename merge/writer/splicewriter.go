package writer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
	icebergio "github.com/apache/iceberg-go/io"

	"github.com/siglake/siglake/merge/chunksum"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
)

// parquetMagic opens and closes every Parquet file.
const parquetMagic = "PAR1"

// copyBufferBytes is the most of a column chunk one read of a copy asks
// for: on an object store every read is a request, so copies read in large
// ranges (io.Copy's 32 KiB would make a 100 MiB file 3,200 requests).
const copyBufferBytes = 4 << 20

// RowGroupSource is a Parquet file whose row groups can be copied into another
// file: its bytes and its parsed footer.
type RowGroupSource struct {
	Name   string
	Reader io.ReaderAt
	Size   int64
	Meta   *metadata.FileMetaData
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
	crcs         [][]chunksum.Sum // per row group: its chunks' CRC-32C and layout, nil when not known good
}

// copyRowGroup appends row group rg of src unchanged. ts are its
// timestamps and groups its group columns (index.Builder.GroupColumns
// order), decoded for the footer's counts; bloom is its row-group bloom as
// its own footer encodes it (nil: none). crcs are its chunks' checksums as
// its footer records them (nil: none), checked as the bytes are copied;
// verified says its pages were read and found sound.
func (s *Sink) CopyRowGroup(ctx context.Context, src RowGroupSource, rg int, ts []int64, groups []arrow.Array, bloom []byte, crcs []uint32, verified bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if len(ts) == 0 {
		return nil
	}
	if err := s.checkOrder(ts); err != nil {
		return err
	}
	if s.rg != nil {
		if err := s.endRowGroup(s.cur.maxTs); err != nil {
			return err
		}
	}
	// A full file closes at the first new timestamp; a row group that starts
	// with the last one stays in this file, so the outputs stay disjoint.
	if s.closing && ts[0] != s.lastTs {
		if err := s.closeFile(); err != nil {
			return err
		}
	}
	if err := s.passCuts(ts[0]); err != nil {
		return err
	}
	// The plan copies no row group with a cut after its first row; should
	// one come by, the cut is passed over rather than splitting it.
	for len(s.cuts) > 0 && s.cuts[0] <= ts[len(ts)-1] {
		s.cuts = s.cuts[1:]
	}
	if s.cur == nil {
		if err := s.openFile(ts[0]); err != nil {
			return err
		}
	}
	f := s.cur
	before := f.cw.N
	if err := f.appendRowGroup([]RowGroupSource{src}, rg, crcs, verified); err != nil {
		return err
	}
	s.copiedBytes += f.cw.N - before
	f.meta.AddCopiedRowGroup(groups, ts, bloom)
	if f.rows == 0 {
		f.minTs = ts[0]
	}
	f.maxTs = ts[len(ts)-1]
	f.rows += int64(len(ts))
	s.rowGroupDone(ts[len(ts)-1])
	return nil
}

// openFile starts output file i, whose first row is at firstTs: a file that
// starts in a sparse run joins the late stream when the caller names late
// files (WriterOptions.LatePath).
func (s *Sink) openFile(firstTs int64) error {
	var p string
	if s.opts.LatePath != nil && s.runs.SparseAt(firstTs) {
		p = s.opts.LatePath(len(s.outputs))
	} else {
		p = s.newPath(len(s.outputs))
	}
	fw, err := s.fs.Create(p)
	if err != nil {
		return fmt.Errorf("creating %s: %w", p, err)
	}
	s.created = append(s.created, p)
	cw := &CountingWriter{W: fw}
	if _, err := io.WriteString(cw, parquetMagic); err != nil {
		_ = fw.Close()
		return fmt.Errorf("writing %s: %w", p, err)
	}
	body := *s.tmpl.FileMetaData
	body.RowGroups, body.NumRows, body.KeyValueMetadata = nil, 0, nil
	s.cur = &splicedFile{path: p, w: fw, cw: cw, md: &metadata.FileMetaData{FileMetaData: &body, Schema: s.tmpl.Schema}, meta: newMetaBuilder(s.meta, s.schema)}
	return nil
}

// appendRowGroup copies the column chunks of row group rg of each of srcs,
// in order (their columns together are the output's), to the end of the
// file and records the row group's metadata with the offsets moved to where
// the chunks now are. Column and offset indexes are kept for closeFile.
// Each chunk's CRC-32C is taken as it is copied: want, if set, holds what
// the source's footer says (chunksum.Key) and a difference fails the copy;
// the output's footer records the sums when the bytes are known good (want
// matched, or trusted: re-encoded or verified page by page).
func (f *splicedFile) appendRowGroup(srcs []RowGroupSource, rg int, want []uint32, trusted bool) error {
	ncols, err := f.checkRowGroup(srcs, rg, want)
	if err != nil {
		return err
	}
	out := *srcs[0].Meta.RowGroups[rg]
	out.Columns, out.TotalByteSize = nil, 0
	start := f.cw.N
	var total int64
	colIdx := make([][]byte, ncols)
	offIdx := make([]*metadata.OffsetIndexBuilder, ncols)
	sums := make([]chunksum.Sum, ncols)
	for _, src := range srcs {
		out.TotalByteSize += src.Meta.RowGroups[rg].TotalByteSize
		for jj, c := range src.Meta.RowGroups[rg].Columns {
			j := len(out.Columns)
			cc, err := f.copyChunk(src, rg, jj, j, want)
			if err != nil {
				return err
			}
			cm := *c.MetaData
			// The output's path, not the source's: a chunk is found by it.
			cm.PathInSchema = f.md.Schema.Column(j).ColumnPath()
			cm.DataPageOffset += cc.shift
			if d := cm.DictionaryPageOffset; d != nil {
				v := *d + cc.shift
				if *d < int64(len(parquetMagic)) {
					v = *d // "no dictionary" written as 0 by some writers
				}
				cm.DictionaryPageOffset = &v
			}
			cm.IndexPageOffset = nil
			// Parquet's own bloom filters live outside the chunk; siglake does
			// not write them, and a copied one would need copying too.
			cm.BloomFilterOffset, cm.BloomFilterLength = nil, nil
			oc := *c
			oc.MetaData = &cm
			oc.FilePath = nil
			oc.FileOffset = cc.sum.Off
			oc.ColumnIndexOffset, oc.ColumnIndexLength, oc.OffsetIndexOffset, oc.OffsetIndexLength = nil, nil, nil, nil
			sums[j], offIdx[j], colIdx[j] = cc.sum, cc.offIdx, cc.colIdx
			out.Columns = append(out.Columns, &oc)
			total += cc.sum.Size
		}
	}
	ord := int16(len(f.md.RowGroups))
	out.FileOffset, out.TotalCompressedSize, out.Ordinal = &start, &total, &ord
	f.md.RowGroups = append(f.md.RowGroups, &out)
	f.md.NumRows += out.NumRows
	f.colIdx = append(f.colIdx, colIdx)
	f.offIdx = append(f.offIdx, offIdx)
	if !trusted && want == nil {
		sums = nil // copied unverified: the sums would vouch for bytes nobody checked
	}
	f.crcs = append(f.crcs, sums)
	return nil
}

// checkRowGroup checks that row group rg of srcs can become one row group of
// f: the ordinal fits, every source has it with the same rows, and their
// column chunks together are f's columns (and want's sums). It returns the
// number of column chunks.
func (f *splicedFile) checkRowGroup(srcs []RowGroupSource, rg int, want []uint32) (int, error) {
	if len(f.md.RowGroups) > math.MaxInt16 {
		return 0, fmt.Errorf("writing %s: more than %d row groups in one file (Parquet's row-group ordinal is an int16): raise the row-group length or lower the target file size", f.path, math.MaxInt16+1)
	}
	ncols := 0
	for _, src := range srcs {
		if rg < 0 || rg >= len(src.Meta.RowGroups) {
			return 0, fmt.Errorf("copying row group %d of %s: it has %d", rg, src.Name, len(src.Meta.RowGroups))
		}
		if n := src.Meta.RowGroups[rg].NumRows; n != srcs[0].Meta.RowGroups[rg].NumRows {
			return 0, fmt.Errorf("copying row group %d of %s: %d rows, its other columns have %d", rg, src.Name, n, srcs[0].Meta.RowGroups[rg].NumRows)
		}
		ncols += len(src.Meta.RowGroups[rg].Columns)
	}
	if ncols != f.md.Schema.NumColumns() || (want != nil && len(want) != ncols) {
		return 0, fmt.Errorf("copying row group %d of %s: %d column chunks, the output has %d columns", rg, srcs[0].Name, ncols, f.md.Schema.NumColumns())
	}
	return ncols, nil
}

// copiedChunk is one column chunk copied to the end of a spliced file.
type copiedChunk struct {
	sum    chunksum.Sum // where it now lies, its size and CRC-32C
	shift  int64        // its new offset minus its offset in the source
	offIdx *metadata.OffsetIndexBuilder
	colIdx []byte
}

// copyChunk copies column chunk jj of row group rg of src, which becomes
// output column j, checking its sum against want[j] (if want is set) and
// rebasing its offset index; its column index is kept as it is, once it parses.
func (f *splicedFile) copyChunk(src RowGroupSource, rg, jj, j int, want []uint32) (copiedChunk, error) {
	fail := func(err error) (copiedChunk, error) {
		return copiedChunk{}, input.NewError("copying row group", src.Name, fmt.Errorf("row group %d column %d: %w", rg, jj, err))
	}
	c := src.Meta.RowGroups[rg].Columns[jj]
	if c.MetaData == nil || c.CryptoMetadata != nil || len(c.EncryptedColumnMetadata) > 0 {
		return fail(errors.New("no plaintext column metadata"))
	}
	if c.FilePath != nil && *c.FilePath != "" {
		return fail(fmt.Errorf("column chunk is in another file (%s)", *c.FilePath))
	}
	from := chunksum.Start(c.MetaData.DataPageOffset, c.MetaData.DictionaryPageOffset)
	n := c.MetaData.TotalCompressedSize
	if from < int64(len(parquetMagic)) || n <= 0 || from+n > src.Size {
		return fail(fmt.Errorf("column chunk [%d, +%d) lies outside the file (%d bytes)", from, n, src.Size))
	}
	dst := f.cw.N
	if f.copyBuf == nil {
		f.copyBuf = make([]byte, copyBufferBytes)
	}
	h := crc32.New(chunksum.Table)
	if copied, err := io.CopyBuffer(io.MultiWriter(f.cw, h), io.NewSectionReader(src.Reader, from, n), f.copyBuf); err != nil || copied != n {
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return fail(fmt.Errorf("copying %d bytes at %d: %w", n, from, err))
	}
	cc := copiedChunk{sum: chunksum.Sum{Off: dst, Size: n, Values: c.MetaData.NumValues, CRC: h.Sum32()}, shift: dst - from}
	if want != nil && cc.sum.CRC != want[j] {
		return fail(fmt.Errorf("column chunk checksum %08x, its footer says %08x: the file was damaged after it was written", cc.sum.CRC, want[j]))
	}
	pages := -1 // not known: no offset index
	if c.OffsetIndexOffset != nil && c.OffsetIndexLength != nil {
		ob, n, err := rebaseOffsetIndex(src, *c.OffsetIndexOffset, int64(*c.OffsetIndexLength), from, n, cc.shift)
		if err != nil {
			return fail(fmt.Errorf("offset index: %w", err))
		}
		cc.offIdx, pages = ob, n
	}
	// The column index is copied as it is, outside the chunk and its
	// sum: it must at least parse, with a page per offset index page,
	// so a damaged one fails here rather than in a reader's pruning.
	if c.ColumnIndexOffset != nil && c.ColumnIndexLength != nil {
		b, err := readRange(src, *c.ColumnIndexOffset, int64(*c.ColumnIndexLength))
		if err == nil {
			err = checkColumnIndex(f.md.Schema.Column(j), b, pages)
		}
		if err != nil {
			return fail(fmt.Errorf("column index: %w", err))
		}
		cc.colIdx = b
	}
	return cc, nil
}

// rebaseOffsetIndex reads the offset index at [off, +length) of src, whose
// pages must lie inside their chunk [from, +n), and moves them by shift. It
// returns the rebased index and its number of pages.
func rebaseOffsetIndex(src RowGroupSource, off, length, from, n, shift int64) (*metadata.OffsetIndexBuilder, int, error) {
	b, err := readRange(src, off, length)
	if err != nil {
		return nil, 0, err
	}
	oi, err := parseOffsetIndex(b)
	if err != nil {
		return nil, 0, err
	}
	ob := &metadata.OffsetIndexBuilder{}
	for _, loc := range oi.GetPageLocations() {
		if loc.Offset < from || loc.Offset+int64(loc.CompressedPageSize) > from+n {
			return nil, 0, fmt.Errorf("offset index page at %d lies outside its column chunk", loc.Offset)
		}
		if err := ob.AddPage(loc.Offset+shift, loc.FirstRowIndex, loc.CompressedPageSize); err != nil {
			return nil, 0, err
		}
	}
	if err := ob.Finish(0); err != nil {
		return nil, 0, err
	}
	return ob, len(oi.GetPageLocations()), nil
}

// parseOffsetIndex parses a serialized offset index; arrow-go panics on one
// that does not parse.
func parseOffsetIndex(b []byte) (oi metadata.OffsetIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			oi, err = nil, fmt.Errorf("does not parse: %v", r)
		}
	}()
	return metadata.NewOffsetIndex(b, nil, nil), nil
}

// checkColumnIndex says whether b is a column index of a column descr
// describes, with a page per page of its offset index (pages; -1: none).
func checkColumnIndex(descr *schema.Column, b []byte, pages int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("does not parse: %v", r)
		}
	}()
	ci := metadata.NewColumnIndex(descr, b, nil, nil)
	if n := len(ci.GetNullPages()); pages >= 0 && n != pages {
		return fmt.Errorf("describes %d pages, the offset index %d", n, pages)
	}
	return nil
}

// readRange reads the n bytes of src at off, which must lie inside it.
func readRange(src RowGroupSource, off, n int64) ([]byte, error) {
	if off < 0 || n <= 0 || off+n > src.Size {
		return nil, fmt.Errorf("[%d, +%d) lies outside the file (%d bytes)", off, n, src.Size)
	}
	b := make([]byte, n)
	if _, err := src.Reader.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && off+n == src.Size) {
		return nil, err
	}
	return b, nil
}

// closeFile finishes the pending row group, writes the page indexes and the
// footer of the current file.
func (s *Sink) closeFile() error {
	s.closing = false
	if s.rg != nil {
		if err := s.endRowGroup(s.cur.maxTs); err != nil {
			return err
		}
		s.closing = false
	}
	f := s.cur
	if f == nil {
		return nil
	}
	s.cur = nil
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
	if err := kv.Append(FooterGenerationKey, fmt.Sprint(s.opts.Generation)); err != nil {
		return fail(err)
	}
	entries, skipped, err := f.meta.Finish()
	if err != nil {
		return fail(fmt.Errorf("search metadata: %w", err))
	}
	if v, ok := chunksum.Encode(f.crcs); ok {
		entries = append(entries, index.Entry{Key: chunksum.Key, Value: v})
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
	s.outputs = append(s.outputs, Output{
		Path: f.path, Size: f.cw.N, Rows: f.rows,
		MinTimestamp: f.minTs, MaxTimestamp: f.maxTs,
		Generation: s.opts.Generation, Meta: md, SkippedIndexes: skipped, Encoder: s.encoder,
	})
	return nil
}

// finish closes the last file and returns the outputs; on error it aborts.
func (s *Sink) Finish() ([]Output, error) {
	if err := s.closeFile(); err != nil {
		return nil, errors.Join(err, s.Abort())
	}
	return s.outputs, nil
}

// abort closes and removes every file written. Removal is best effort: a
// file that cannot be removed is left for orphan collection (it is never
// committed), and the errors are returned for the log.
func (s *Sink) Abort() error {
	var errs []error
	if s.rg != nil {
		for _, c := range s.rg.cols {
			if c.enc != nil {
				c.enc.Abort()
			}
		}
		s.rg = nil
	}
	if s.cur != nil {
		_ = s.cur.w.Close()
		s.cur = nil
	}
	s.closing = false
	for _, p := range s.created {
		if err := s.fs.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("removing aborted output %s: %w", p, err))
		}
	}
	s.created, s.outputs = nil, nil
	return errors.Join(errs...)
}
