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
	var err error
	for attempt := 0; attempt < lake.ReplaceAttempts; attempt++ {
		t, lerr := l.LoadTable(ctx, name)
		if lerr != nil {
			return Policy{}, lerr
		}
		if err := p.Validate(t.Schema(), lake.TimestampColumn); err != nil {
			return Policy{}, fmt.Errorf("retention policy for %s: %w", name, err)
		}
		txn := t.NewTransaction()
		if p.Period == "" && len(p.Rules) == 0 {
			if _, ok := t.Properties()[Property]; !ok {
				return p, nil
			}
			err = txn.RemoveProperties([]string{Property})
		} else {
			p.Version = Version
			v, eerr := p.Encode()
			if eerr != nil {
				return Policy{}, eerr
			}
			err = txn.SetProperties(iceberg.Properties{Property: v})
		}
		if err != nil {
			return Policy{}, err
		}
		if _, err = txn.Commit(ctx); err == nil {
			return p, nil
		}
		if !lake.IsConflict(err) {
			break
		}
	}
	return Policy{}, fmt.Errorf("store the retention policy of %s: %w", name, err)
}
