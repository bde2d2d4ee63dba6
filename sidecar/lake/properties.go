package lake

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
)

// UpdateProperties commits the properties f sets and removes on the newest metadata, retried on a
// concurrent commit; nothing to change commits nothing.
func (l *Lake) UpdateProperties(ctx context.Context, name string, f func(iceberg.Properties) (iceberg.Properties, []string)) error {
	return l.updateProperties(ctx, name, f, commitProperties)
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
	return l.updateProperties(ctx, name, f, commitPropertiesCAS)
}

// updateProperties is the one retry loop of both: load the newest metadata, let f decide what to
// change, commit it, and again after a conflict.
func (l *Lake) updateProperties(ctx context.Context, name string, f func(iceberg.Properties) (iceberg.Properties, []string),
	commit func(ctx context.Context, t *table.Table, set iceberg.Properties, remove []string) error) error {
	var err error
	for attempt := 0; attempt < ReplaceAttempts; attempt++ {
		var done bool
		if done, err = l.propertiesAttempt(ctx, name, f, commit); done {
			return err // nothing to change, or the table did not load
		}
		// A lost compare-and-swap (ErrCASConflict) wraps the conflict, so IsConflict holds for it too.
		if err == nil || !IsConflict(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("update the properties of %s: %w", name, err)
	}
	return nil
}

// propertiesAttempt is one load, f and commit of updateProperties under the table's lock; done:
// f had nothing to change (or the load failed: err).
func (l *Lake) propertiesAttempt(ctx context.Context, name string, f func(iceberg.Properties) (iceberg.Properties, []string),
	commit func(ctx context.Context, t *table.Table, set iceberg.Properties, remove []string) error) (done bool, err error) {
	defer l.lockTable(name)()
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return true, err
	}
	set, remove := f(t.Properties())
	if len(set) == 0 && len(remove) == 0 {
		return true, nil
	}
	return false, commit(ctx, t, set, remove)
}

// commitProperties sets and removes properties of t in one commit, applied by the catalog to the
// metadata it holds at commit time.
func commitProperties(ctx context.Context, t *table.Table, set iceberg.Properties, remove []string) error {
	txn := t.NewTransaction()
	if err := txn.SetProperties(set); err != nil {
		return err
	}
	if err := txn.RemoveProperties(remove); err != nil {
		return err
	}
	_, err := txn.Commit(ctx)
	return err
}

// commitPropertiesCAS is CommitPropertiesCAS with the keys it edits in the snapshot summary.
func commitPropertiesCAS(ctx context.Context, t *table.Table, set iceberg.Properties, remove []string) error {
	keys := slices.Concat(slices.Collect(maps.Keys(set)), remove)
	slices.Sort(keys)
	_, err := CommitPropertiesCAS(ctx, t, set, remove, iceberg.Properties{tableprops.SumPropertiesEdit: strings.Join(keys, ",")})
	return err
}

// ValueEdit is one compare-and-swap edit of a table's single-key JSON value (a policy, a
// specification): EditValue runs it.
type ValueEdit[T any] struct {
	Codec tableprops.Codec[T]
	// Edit gets the value stored now (and its decode error) and returns the new one.
	Edit func(cur T, curErr error) (T, error)
	// Check, when set, vets the new value against the table's schema and its other properties.
	Check func(sc *iceberg.Schema, props iceberg.Properties, next T) error
	// Empty says the new value removes the property instead.
	Empty func(T) bool
}

// EditValue edits table name's value of e.Codec inside one properties commit (UpdatePropertiesCAS):
// when another edit commits first, the commit conflicts and e.Edit runs again on the value that
// edit stored, so neither is lost (reading, editing and then setting would overwrite it). It
// returns the value replaced and the one stored (at the current format version); an error from
// Edit or Check writes nothing.
func EditValue[T any](ctx context.Context, l *Lake, name string, e ValueEdit[T]) (before, after T, err error) {
	var zero T
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return zero, zero, err
	}
	schema := t.Schema()
	var editErr error
	err = l.UpdatePropertiesCAS(ctx, name, func(props iceberg.Properties) (iceberg.Properties, []string) {
		cur, _, curErr := e.Codec.Read(props)
		next, err := e.Edit(cur, curErr)
		if err == nil && e.Check != nil {
			err = e.Check(schema, props, next)
		}
		if err != nil {
			editErr = fmt.Errorf("%s for %s: %w", e.Codec.What, name, err)
			return nil, nil
		}
		editErr = nil
		before, after = cur, next
		if e.Empty(next) {
			if _, ok := props[e.Codec.Name]; ok {
				return nil, []string{e.Codec.Name}
			}
			return nil, nil
		}
		next = e.Codec.Current(next)
		v, err := e.Codec.Encode(next)
		if err != nil {
			editErr = err
			return nil, nil
		}
		after = next
		return iceberg.Properties{e.Codec.Name: v}, nil
	})
	if editErr != nil {
		return zero, zero, editErr
	}
	if err != nil {
		return zero, zero, fmt.Errorf("store the %s of %s: %w", e.Codec.What, name, err)
	}
	return before, after, nil
}
