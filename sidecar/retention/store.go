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
	clear := p.Period == "" && len(p.Rules) == 0
	if err := l.SetProperty(ctx, name, Property, v, clear); err != nil {
		return Policy{}, fmt.Errorf("store the retention policy of %s: %w", name, err)
	}
	return p, nil
}

// Update edits table name's policy inside one properties commit: edit gets the policy stored now
// (and its decode error) and returns the new one; check, when set, vets it against the table's
// other properties. When another edit commits first, the commit conflicts and edit runs again on
// the policy that edit stored, so neither is lost (reading, editing and then Set would overwrite
// it). It returns the policy replaced and the one stored; an error from edit or check writes
// nothing.
func Update(ctx context.Context, l *lake.Lake, name string, edit func(cur Policy, curErr error) (Policy, error),
	check func(iceberg.Properties, Policy) error) (before, after Policy, err error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return Policy{}, Policy{}, err
	}
	schema := t.Schema()
	var editErr error
	err = l.UpdatePropertiesCAS(ctx, name, func(props iceberg.Properties) (iceberg.Properties, []string) {
		cur, _, curErr := Of(props)
		next, err := edit(cur, curErr)
		if err == nil {
			err = next.Validate(schema, lake.TimestampColumn)
		}
		if err == nil && check != nil {
			err = check(props, next)
		}
		if err != nil {
			editErr = fmt.Errorf("retention policy for %s: %w", name, err)
			return nil, nil
		}
		editErr = nil
		before, after = cur, next
		if next.Period == "" && len(next.Rules) == 0 {
			if _, ok := props[Property]; ok {
				return nil, []string{Property}
			}
			return nil, nil
		}
		next.Version = Version
		v, err := next.Encode()
		if err != nil {
			editErr = err
			return nil, nil
		}
		after = next
		return iceberg.Properties{Property: v}, nil
	})
	if editErr != nil {
		return Policy{}, Policy{}, editErr
	}
	if err != nil {
		return Policy{}, Policy{}, fmt.Errorf("store the retention policy of %s: %w", name, err)
	}
	return before, after, nil
}
