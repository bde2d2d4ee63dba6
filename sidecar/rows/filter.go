package rows

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
)

// Filter selects rows: every Where condition holds and, when set, the timestamp column lies in
// [From, To). A deletion request, a retention class and a search or buffer query each hold one.
type Filter struct {
	// Name says whose filter it is in errors ("request 20261203T..."); empty names none.
	Name string
	// Where is a conjunction: each condition holds when the column's value is one of Values.
	Where []Condition
	// From and To bound the timestamp column, [From, To), in the ParseTime syntax; empty leaves
	// that side open.
	From, To string
}

// Range returns From and To in microseconds (nil when open).
func (f Filter) Range() (from, to *int64, err error) {
	if f.From != "" {
		us, err := ParseMicros("--from", f.From)
		if err != nil {
			return nil, nil, err
		}
		from = &us
	}
	if f.To != "" {
		us, err := ParseMicros("--to", f.To)
		if err != nil {
			return nil, nil, err
		}
		to = &us
	}
	return from, to, nil
}

// Check checks f against a table schema: every column exists, is a top-level scalar the filter
// accepts (string, int, long, boolean; not the timestamp column, which From/To bound), appears
// once, and every value parses; the times parse and From < To.
func (f Filter) Check(sc *iceberg.Schema, tsColumn string) error {
	seen := map[string]bool{}
	for _, c := range f.Where {
		if seen[c.Column] {
			return fmt.Errorf("column %q: more than one condition; list the values of one column in one --in", c.Column)
		}
		seen[c.Column] = true
		if err := checkCondition(sc, tsColumn, c); err != nil {
			return err
		}
	}
	from, to, err := f.Range()
	if err != nil {
		return err
	}
	if from != nil && to != nil && *from >= *to {
		return fmt.Errorf("--from %s is not before --to %s: the range is [from, to)", f.From, f.To)
	}
	return nil
}

// checkColumn refuses a column a condition cannot test.
func checkColumn(sc *iceberg.Schema, tsColumn, col string) error {
	if col == tsColumn {
		return fmt.Errorf("column %q: bound the timestamp column with --from/--to, not a condition", col)
	}
	if _, ok := sc.FindFieldByName(col); !ok || strings.Contains(col, ".") {
		return fmt.Errorf("column %q: the table has no such top-level column; columns: %s", col, columnNames(sc))
	}
	return nil
}

// checkCondition checks one condition's column, type and values.
func checkCondition(sc *iceberg.Schema, tsColumn string, c Condition) error {
	if err := checkColumn(sc, tsColumn, c.Column); err != nil {
		return err
	}
	f, _ := sc.FindFieldByName(c.Column)
	switch f.Type.(type) {
	case iceberg.StringType, iceberg.Int32Type, iceberg.Int64Type, iceberg.BooleanType:
	default:
		return fmt.Errorf("column %q has type %s: conditions accept string, int, long and boolean columns", c.Column, f.Type)
	}
	if len(c.Values) == 0 {
		return fmt.Errorf("column %q: a condition needs at least one value", c.Column)
	}
	for _, v := range c.Values {
		if v == "" {
			// Most often an unset shell variable (--where user_id=$USER_ID), which would
			// delete every row whose column is empty.
			return fmt.Errorf("column %q: an empty value; give the value to delete", c.Column)
		}
		if err := parseValue(f.Type, v); err != nil {
			return fmt.Errorf("column %q value %q: %w", c.Column, v, err)
		}
	}
	return nil
}

func parseValue(t iceberg.Type, v string) error {
	switch t.(type) {
	case iceberg.Int32Type:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return fmt.Errorf("accepted: a decimal 32-bit integer")
		}
	case iceberg.Int64Type:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("accepted: a decimal integer")
		}
	case iceberg.BooleanType:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("accepted: true, false")
		}
	}
	return nil
}

func columnNames(sc *iceberg.Schema) string {
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// Describe renders f for logs and the CLI: service IN (billing) AND timestamp >= ....
func (f Filter) Describe() string {
	var parts []string
	for _, c := range f.Where {
		if len(c.Values) == 1 {
			parts = append(parts, fmt.Sprintf("%s = %q", c.Column, c.Values[0]))
		} else {
			q := make([]string, len(c.Values))
			for i, v := range c.Values {
				q[i] = strconv.Quote(v)
			}
			parts = append(parts, fmt.Sprintf("%s IN (%s)", c.Column, strings.Join(q, ", ")))
		}
	}
	if f.From != "" {
		parts = append(parts, "timestamp >= "+f.From)
	}
	if f.To != "" {
		parts = append(parts, "timestamp < "+f.To)
	}
	return strings.Join(parts, " AND ")
}
