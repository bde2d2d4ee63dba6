package reader

import (
	"fmt"
	"net/url"
	"strings"

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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
