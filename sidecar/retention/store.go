package retention

import (
	"context"
	"fmt"

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
