package fold

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/lake"
)

// RecordDelete records a deletion request like deletes.Record, except that on a rollup table
// (one with a fold specification) it tests key columns only: a folded row is many rows' sum, so
// a condition on an aggregated column would delete a different set of events before and after
// a fold.
func RecordDelete(ctx context.Context, l *lake.Lake, name string, r deletes.Request, now time.Time) (deletes.Request, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return deletes.Request{}, err
	}
	if s, ok, _ := Of(t.Properties()); ok {
		for _, c := range r.Where {
			if !s.IsKey(c.Column) {
				return deletes.Request{}, fmt.Errorf("deletion request for table %s: column %q: %s is a rollup table (table property %s): delete requests test its key columns (%s) only",
					name, c.Column, name, Property, strings.Join(s.Keys, ", "))
			}
		}
	}
	return deletes.Record(ctx, l, name, r, now)
}
