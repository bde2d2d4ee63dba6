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
	"github.com/siglake/siglake/sidecar/rows"
)

// RecordOptions say how Record completes what the user gave.
type RecordOptions struct {
	// ToNow sets an empty To to the time of the request (what exists now), after the whole-table
	// check: siglake delete-request without --to and --include-future.
	ToNow bool
	// CancelPeriod is the recorder's SIGLAKE_DELETE_CANCEL_PERIOD: the request stores its creation
	// plus this as execute_at, which every sweep honours whatever its own period.
	CancelPeriod time.Duration
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
			tm, _ := rows.ParseTime("", *p)
			*p = tm.UTC().Format(time.RFC3339Nano)
		}
	}
	r.Version, r.ID, r.State, r.CreatedAt = Version, NewID(now), Pending, now.UTC()
	at := r.CreatedAt.Add(max(o.CancelPeriod, 0))
	r.NotBefore = &at
	// The rule every sweep applies to a stored request (Executable): a to after the creation,
	// with no condition and no from, is refused now rather than reported invalid at every sweep.
	if err := r.unbounded(); err != nil {
		return Request{}, fmt.Errorf("deletion request for table %s: %w", name, err)
	}
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

// cancelStaged, when set (tests), runs between Cancel's read of the request and its commit.
var cancelStaged func()

// Cancel withdraws pending request id of table name (siglake delete-cancel): its state becomes
// cancelled and no sweep executes it. Only a request still waiting is cancelled: until
// CancelMargin before its stored execution time (for a request that stores none, its creation
// plus cancelPeriod, the canceller's SIGLAKE_DELETE_CANCEL_PERIOD). Sweeps never touch a waiting
// request, so the cancel races none. After that a sweep may be executing it: the sweep's commit
// stages the request's progress, and a property-only cancel committed between its read and its
// commit would be overwritten (the catalog applies the staged properties on the newest
// metadata), so the cancel is refused. A request that does not validate is never executed and
// can be cancelled at any time. The commit pins the snapshot it read: a sweep that committed
// first (--skip-cancel-period) makes it retry, read the progress and refuse.
func Cancel(ctx context.Context, l *lake.Lake, name, id string, now time.Time, cancelPeriod time.Duration) (Request, error) {
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
		_, invalid := Executable([]Request{r}, t.Schema(), lake.TimestampColumn)
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
		case len(invalid) == 0 && !now.Before(r.earliestExecution(cancelPeriod).Add(-CancelMargin)):
			return Request{}, fmt.Errorf("deletion request %s of table %s: executing: it may already be deleting rows (sweeps execute it from %s; "+
				"a request can be cancelled until %s before that); siglake delete-sweep --table %s shows its progress",
				id, name, r.earliestExecution(cancelPeriod).UTC().Format(time.RFC3339), CancelMargin, name)
		}
		at := now.UTC()
		r.State, r.CancelledAt = Cancelled, &at
		if r.Version < 2 {
			r.Version = 2 // the cancelled state is version 2: an older reader refuses it rather than run it
		}
		txn := t.NewTransaction()
		if err := txn.AssertRefSnapshotID(table.MainBranch); err != nil {
			return Request{}, err
		}
		if err := Stage(txn, r); err != nil {
			return Request{}, err
		}
		if cancelStaged != nil {
			cancelStaged()
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

// earliestExecution is the earliest time any sweep may execute r: its stored execution time
// (every sweep waits at least until then, a sweeper with a longer period longer), or, for a
// request that stores none, its creation plus the canceller's period.
func (r *Request) earliestExecution(cancelPeriod time.Duration) time.Time {
	if r.NotBefore != nil {
		return *r.NotBefore
	}
	return r.CreatedAt.Add(cancelPeriod)
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

// Expired says whether r is done or cancelled for longer than DoneRetention (a cancelled request
// another tool wrote without cancelled_at counts from its creation).
func (r *Request) Expired(now time.Time) bool {
	switch {
	case r.State == Done && r.DoneAt != nil:
		return now.Sub(*r.DoneAt) > DoneRetention
	case r.State == Cancelled && r.CancelledAt != nil:
		return now.Sub(*r.CancelledAt) > DoneRetention
	case r.State == Cancelled:
		return now.Sub(r.CreatedAt) > DoneRetention
	}
	return false
}
