package fold

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
)

// A folded row is many rows' sum, so a condition on an aggregated column of a rollup table would
// match a different set of events before and after a fold: deletion requests and retention rules
// on a rollup test its key columns only. The rule is checked where each is recorded or set, where
// a sweep runs a request (another tool may have stored it), and when a specification is set over
// existing requests and rules.

// CheckDelete says whether deletion request r may run on a table with properties props: any
// request on a table without a fold specification, one testing key columns only on a rollup. The
// delete sweeper (sweep.Sweeper) vets each request with it before it runs.
func CheckDelete(props iceberg.Properties, r deletes.Request) error {
	s, ok, err := SpecProperty.Read(props)
	if !ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deletion request %s: the table's fold specification does not read, so its key columns are unknown and no request runs until it is set again: %w", r.ID, err)
	}
	return s.keysOnly(fmt.Sprintf("deletion request %s", r.ID), "delete requests", r.Where)
}

// keysOnly refuses the first condition of where on a column that is not a key of s.
func (s Spec) keysOnly(what, kind string, where []rows.Condition) error {
	for _, c := range where {
		if !s.IsKey(c.Column) {
			return fmt.Errorf("%s: column %q: a rollup table (table property %s): %s test its key columns (%s) only",
				what, c.Column, Property, kind, strings.Join(s.Keys, ", "))
		}
	}
	return nil
}

// RecordDelete records a deletion request like deletes.Record, except that on a rollup table it
// tests key columns only (CheckDelete).
func RecordDelete(ctx context.Context, l *lake.Lake, name string, r deletes.Request, now time.Time, o deletes.RecordOptions) (deletes.Request, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return deletes.Request{}, err
	}
	if err := CheckDelete(t.Properties(), r); err != nil {
		return deletes.Request{}, fmt.Errorf("deletion request for table %s: %w", name, err)
	}
	return deletes.RecordWith(ctx, l, name, r, now, o)
}

// CheckRetention says whether retention policy p may be set on a table with properties props:
// on a rollup, its rules test key columns only.
func CheckRetention(props iceberg.Properties, p retention.Policy) error {
	s, ok, err := SpecProperty.Read(props)
	if !ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("the table's fold specification does not read, so its key columns are unknown: %w", err)
	}
	for i, r := range p.Rules {
		if err := s.keysOnly(fmt.Sprintf("rule %d", i+1), "retention rules", r.Where); err != nil {
			return err
		}
	}
	return nil
}

// SetRetention is retention.Set for every table, refusing on a rollup a rule on a column that is
// not a key (CheckRetention).
func SetRetention(ctx context.Context, l *lake.Lake, name string, p retention.Policy) (retention.Policy, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return retention.Policy{}, err
	}
	if err := CheckRetention(t.Properties(), p); err != nil {
		return retention.Policy{}, fmt.Errorf("retention policy for %s: %w", name, err)
	}
	return retention.Set(ctx, l, name, p)
}

// checkExisting refuses s over the table's pending deletion requests and retention rules that
// test a column not among its keys: setting it would make them change meaning with every fold.
func (s Spec) checkExisting(props iceberg.Properties) error {
	all, _ := deletes.List(props)
	for _, r := range deletes.PendingOf(all) {
		if err := s.keysOnly(fmt.Sprintf("pending deletion request %s", r.ID), "delete requests", r.Where); err != nil {
			return fmt.Errorf("%w; wait until it is done or cancel it, or make the column a key", err)
		}
	}
	p, ok, err := retention.PolicyProperty.Read(props)
	if !ok || err != nil {
		return nil // no rules to keep consistent, or retention reports its own bad policy
	}
	for i, r := range p.Rules {
		if err := s.keysOnly(fmt.Sprintf("retention rule %d", i+1), "retention rules", r.Where); err != nil {
			return fmt.Errorf("%w; change the retention policy first, or make the column a key", err)
		}
	}
	return nil
}
