// Package rowfilter is the row filter a rewrite, a count or a reader evaluates: predicates of
// column tests and a time range, and the column types they may test. It holds the definition
// only (arrow, nothing of ours): sidecar/rows builds filters from conditions and merge evaluates
// them on decoded batches, so the language of rows need not import the merge paths.
package rowfilter

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// Filter selects the rows a delete-task rewrite drops: a row is dropped
// when any of its predicates matches it. It is evaluated on decoded batches;
// choosing which files to rewrite is the caller's job (Iceberg scan planning).
type Filter struct {
	Predicates []Predicate
	// FirstMatch makes the predicates an ordered list of classes (retention): a row belongs to
	// the first predicate whose column tests hold, and is dropped only when that predicate's
	// time range holds too and it is not Keep. Without it, a row is dropped when any predicate
	// holds whole (deletion requests).
	FirstMatch bool
}

// Predicate is a conjunction: every column test and the time range must hold.
// A null value never matches.
type Predicate struct {
	Columns []ColumnIn
	// From and To bound the timestamp column in microseconds, [From, To); nil
	// leaves that side open.
	From, To *int64
	// Keep never drops the rows of this predicate (with FirstMatch: a class kept forever).
	Keep bool
}

// ColumnIn holds when the column's value is one of Values (text, parsed per
// the column's type: strings as is, integers in decimal, booleans true/false).
type ColumnIn struct {
	Column string
	Values []string
}

// CheckType says whether predicates may test a column of type t, and if not, what they accept.
func CheckType(t arrow.DataType) error {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.BOOL:
		return nil
	}
	return fmt.Errorf("type %s is not accepted: delete predicates test string, integer and boolean columns", t)
}
