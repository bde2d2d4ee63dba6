package search

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/rows"
)

// Query is one search as the command line gives it.
type Query struct {
	// From and To bound the timestamp column, [From, To), in the deletion-request syntax (RFC 3339
	// or a UTC day); empty leaves that side open.
	From, To string
	// Where is a conjunction of COLUMN IN (VALUES) conditions (the delete-request grammar).
	Where []rows.Condition
	// Contains keeps rows whose raw column contains the substring (nil: no test). An empty
	// substring is refused: it would match every row and prune nothing, most often by mistake.
	Contains *string
	// Token keeps rows whose raw column holds the token as a whole word (nil: no test).
	Token *string
	// Limit is the most rows returned; 0 returns every match.
	Limit int
	// Desc returns the newest rows first.
	Desc bool
	// Columns to return; empty: every column of the table. The timestamp always comes first.
	Columns []string
}

// compiled is a Query bound to a table schema, with its values parsed.
type compiled struct {
	from, to  int64 // [from, to) µs; math.MinInt64/MaxInt64 when open
	where     []rows.Condition
	contains  *string
	token     *string
	limit     int
	desc      bool
	tsColumn  string
	rawColumn string
	output    []string // columns returned, timestamp first
	// tested are the columns the predicate reads (the timestamp first): a row group's rows are
	// selected on them before the other output columns are decoded, and only when some match.
	tested       []string
	decode       []string // every column read: output plus tested
	filter       *rowfilter.Filter
	filterSchema *arrow.Schema // the table's Arrow schema: the filter is checked against it
}

// compile checks q against the table schema and returns it ready to run. Errors name the flag and
// value at fault and what is accepted.
func compile(q Query, sc *iceberg.Schema, tsColumn, rawColumn string) (*compiled, error) {
	c := &compiled{from: minTime, to: maxTime, where: q.Where, contains: q.Contains, token: q.Token,
		limit: q.Limit, desc: q.Desc, tsColumn: tsColumn, rawColumn: rawColumn}
	if q.Limit < 0 {
		return nil, fmt.Errorf("--limit %d: accepted: 0 (every row) or more", q.Limit)
	}
	if err := c.timeRange(q); err != nil {
		return nil, err
	}
	if err := c.rowFilter(q, sc); err != nil {
		return nil, err
	}
	if err := checkText(q, sc, rawColumn); err != nil {
		return nil, err
	}
	if err := c.columns(q, sc); err != nil {
		return nil, err
	}
	return c, nil
}

// timeRange reads --from and --to into c's microsecond bounds.
func (c *compiled) timeRange(q Query) error {
	from, to, err := rows.Filter{From: q.From, To: q.To}.Range()
	if err != nil {
		return err
	}
	if from != nil {
		c.from = *from
	}
	if to != nil {
		c.to = *to
	}
	if from != nil && to != nil && *from >= *to {
		return fmt.Errorf("--from %s is not before --to %s: the range is [from, to)", q.From, q.To)
	}
	return nil
}

// rowFilter checks the --where/--in conditions against sc and builds the row filter of the
// conditions and the time range.
func (c *compiled) rowFilter(q Query, sc *iceberg.Schema) error {
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		return fmt.Errorf("table schema as Arrow: %w", err)
	}
	c.filterSchema = asc
	if err := checkWhere(q.Where, sc, c.tsColumn); err != nil {
		return err
	}
	if c.filter, err = rows.RowFilter([]rows.Filter{{Where: q.Where, From: q.From, To: q.To}}); err != nil {
		return err
	}
	if _, err := merge.CompileFilter(c.filter, asc, c.tsColumn); err != nil {
		return fmt.Errorf("--where: %w", err)
	}
	return nil
}

