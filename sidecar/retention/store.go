package retention

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake"
)

// Set validates p against table name's schema and stores it, replacing the table's policy; a
// policy that does not validate is refused and nothing is written. A zero Policy (no period, no
// rules) removes the table's own policy, so the process default applies.
func Set(ctx context.Context, l *lake.Lake, name string, p Policy) (Policy, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return Policy{}, err
	}
	if err := p.Validate(t.Schema(), lake.TimestampColumn); err != nil {
		return Policy{}, fmt.Errorf("retention policy for %s: %w", name, err)
	}
	p.Version = Version
	v, err := p.Encode()
	if err != nil {
		return Policy{}, err
	}
	clear := p.empty()
	if err := l.SetProperty(ctx, name, Property, v, clear); err != nil {
		return Policy{}, fmt.Errorf("store the retention policy of %s: %w", name, err)
	}
	return p, nil
}

// Update edits table name's policy inside one properties commit (lake.EditValue, shared with
// fold.Update): edit gets the policy stored now (and its decode error) and returns the new one;
// check, when set, vets it against the table's other properties. When another edit commits
// first, the commit conflicts and edit runs again on the policy that edit stored, so neither is
// lost (reading, editing and then Set would overwrite it). It returns the policy replaced and
// the one stored; an error from edit or check writes nothing.
func Update(ctx context.Context, l *lake.Lake, name string, edit func(cur Policy, curErr error) (Policy, error),
	check func(iceberg.Properties, Policy) error) (before, after Policy, err error) {
	return lake.EditValue(ctx, l, name, lake.ValueEdit[Policy]{Codec: PolicyProperty, Edit: edit, Empty: Policy.empty,
		Check: func(sc *iceberg.Schema, props iceberg.Properties, next Policy) error {
			if err := next.Validate(sc, lake.TimestampColumn); err != nil {
				return err
			}
			if check != nil {
				return check(props, next)
			}
			return nil
		}})
}

// empty says p is the zero policy, which removes the table's own (the process default applies).
func (p Policy) empty() bool { return p.Period == "" && len(p.Rules) == 0 }
