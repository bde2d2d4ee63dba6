package buffer

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
)

// Query is one read of the buffer: GET /v1/buffer/{table}?from=&to=&where=&in=&columns=&after=.
type Query struct {
	// Filter holds the row conditions in the grammar of rows (docs/deletes.md): Where
	// (where=COLUMN=VALUE, in=COLUMN=V1,V2; all must hold) and the timestamp range [From, To).
	Filter rows.Filter
	// Columns projects the answer (in this order); empty: every column.
	Columns []string
	// After are the marks of the snapshot the reader read; nil asks for the rows above the
	// table's current marks (what is not yet committed).
	After Marks
	// Unverified answers without reading the table's marks (for a catalog outage): rows of the
	// live segments above After, with no guarantee against a gap or an overlap with the lake.
	Unverified bool
}

// ParamError is a request the buffer refuses as malformed (HTTP 400); Param names the parameter.
type ParamError struct {
	Param string
	Err   error
}

func (e *ParamError) Error() string { return fmt.Sprintf("parameter %s: %v", e.Param, e.Err) }

var queryParams = []string{"from", "to", "where", "in", "columns", "after", "unverified"}

// ParseQuery reads a request's parameters. Unknown parameters are refused, so a typo is not
// silently a broader query.
func ParseQuery(v url.Values) (Query, error) {
	var q Query
	for k := range v {
		if !contains(queryParams, k) {
			return q, &ParamError{k, fmt.Errorf("unknown parameter; accepted: %s", strings.Join(queryParams, ", "))}
		}
	}
	for _, k := range []string{"from", "to", "after", "unverified"} {
		if len(v[k]) > 1 {
			return q, &ParamError{k, fmt.Errorf("given %d times; give it once", len(v[k]))}
		}
	}
	q.Filter.From, q.Filter.To = v.Get("from"), v.Get("to")
	if _, _, err := q.Filter.Range(); err != nil {
		param := "from"
		if strings.HasPrefix(err.Error(), "--to") {
			param = "to"
		}
		return q, &ParamError{param, err}
	}
	if from, to, _ := q.Filter.Range(); from != nil && to != nil && *from >= *to {
		return q, &ParamError{"to", fmt.Errorf("%s is not after from %s: the range is [from, to)", q.Filter.To, q.Filter.From)}
	}
	for _, w := range v["where"] {
		cs, err := rows.ParseWhere(w)
		if err != nil {
			return q, &ParamError{"where", err}
		}
		q.Filter.Where = append(q.Filter.Where, cs...)
	}
	for _, w := range v["in"] {
		c, err := rows.ParseIn(w)
		if err != nil {
			return q, &ParamError{"in", err}
		}
		q.Filter.Where = append(q.Filter.Where, c)
	}
	for _, cs := range v["columns"] {
		for _, c := range strings.Split(cs, ",") {
			if c = strings.TrimSpace(c); c == "" {
				continue
			}
			if contains(q.Columns, c) {
				return q, &ParamError{"columns", fmt.Errorf("column %q named twice", c)}
			}
			q.Columns = append(q.Columns, c)
		}
	}
	if a, ok := v["after"]; ok {
		m, err := ParseMarks(a[0])
		if err != nil {
			return q, &ParamError{"after", err}
		}
		q.After = m
	}
	if u := v.Get("unverified"); u != "" {
		b, err := lake.ParseBool(u)
		if err != nil {
			return q, &ParamError{"unverified", err}
		}
		q.Unverified = b
	}
	return q, nil
}

// Values is q as request parameters (ParseQuery's inverse).
func (q Query) Values() url.Values {
	v := url.Values{}
	if q.Filter.From != "" {
		v.Set("from", q.Filter.From)
	}
	if q.Filter.To != "" {
		v.Set("to", q.Filter.To)
	}
	for _, c := range q.Filter.Where {
		if len(c.Values) == 1 {
			v.Add("where", c.Column+"="+c.Values[0])
		} else {
			v.Add("in", c.Column+"="+strings.Join(c.Values, ","))
		}
	}
	if len(q.Columns) > 0 {
		v.Set("columns", strings.Join(q.Columns, ","))
	}
	if q.After != nil {
		v.Set("after", q.After.String())
	}
	if q.Unverified {
		v.Set("unverified", "true")
	}
	return v
}

// bind checks q against the answer's schema sc and returns the row filter (nil: every row) and
// the column indices of the projection. Errors are *ParamError.
func (q Query) bind(sc *arrow.Schema) (*merge.Matcher, []int, error) {
	names := func() string {
		var ns []string
		for _, f := range sc.Fields() {
			ns = append(ns, f.Name)
		}
		sort.Strings(ns)
		return strings.Join(ns, ", ")
	}
	var proj []int
	for _, c := range q.Columns {
		idx := sc.FieldIndices(c)
		if len(idx) == 0 {
			return nil, nil, &ParamError{"columns", fmt.Errorf("no column %q; columns: %s", c, names())}
		}
		proj = append(proj, idx[0])
	}
	if len(q.Columns) == 0 {
		for i := range sc.Fields() {
			proj = append(proj, i)
		}
	}
	for _, c := range q.Filter.Where {
		param := "where"
		if len(c.Values) != 1 {
			param = "in"
		}
		idx := sc.FieldIndices(c.Column)
		switch {
		case c.Column == lake.TimestampColumn:
			return nil, nil, &ParamError{param, fmt.Errorf("column %q: bound the timestamp column with from= and to=", c.Column)}
		case len(idx) == 0:
			return nil, nil, &ParamError{param, fmt.Errorf("no column %q; columns: %s", c.Column, names())}
		}
		if err := merge.FilterableType(sc.Field(idx[0]).Type); err != nil {
			return nil, nil, &ParamError{param, fmt.Errorf("column %q: %w", c.Column, err)}
		}
	}
	if len(q.Filter.Where) == 0 && q.Filter.From == "" && q.Filter.To == "" {
		return nil, proj, nil
	}
	f, err := rows.RowFilter([]rows.Filter{q.Filter})
	if err != nil {
		return nil, nil, &ParamError{"from", err}
	}
	m, err := merge.CompileFilter(f, sc, lake.TimestampColumn)
	if err != nil {
		return nil, nil, &ParamError{"where", err}
	}
	return m, proj, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