// checkWhere refuses a condition on a column the table lacks, on the timestamp, on a column
// already tested, or on a type conditions do not accept.
func checkWhere(where []rows.Condition, sc *iceberg.Schema, tsColumn string) error {
	seen := map[string]bool{}
	for _, w := range where {
		f, ok := sc.FindFieldByName(w.Column)
		if !ok || strings.Contains(w.Column, ".") {
			return fmt.Errorf("--where column %q: the table has no such column; columns: %s", w.Column, strings.Join(columnNames(sc), ", "))
		}
		if w.Column == tsColumn {
			return fmt.Errorf("--where column %q: bound the timestamp with --from/--to", w.Column)
		}
		if seen[w.Column] {
			return fmt.Errorf("--where column %q: more than one condition; a row has one value", w.Column)
		}
		seen[w.Column] = true
		switch f.Type.(type) {
		case iceberg.StringType, iceberg.Int32Type, iceberg.Int64Type, iceberg.BooleanType:
		default:
			return fmt.Errorf("--where column %q has type %s: accepted: string, int, long and boolean columns", w.Column, f.Type)
		}
	}
	return nil
}

// checkText checks --contains and --token, and that the raw column they search is a string.
func checkText(q Query, sc *iceberg.Schema, rawColumn string) error {
	if q.Contains != nil && *q.Contains == "" {
		return errors.New("--contains \"\": an empty substring matches every row; give at least one character")
	}
	if q.Token != nil && !index.IsToken(*q.Token) {
		return fmt.Errorf("--token %q: not a single token (letters, digits, _ and non-ASCII characters); use --contains for other text", *q.Token)
	}
	if q.Contains == nil && q.Token == nil {
		return nil
	}
	f, ok := sc.FindFieldByName(rawColumn)
	if !ok {
		return fmt.Errorf("--contains/--token search the %q column, which the table does not have", rawColumn)
	}
	if _, ok := f.Type.(iceberg.StringType); !ok {
		return fmt.Errorf("--contains/--token search the %q column, which has type %s, not string", rawColumn, f.Type)
	}
	return nil
}

// columns sets the columns returned (the timestamp first), the columns the predicate tests, and
// every column read.
func (c *compiled) columns(q Query, sc *iceberg.Schema) error {
	names := columnNames(sc)
	c.output = []string{c.tsColumn}
	if len(q.Columns) == 0 {
		for _, n := range names {
			if n != c.tsColumn {
				c.output = append(c.output, n)
			}
		}
	}
	for _, col := range q.Columns {
		if _, ok := sc.FindFieldByName(col); !ok || strings.Contains(col, ".") {
			return fmt.Errorf("--columns %q: the table has no such column; columns: %s", col, strings.Join(names, ", "))
		}
		if !slices.Contains(c.output, col) {
			c.output = append(c.output, col)
		}
	}
	c.tested = []string{c.tsColumn}
	for _, w := range q.Where {
		c.tested = append(c.tested, w.Column)
	}
	if (q.Contains != nil || q.Token != nil) && !slices.Contains(c.tested, c.rawColumn) {
		c.tested = append(c.tested, c.rawColumn)
	}
	c.decode = slices.Clone(c.output)
	for _, col := range c.tested {
		if !slices.Contains(c.decode, col) {
			c.decode = append(c.decode, col)
		}
	}
	return nil
}

// The open ends of a time range.
const (
	minTime int64 = math.MinInt64
	maxTime int64 = math.MaxInt64
)

func columnNames(sc *iceberg.Schema) []string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name)
	}
	return out
}

// icebergFilter is the query as an Iceberg row filter for scan planning (manifest bounds).
func (c *compiled) icebergFilter(sc *iceberg.Schema) (iceberg.BooleanExpression, error) {
	r := rows.Filter{Where: c.where}
	if c.from != minTime || c.to != maxTime {
		// Expr takes the range as text; the compiled bounds are exact microseconds.
		r.From, r.To = microText(c.from, minTime), microText(c.to, maxTime)
	}
	return r.Expr(sc, c.tsColumn)
}

// microText renders µs as RFC 3339 with six fractional digits ("" for the open end).
func microText(us, open int64) string {
	if us == open {
		return ""
	}
	return rows.FormatMicros(us)
}
