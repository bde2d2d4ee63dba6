package input

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// TimestampPage is one data page of an input's timestamp column as its page index
// describes it: file rows [row, row+n), timestamps in [min, max] (micros).
type TimestampPage struct {
	Row, N   int64
	Min, Max int64
}

// TimestampPages reads the page index (column index and offset index) of
// in's timestamp column. ok is false when the file has none for some row
// group, or the column is not an INT64 timestamp: callers then decode every
// page. Only the page index is read, not the pages.
func TimestampPages(in *File, tsName string) (pages []TimestampPage, ok bool) {
	leaf, unit, ok := timestampLeaf(in, tsName)
	if !ok {
		return nil, false
	}
	md := in.Parquet.MetaData()
	pir := in.Parquet.GetPageIndexReader()
	if pir == nil {
		return nil, false
	}
	var base int64
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		rows := md.RowGroup(rg).NumRows()
		r, err := pir.RowGroup(rg)
		if err != nil || r == nil {
			return nil, false
		}
		ci, err := r.GetColumnIndex(leaf)
		if err != nil || ci == nil {
			return nil, false
		}
		oi, err := r.GetOffsetIndex(leaf)
		if err != nil || oi == nil {
			return nil, false
		}
		if pages, ok = appendRowGroupPages(pages, oi.GetPageLocations(), ci.GetMinValues(), ci.GetMaxValues(), ci.GetNullPages(), base, rows, unit); !ok {
			return nil, false
		}
		base += rows
	}
	return pages, true
}

// timestampLeaf finds in's timestamp column as a Parquet leaf: ok is false
// unless it is one INT64 leaf with a timestamp logical type.
func timestampLeaf(in *File, tsName string) (leaf int, unit arrow.TimeUnit, ok bool) {
	leaves := LeafIndices(in, tsName)
	if len(leaves) != 1 {
		return 0, 0, false
	}
	col := in.Parquet.MetaData().Schema.Column(leaves[0])
	if col.PhysicalType() != parquet.Types.Int64 {
		return 0, 0, false
	}
	switch lt := col.LogicalType().(type) {
	case schema.TimestampLogicalType:
		unit, ok = parquetUnit(lt.TimeUnit())
	case *schema.TimestampLogicalType:
		unit, ok = parquetUnit(lt.TimeUnit())
	}
	return leaves[0], unit, ok
}

// appendRowGroupPages appends the pages of one row group of rows rows,
// starting at row base of the file, from its offset and column index; ok is
// false when the index is inconsistent (then the caller decodes every page).
func appendRowGroupPages(pages []TimestampPage, locs []*metadata.PageLocation, mins, maxs [][]byte, nulls []bool, base, rows int64, unit arrow.TimeUnit) ([]TimestampPage, bool) {
	if len(mins) != len(locs) || len(maxs) != len(locs) || len(nulls) != len(locs) {
		return nil, false
	}
	for i, l := range locs {
		end := rows
		if i+1 < len(locs) {
			end = locs[i+1].FirstRowIndex
		}
		if nulls[i] || len(mins[i]) != 8 || len(maxs[i]) != 8 || end <= l.FirstRowIndex || l.FirstRowIndex < 0 || end > rows {
			return nil, false
		}
		p := TimestampPage{
			Row: base + l.FirstRowIndex, N: end - l.FirstRowIndex,
			Min: ToMicros(int64(binary.LittleEndian.Uint64(mins[i])), unit),
			Max: ToMicros(int64(binary.LittleEndian.Uint64(maxs[i])), unit),
		}
		if p.Min > p.Max || (len(pages) > 0 && (pages[len(pages)-1].Row+pages[len(pages)-1].N != p.Row)) {
			return nil, false
		}
		pages = append(pages, p)
	}
	return pages, true
}

func parquetUnit(u schema.TimeUnitType) (arrow.TimeUnit, bool) {
	switch u {
	case schema.TimeUnitMillis:
		return arrow.Millisecond, true
	case schema.TimeUnitMicros:
		return arrow.Microsecond, true
	case schema.TimeUnitNanos:
		return arrow.Nanosecond, true
	}
	return 0, false
}

