package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
)

// UpdateProperties commits the properties f sets and removes on the newest metadata, retried on a
// concurrent commit; nothing to change commits nothing.
func (l *Lake) UpdateProperties(ctx context.Context, name string, f func(iceberg.Properties) (iceberg.Properties, []string)) error {
	var err error
	for attempt := 0; attempt < ReplaceAttempts; attempt++ {
		t, lerr := l.LoadTable(ctx, name)
		if lerr != nil {
			return lerr
		}
		set, remove := f(t.Properties())
		if len(set) == 0 && len(remove) == 0 {
			return nil
		}
		txn := t.NewTransaction()
		if len(set) > 0 {
			if err = txn.SetProperties(set); err != nil {
				return err
			}
		}
		if len(remove) > 0 {
			if err = txn.RemoveProperties(remove); err != nil {
				return err
			}
		}
		if _, err = txn.Commit(ctx); err == nil || !IsConflict(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update the properties of %s: %w", name, err)
	}
	return nil
}

// SetProperty commits table property key = value on the newest metadata (UpdateProperties);
// remove removes it instead (nothing to commit when it is absent).
func (l *Lake) SetProperty(ctx context.Context, name, key, value string, remove bool) error {
	return l.UpdateProperties(ctx, name, func(cur iceberg.Properties) (iceberg.Properties, []string) {
		if !remove {
			return iceberg.Properties{key: value}, nil
		}
		if _, ok := cur[key]; ok {
			return nil, []string{key}
		}
		return nil, nil
	})
}

// UpdatePropertiesCAS is UpdateProperties for edits of a value read from the properties (a
// policy, a specification): each commit also appends an empty snapshot and requires main to be
// where f read it (CommitPropertiesCAS), so an edit that another commits first makes this commit
// conflict and f runs again on the newer properties, instead of overwriting that edit.
func (l *Lake) UpdatePropertiesCAS(ctx context.Context, name string, f func(iceberg.Properties) (iceberg.Properties, []string)) error {
	var err error
	for attempt := 0; attempt < ReplaceAttempts; attempt++ {
		t, lerr := l.LoadTable(ctx, name)
		if lerr != nil {
			return lerr
		}
		set, remove := f(t.Properties())
		if len(set) == 0 && len(remove) == 0 {
			return nil
		}
		keys := slices.Concat(slices.Collect(maps.Keys(set)), remove)
		slices.Sort(keys)
		if _, err = CommitPropertiesCAS(ctx, t, set, remove, iceberg.Properties{"siglake.properties-edit": strings.Join(keys, ",")}); err == nil || !errors.Is(err, ErrCASConflict) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update the properties of %s: %w", name, err)
	}
	return nil
}
