package deletes

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
)

// Record validates r against table name's schema and stores it as a new pending request in the
// table's properties. Each request has its own property, and the catalog commit is a
// compare-and-swap on the table's metadata that iceberg-go retries on fresh metadata, so two
// writers recording at once both keep their request. It returns the stored request.
func Record(ctx context.Context, l *lake.Lake, name string, r Request, now time.Time) (Request, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return Request{}, err
	}
	if err := r.Validate(t.Schema(), lake.TimestampColumn); err != nil {
		return Request{}, fmt.Errorf("deletion request for table %s: %w", name, err)
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
