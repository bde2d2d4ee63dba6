package buffer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
)

// bind checks query q against the answer's schema sc and returns the row filter (nil: every row) and
// the column indices of the projection. Errors are *ParamError.
func bind(q reader.Query, sc *arrow.Schema) (*merge.Matcher, []int, error) {
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
			return nil, nil, &reader.ParamError{Param: "columns", Err: fmt.Errorf("no column %q; columns: %s", c, names())}
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
			return nil, nil, &reader.ParamError{Param: param, Err: fmt.Errorf("column %q: bound the timestamp column with from= and to=", c.Column)}
		case len(idx) == 0:
			return nil, nil, &reader.ParamError{Param: param, Err: fmt.Errorf("no column %q; columns: %s", c.Column, names())}
		}
		if err := rowfilter.CheckType(sc.Field(idx[0]).Type); err != nil {
			return nil, nil, &reader.ParamError{Param: param, Err: fmt.Errorf("column %q: %w", c.Column, err)}
		}
	}
	if len(q.Filter.Where) == 0 && q.Filter.From == "" && q.Filter.To == "" {
		return nil, proj, nil
	}
	f, err := rows.RowFilter([]rows.Filter{q.Filter})
	if err != nil {
		return nil, nil, &reader.ParamError{Param: "from", Err: err}
	}
	m, err := merge.CompileFilter(f, sc, lake.TimestampColumn)
	if err != nil {
		return nil, nil, &reader.ParamError{Param: "where", Err: err}
	}
	return m, proj, nil
}
