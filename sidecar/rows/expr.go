package rows

import (
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/merge/rowfilter"
)

// Expr is f as an Iceberg row filter, for scan planning (partition and column-metrics pruning).
// f must have passed Check against sc.
func (f Filter) Expr(sc *iceberg.Schema, tsColumn string) (iceberg.BooleanExpression, error) {
	var parts []iceberg.BooleanExpression
	for _, c := range f.Where {
		e, err := conditionExpr(sc, c)
		if err != nil {
			return nil, err
		}
		parts = append(parts, e)
	}
	from, to, err := f.Range()
	if err != nil {
		return nil, err
	}
	if from != nil {
		parts = append(parts, iceberg.GreaterThanEqual(iceberg.Reference(tsColumn), iceberg.Timestamp(*from)))
	}
	if to != nil {
		parts = append(parts, iceberg.LessThan(iceberg.Reference(tsColumn), iceberg.Timestamp(*to)))
	}
	switch len(parts) {
	case 0:
		return iceberg.AlwaysTrue{}, nil
	case 1:
		return parts[0], nil
	}
	return iceberg.NewAnd(parts[0], parts[1], parts[2:]...), nil
}

// conditionExpr is c as an Iceberg IN over its column's type.
func conditionExpr(sc *iceberg.Schema, c Condition) (iceberg.BooleanExpression, error) {
	f, _ := sc.FindFieldByName(c.Column)
	ref := iceberg.Reference(c.Column)
	switch f.Type.(type) {
	case iceberg.StringType:
		return iceberg.IsIn(ref, c.Values...), nil
	case iceberg.Int32Type:
		vs := make([]int32, len(c.Values))
		for i, v := range c.Values {
			n, _ := strconv.ParseInt(v, 10, 32)
			vs[i] = int32(n)
		}
		return iceberg.IsIn(ref, vs...), nil
	case iceberg.Int64Type:
		vs := make([]int64, len(c.Values))
		for i, v := range c.Values {
			vs[i], _ = strconv.ParseInt(v, 10, 64)
		}
		return iceberg.IsIn(ref, vs...), nil
	case iceberg.BooleanType:
		vs := make([]bool, len(c.Values))
		for i, v := range c.Values {
			vs[i], _ = strconv.ParseBool(v)
		}
		return iceberg.IsIn(ref, vs...), nil
	}
	return nil, fmt.Errorf("column %q has type %s: conditions accept string, int, long and boolean columns", c.Column, f.Type)
}

// named prefixes err with f's name, when it has one.
func (f Filter) named(err error) error {
	if f.Name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", f.Name, err)
}

// AnyExpr is the Iceberg filter of rows any of fs matches.
func AnyExpr(fs []Filter, sc *iceberg.Schema, tsColumn string) (iceberg.BooleanExpression, error) {
	var parts []iceberg.BooleanExpression
	for _, f := range fs {
		e, err := f.Expr(sc, tsColumn)
		if err != nil {
			return nil, f.named(err)
		}
		parts = append(parts, e)
	}
	switch len(parts) {
	case 0:
		return iceberg.AlwaysFalse{}, nil
	case 1:
		return parts[0], nil
	}
	return iceberg.NewOr(parts[0], parts[1], parts[2:]...), nil
}

// RowFilter is the merge filter of rows any of fs matches; predicate i is fs[i].
func RowFilter(fs []Filter) (*rowfilter.Filter, error) {
	out := &rowfilter.Filter{}
	for _, f := range fs {
		from, to, err := f.Range()
		if err != nil {
			return nil, f.named(err)
		}
		p := rowfilter.Predicate{From: from, To: to}
		for _, c := range f.Where {
			p.Columns = append(p.Columns, rowfilter.ColumnIn{Column: c.Column, Values: c.Values})
		}
		out.Predicates = append(out.Predicates, p)
	}
	return out, nil
}