// IsolatedRuns returns, per input, the row ranges the timestamp pass need not
// decode: runs of consecutive pages whose time range [min, max] no page of any
// other input touches (bounds included). All rows of such a page come out
// together, after every other input's earlier rows and before its later ones,
// so the merge only needs to know that the page starts at min. Returns nil
// (decode everything) unless every input has a page index.
func IsolatedRuns(pages [][]TimestampPage, ok []bool) [][]TimestampPage {
	for _, o := range ok {
		if !o {
			return nil
		}
	}
	overlaps := func(i int, p TimestampPage) bool {
		for j, q := range pages {
			if j == i {
				continue
			}
			// q is sorted by time (the input is sorted): the first page
			// ending at or after p.min is the only candidate.
			k := sort.Search(len(q), func(k int) bool { return q[k].Max >= p.Min })
			if k < len(q) && q[k].Min <= p.Max {
				return true
			}
		}
		return false
	}
	out := make([][]TimestampPage, len(pages))
	for i, ps := range pages {
		for _, p := range ps {
			if overlaps(i, p) {
				continue
			}
			if l := len(out[i]) - 1; l >= 0 && out[i][l].Row+out[i][l].N == p.Row {
				out[i][l].N += p.N
				out[i][l].Max = p.Max
			} else {
				out[i] = append(out[i], p)
			}
		}
	}
	return out
}

// skippingTsSource is the page-bounded path's timestamp pass over one input
// that skips the isolated runs (IsolatedRuns): it reports their rows with
// the run's minimum timestamp standing in for every row, without reading
// their pages, and seeks its reader (through the offset index) past them.
// The data pass reads the real rows, and the sink rejects any output that
// is not sorted, so a page index that lies fails the merge instead of
// misordering it.
type skippingTsSource struct {
	src      *PQSource // timestamp-only
	skip     []TimestampPage
	rows     int64 // rows of the input
	maxRows  int64 // most rows one stand-in batch holds
	pos      int64 // next input row to report
	seek     bool  // the reader is not at pos
	skipped  *int64
	fileName string
}

// NewSkippingTsSource skips skip (IsolatedRuns of the input) in src, an input of rows rows,
// reporting stand-in batches of at most maxRows rows and adding the rows it skipped to skipped
// (nil: not counted).
func NewSkippingTsSource(src *PQSource, skip []TimestampPage, rows, maxRows int64, skipped *int64, fileName string) Source {
	return &skippingTsSource{src: src, skip: skip, rows: rows, maxRows: maxRows, skipped: skipped, fileName: fileName}
}

func (s *skippingTsSource) Next(ctx context.Context) (Batch, bool, error) {
	if len(s.skip) > 0 && s.skip[0].Row == s.pos {
		r := &s.skip[0]
		n := min(r.N, s.maxRows)
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = r.Min
		}
		r.Row, r.N = r.Row+n, r.N-n
		if r.N == 0 {
			s.skip = s.skip[1:]
		}
		s.pos += n
		s.seek = true
		if s.skipped != nil {
			atomic.AddInt64(s.skipped, n)
		}
		return Batch{TS: ts}, true, nil
	}
	if s.pos >= s.rows {
		return Batch{}, false, nil
	}
	if s.seek {
		if err := s.src.rr.SeekToRow(s.pos); err != nil {
			return Batch{}, false, NewError("reading input", s.fileName, fmt.Errorf("seeking the timestamp pass to row %d: %w", s.pos, err))
		}
		s.seek = false
	}
	b, ok, err := s.src.Next(ctx)
	if err != nil || !ok {
		return b, ok, err
	}
	if len(s.skip) > 0 && s.skip[0].Row < s.pos+int64(len(b.TS)) {
		b.TS = b.TS[:s.skip[0].Row-s.pos]
		s.seek = true
	}
	s.pos += int64(len(b.TS))
	return b, true, nil
}

func (s *skippingTsSource) Close() error { return s.src.Close() }

// LargestPages estimates the decoded size of in's largest data page, summed over its leaf
// columns: what a reader that decodes a page whole (parquet-go's) holds per input. Each column's
// largest compressed page (from the offset index) is scaled by its chunk's compression ratio.
// ok is false when the file has no offset index for some column chunk.
func LargestPages(in *File) (bytes int64, ok bool) {
	md := in.Parquet.MetaData()
	pir := in.Parquet.GetPageIndexReader()
	if pir == nil {
		return 0, false
	}
	largest := make([]int64, md.Schema.NumColumns())
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		r, err := pir.RowGroup(rg)
		if err != nil || r == nil {
			return 0, false
		}
		for c := range largest {
			oi, err := r.GetOffsetIndex(c)
			cc, cerr := md.RowGroup(rg).ColumnChunk(c)
			if err != nil || oi == nil || cerr != nil || cc.TotalCompressedSize() <= 0 {
				return 0, false
			}
			for _, loc := range oi.GetPageLocations() {
				est := int64(loc.CompressedPageSize) * cc.TotalUncompressedSize() / cc.TotalCompressedSize()
				largest[c] = max(largest[c], est)
			}
		}
	}
	for _, n := range largest {
		bytes += n
	}
	return bytes, true
}
