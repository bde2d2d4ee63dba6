package merge

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

// tsPage is one data page of an input's timestamp column as its page index
// describes it: file rows [row, row+n), timestamps in [min, max] (micros).
type tsPage struct {
	row, n   int64
	min, max int64
}

// timestampPages reads the page index (column index and offset index) of
// in's timestamp column. ok is false when the file has none for some row
// group, or the column is not an INT64 timestamp: callers then decode every
// page. Only the page index is read, not the pages.
func timestampPages(in *openedInput, tsName string) (pages []tsPage, ok bool) {
	leaf, unit, ok := timestampLeaf(in, tsName)
	if !ok {
		return nil, false
	}
	md := in.pf.MetaData()
	pir := in.pf.GetPageIndexReader()
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
func timestampLeaf(in *openedInput, tsName string) (leaf int, unit arrow.TimeUnit, ok bool) {
	leaves := leafIndices(in, tsName)
	if len(leaves) != 1 {
		return 0, 0, false
	}
	col := in.pf.MetaData().Schema.Column(leaves[0])
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
func appendRowGroupPages(pages []tsPage, locs []*metadata.PageLocation, mins, maxs [][]byte, nulls []bool, base, rows int64, unit arrow.TimeUnit) ([]tsPage, bool) {
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
		p := tsPage{
			row: base + l.FirstRowIndex, n: end - l.FirstRowIndex,
			min: toMicros(int64(binary.LittleEndian.Uint64(mins[i])), unit),
			max: toMicros(int64(binary.LittleEndian.Uint64(maxs[i])), unit),
		}
		if p.min > p.max || (len(pages) > 0 && (pages[len(pages)-1].row+pages[len(pages)-1].n != p.row)) {
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

// isolatedRuns returns, per input, the row ranges the timestamp pass need not
// decode: runs of consecutive pages whose time range [min, max] no page of any
// other input touches (bounds included). All rows of such a page come out
// together, after every other input's earlier rows and before its later ones,
// so the merge only needs to know that the page starts at min. Returns nil
// (decode everything) unless every input has a page index.
func isolatedRuns(pages [][]tsPage, ok []bool) [][]tsPage {
	for _, o := range ok {
		if !o {
			return nil
		}
	}
	overlaps := func(i int, p tsPage) bool {
		for j, q := range pages {
			if j == i {
				continue
			}
			// q is sorted by time (the input is sorted): the first page
			// ending at or after p.min is the only candidate.
			k := sort.Search(len(q), func(k int) bool { return q[k].max >= p.min })
			if k < len(q) && q[k].min <= p.max {
				return true
			}
		}
		return false
	}
	out := make([][]tsPage, len(pages))
	for i, ps := range pages {
		for _, p := range ps {
			if overlaps(i, p) {
				continue
			}
			if l := len(out[i]) - 1; l >= 0 && out[i][l].row+out[i][l].n == p.row {
				out[i][l].n += p.n
				out[i][l].max = p.max
			} else {
				out[i] = append(out[i], p)
			}
		}
	}
	return out
}

// skippingTsSource is the page-bounded path's timestamp pass over one input
// that skips the isolated runs (isolatedRuns): it reports their rows with
// the run's minimum timestamp standing in for every row, without reading
// their pages, and seeks its reader (through the offset index) past them.
// The data pass reads the real rows, and the sink rejects any output that
// is not sorted, so a page index that lies fails the merge instead of
// misordering it.
type skippingTsSource struct {
	src      *pqSource // timestamp-only
	skip     []tsPage
	rows     int64 // rows of the input
	batch    int64 // most rows one stand-in batch holds
	pos      int64 // next input row to report
	seek     bool  // the reader is not at pos
	skipped  *int64
	fileName string
}

func (s *skippingTsSource) next(ctx context.Context) (batch, bool, error) {
	if len(s.skip) > 0 && s.skip[0].row == s.pos {
		r := &s.skip[0]
		n := min(r.n, s.batch)
		ts := make([]int64, n)
		for i := range ts {
			ts[i] = r.min
		}
		r.row, r.n = r.row+n, r.n-n
		if r.n == 0 {
			s.skip = s.skip[1:]
		}
		s.pos += n
		s.seek = true
		if s.skipped != nil {
			atomic.AddInt64(s.skipped, n)
		}
		return batch{ts: ts}, true, nil
	}
	if s.pos >= s.rows {
		return batch{}, false, nil
	}
	if s.seek {
		if err := s.src.rr.SeekToRow(s.pos); err != nil {
			return batch{}, false, inputErr("reading input", s.fileName, fmt.Errorf("seeking the timestamp pass to row %d: %w", s.pos, err))
		}
		s.seek = false
	}
	b, ok, err := s.src.next(ctx)
	if err != nil || !ok {
		return b, ok, err
	}
	if len(s.skip) > 0 && s.skip[0].row < s.pos+int64(len(b.ts)) {
		b.ts = b.ts[:s.skip[0].row-s.pos]
		s.seek = true
	}
	s.pos += int64(len(b.ts))
	return b, true, nil
}

func (s *skippingTsSource) close() error { return s.src.close() }
