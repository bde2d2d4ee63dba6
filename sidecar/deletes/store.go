package deletes

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// RecordOptions say how Record completes what the user gave.
type RecordOptions struct {
	// ToNow sets an empty To to the time of the request (what exists now), after the whole-table
	// check: siglake delete-request without --to and --include-future.
	ToNow bool
}

// Record is RecordWith without options: r is stored as given.
func Record(ctx context.Context, l *lake.Lake, name string, r Request, now time.Time) (Request, error) {
	return RecordWith(ctx, l, name, r, now, RecordOptions{})
}

// ErrWholeTable refuses a request that bounds no row (Request.WholeTable) without AllRows.
var ErrWholeTable = errors.New("it would delete every row of the table")

// RecordWith validates r against table name's schema, refuses it when it would delete every row
// without AllRows (checked on r as given, before To defaults to now, which would otherwise make
// any request look bounded), and stores it as a new pending request in the table's properties.
// Each request has its own property, and the catalog commit is a compare-and-swap on the table's
// metadata that iceberg-go retries on fresh metadata, so two writers recording at once both keep
// their request. It returns the stored request.
func RecordWith(ctx context.Context, l *lake.Lake, name string, r Request, now time.Time, o RecordOptions) (Request, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return Request{}, err
	}
	if err := r.Validate(t.Schema(), lake.TimestampColumn); err != nil {
		return Request{}, fmt.Errorf("deletion request for table %s: %w", name, err)
	}
	if !r.AllRows {
		sp, err := SpanOf(ctx, t)
		if err != nil {
			return Request{}, err
		}
		whole, err := r.WholeTable(sp, now)
		if err != nil {
			return Request{}, fmt.Errorf("deletion request for table %s: %w", name, err)
		}
		if whole {
			return Request{}, fmt.Errorf("deletion request for table %s: %w (no --where/--in condition, and no --from/--to that leaves "+
				"a row of the table out%s); to delete every row, say so with --all-rows", name, ErrWholeTable, sp.describe())
		}
	}
	if o.ToNow && r.To == "" {
		r.To = now.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
	}
	// Store times in one canonical form (UTC, RFC 3339).
	for _, p := range []*string{&r.From, &r.To} {
		if *p != "" {
			tm, _ := ParseTime("", *p)
			*p = tm.UTC().Format(time.RFC3339Nano)
		}
	}
	r.Version, r.ID, r.State, r.CreatedAt = Version, NewID(now), Pending, now.UTC()
	r.RowsDeleted, r.FilesRewritten, r.DoneAt, r.DoneSnapshotID = 0, 0, nil, 0
	v, err := r.Encode()
	if err != nil {
		return Request{}, err
	}
	var lastErr error
	for attempt := 0; attempt < 10; attempt++ {
		if attempt > 0 {
			// Jitter keeps two recorders from colliding again in lockstep.
			select {
			case <-ctx.Done():
				return Request{}, ctx.Err()
			case <-time.After(time.Duration(attempt)*10*time.Millisecond + time.Duration(mrand.Int64N(int64(20*time.Millisecond)))):
			}
			if t, err = l.LoadTable(ctx, name); err != nil {
				return Request{}, err
			}
		}
		txn := t.NewTransaction()
		if err := txn.SetProperties(iceberg.Properties{Key(r.ID): v}); err != nil {
			return Request{}, fmt.Errorf("stage deletion request %s: %w", r.ID, err)
		}
		if _, lastErr = txn.Commit(ctx); lastErr == nil {
			return r, nil
		}
		if !lake.IsConflict(lastErr) {
			break
		}
	}
	return Request{}, fmt.Errorf("record deletion request %s in table %s: %w", r.ID, name, lastErr)
}

// SpanOf is the time range of t's live rows (the timestamp bounds of its live files).
func SpanOf(ctx context.Context, t *table.Table) (Span, error) {
	files, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return Span{}, err
	}
	if len(files) == 0 {
		return Span{Empty: true}, nil
	}
	sp := Span{Min: files[0].MinTime, Max: files[0].MaxTime}
	for _, f := range files[1:] {
		sp.Min, sp.Max = min(sp.Min, f.MinTime), max(sp.Max, f.MaxTime)
	}
	return sp, nil
}

func (sp Span) describe() string {
	if sp.Empty {
		return "; the table holds no row yet"
	}
	f := func(us int64) string { return time.UnixMicro(us).UTC().Format(time.RFC3339Nano) }
	return fmt.Sprintf("; the table's rows span %s to %s", f(sp.Min), f(sp.Max))
}

// Cancel withdraws pending request id of table name (siglake delete-cancel): its state becomes
// cancelled and no sweep executes it. A request that has deleted rows already is running, and a
// done one is done: both are refused, since the deleted rows cannot come back. A sweep's rewrite
// in flight when the cancel commits does not commit (its staging checks the request is pending).
func Cancel(ctx context.Context, l *lake.Lake, name, id string, now time.Time) (Request, error) {
	for attempt := 0; attempt < 10; attempt++ {
		t, err := l.LoadTable(ctx, name)
		if err != nil {
			return Request{}, err
		}
		v, ok := t.Properties()[Key(id)]
		if !ok {
			return Request{}, fmt.Errorf("table %s has no deletion request %s (siglake delete-sweep --table %s lists them)", name, id, name)
		}
		r, err := Decode(Key(id), v)
		if err != nil {
			return Request{}, err
		}
		switch {
		case r.State == Cancelled:
			at := "" // cancelled_at is optional to readers: another tool may not write it
			if r.CancelledAt != nil {
				at = " at " + r.CancelledAt.Format(time.RFC3339)
			}
			return Request{}, fmt.Errorf("deletion request %s of table %s: already cancelled%s", id, name, at)
		case r.State == Done:
			return Request{}, fmt.Errorf("deletion request %s of table %s: done (%d rows deleted); deleted rows cannot be restored by cancelling", id, name, r.RowsDeleted)
		case r.RowsDeleted > 0 || r.FilesRewritten > 0:
			return Request{}, fmt.Errorf("deletion request %s of table %s: running, %d rows already deleted in %d files; "+
				"deleted rows cannot be restored, and the sweep finishes the request", id, name, r.RowsDeleted, r.FilesRewritten)
		}
		at := now.UTC()
		r.State, r.CancelledAt = Cancelled, &at
		if r.Version < 2 {
			r.Version = 2 // the cancelled state is version 2: an older reader refuses it rather than run it
		}
		txn := t.NewTransaction()
		if err := Stage(txn, r); err != nil {
			return Request{}, err
		}
		if _, err = txn.Commit(ctx); err == nil {
			return r, nil
		}
		if !lake.IsConflict(err) {
			return Request{}, fmt.Errorf("cancel deletion request %s of table %s: %w", id, name, err)
		}
	}
	return Request{}, fmt.Errorf("cancel deletion request %s of table %s: the table kept changing; try again", id, name)
}

// Stage puts rs (already updated) into txn's property changes.
func Stage(txn *table.Transaction, rs ...Request) error {
	props := iceberg.Properties{}
	for _, r := range rs {
		v, err := r.Encode()
		if err != nil {
			return err
		}
		props[Key(r.ID)] = v
	}
	return txn.SetProperties(props)
}
