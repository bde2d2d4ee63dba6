package search

import (
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge/index"
)

// Reason names the stage and structure that dropped a file or row group (the keys of the
// --explain counters).
type Reason string

const (
	ByManifest      Reason = "manifest_bounds" // iceberg-go's planning: partition and column bounds
	ByTimeBuckets   Reason = "time_buckets"    // siglake.timebuckets.v1: no row in [from, to)
	ByGroupCounts   Reason = "group_counts"    // siglake.groups.v1: no row with the --where values
	ByTrigramBloom  Reason = "trigram_bloom"   // file or row-group trigram bloom: no --contains
	ByTokenBloom    Reason = "token_bloom"     // row-group token bloom: no --token
	ByInvertedIndex Reason = "inverted_index"  // footer or Puffin index: no row with the value
	ByTimeBounds    Reason = "time_bounds"     // a row group's time range (bloom entry or Parquet statistics)
	ByMissingColumn Reason = "missing_column"  // the file lacks a --where column: every value is null
	ByLimit         Reason = "limit_reached"   // the limit was full before the scan reached it
	notPruned       Reason = ""
)

// fileFacts is what the footer stage knows of one opened file.
type fileFacts struct {
	// footer is the decoded search metadata; nil when the search skips metadata. Absent entries
	// answer "maybe" (index.Footer).
	footer    *index.Footer
	rowGroups []rowGroupFacts
	// postings holds, per --where column with an inverted index (footer or Puffin), the ordinals
	// of the rows whose value is one of the condition's values. Columns without an index are
	// absent: scan.
	postings map[string][]uint32
	// missing lists --where columns the file does not have.
	missing []string
}

// rowGroupFacts is one row group from the Parquet footer.
type rowGroupFacts struct {
	firstRow, rows int64
	// minTs and maxTs are the timestamp column's Parquet statistics (µs), when hasBounds.
	minTs, maxTs int64
	hasBounds    bool
}

// footerRowGroups reports, per row group, whether the footer's row-group entry describes it: the
// entry count matches and the entry covers the same rows (its row count, and so its first row,
// equal the Parquet row group's). Anything else means another writer's file or a malformed entry:
// the entry is ignored and the Parquet statistics decide.
func (f *fileFacts) footerRowGroups() []bool {
	out := make([]bool, len(f.rowGroups))
	if n, ok := f.footer.NumRowGroups(); !ok || n != len(f.rowGroups) {
		return out
	}
	var first int64
	for i, g := range f.rowGroups {
		e, ok := f.footer.RowGroupInfo(i)
		out[i] = ok && e.Rows == g.rows && first == g.firstRow
		first += e.Rows
	}
	return out
}

// pruneFile says whether the footer stage drops the whole file, and by what.
func pruneFile(c *compiled, f *fileFacts) Reason {
	if len(f.missing) > 0 {
		return ByMissingColumn
	}
	if ft := f.footer; ft != nil {
		if !ft.MayContainTime(c.from, c.to) {
			return ByTimeBuckets
		}
		if !mayHaveGroups(c, ft) {
			return ByGroupCounts
		}
		if c.contains != nil && !ft.MayContainSubstring(*c.contains) {
			return ByTrigramBloom
		}
		if c.token != nil && !ft.MayContainToken(*c.token) {
			return ByTokenBloom
		}
	}
	for _, rows := range f.postings {
		if len(rows) == 0 {
			return ByInvertedIndex
		}
	}
	return notPruned
}

// mayHaveGroups answers from the group-count entry whether some row has the --where values of
// the group columns. Only string columns are tested: the entry holds values as text, and an
// integer condition's text ("07") need not be the text the writer printed ("7").
func mayHaveGroups(c *compiled, ft *index.Footer) bool {
	cols, values, rows, ok := ft.Groups()
	if !ok {
		return true
	}
	type test struct {
		col    int
		values []string
	}
	var tests []test
	for _, w := range c.where {
		i := slices.Index(cols, w.Column)
		if i < 0 || !isStringColumn(c.filterSchema, w.Column) {
			continue
		}
		tests = append(tests, test{i, w.Values})
	}
	if len(tests) == 0 {
		return true
	}
next:
	for g, vals := range values {
		if rows[g] == 0 || len(vals) != len(cols) {
			continue
		}
		for _, t := range tests {
			if vals[t.col] == nil || !slices.Contains(t.values, *vals[t.col]) {
				continue next
			}
		}
		return true
	}
	return false
}

func isStringColumn(sc *arrow.Schema, name string) bool {
	idx := sc.FieldIndices(name)
	return len(idx) == 1 && (sc.Field(idx[0]).Type.ID() == arrow.STRING || sc.Field(idx[0]).Type.ID() == arrow.LARGE_STRING)
}

// pruneRowGroups says, per row group of a file the footer stage kept, what drops it (notPruned:
// read it).
func pruneRowGroups(c *compiled, f *fileFacts) []Reason {
	out := make([]Reason, len(f.rowGroups))
	entries := f.footerRowGroups()
	for rg, g := range f.rowGroups {
		useFooter := f.footer != nil && entries[rg]
		switch {
		case g.rows == 0:
			out[rg] = ByTimeBounds
		case useFooter && !f.footer.RowGroupMayContainTime(rg, c.from, c.to):
			out[rg] = ByTimeBounds
		case !useFooter && g.hasBounds && !(g.minTs < c.to && g.maxTs >= c.from):
			out[rg] = ByTimeBounds
		case useFooter && c.contains != nil && !f.footer.RowGroupMayContainSubstring(rg, *c.contains):
			out[rg] = ByTrigramBloom
		case useFooter && c.token != nil && !f.footer.RowGroupMayContainToken(rg, *c.token):
			out[rg] = ByTokenBloom
		case !postingsIn(f.postings, g.firstRow, g.firstRow+g.rows):
			out[rg] = ByInvertedIndex
		}
	}
	return out
}

// postingsIn reports whether every indexed column has a matching row in [lo, hi).
func postingsIn(postings map[string][]uint32, lo, hi int64) bool {
	for _, rows := range postings {
		i, _ := slices.BinarySearch(rows, uint32(lo))
		if i == len(rows) || int64(rows[i]) >= hi {
			return false
		}
	}
	return true
}
