// Package deletes holds deletion requests ("delete the rows of user X"): their format, how they
// are validated against a table's schema and stored in the table's properties, when they may
// run, and the delete-task sweeper. The rows a request selects are a rows.Filter.
// Format and semantics: docs/deletes.md.
package deletes

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/rows"
)

// Version is the format version of a stored request; readers refuse newer ones. Version 2 added
// all_rows, the cancelled state, execute_at and the cancel period: a siglake that reads only version 1 refuses
// a version-2 request instead of executing it before its cancel period ends.
const Version = 2

// States of a request.
const (
	Pending   = "pending"
	Done      = "done"
	Cancelled = "cancelled" // withdrawn by siglake delete-cancel (version 2)
)

// DefaultCancelPeriod is how long a recorded request waits before any sweep executes it, so a
// mistaken one can be withdrawn (SIGLAKE_DELETE_CANCEL_PERIOD; Loki's delete_request_cancel_period).
const DefaultCancelPeriod = 24 * time.Hour

// Request is one deletion request: rows matching every Where condition and, when set, the time
// range [From, To) on the timestamp column. It is stored as JSON in one table property.
type Request struct {
	Version int    `json:"version"`
	ID      string `json:"id"`
	// Where is a conjunction: each condition holds when the column's value is one of Values.
	Where []rows.Condition `json:"where"`
	// From and To bound the timestamp column, [From, To), in RFC 3339 with microseconds; empty
	// leaves that side open.
	From      string    `json:"from,omitempty"`
	To        string    `json:"to,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	CreatedAt time.Time `json:"created_at"`

	// NotBefore is when sweeps may start executing the request: its creation plus the cancel
	// period of the process that recorded it (version 2; absent in requests recorded before it was
	// added). Stored so the period comes from the request, not from whichever process sweeps: a
	// sweep waits until the later of this and its own creation plus period.
	NotBefore *time.Time `json:"execute_at,omitempty"`

	// AllRows says the user asked, with --all-rows, for every row (up to To): the only way a
	// request without a condition that bounds the rows is recorded.
	AllRows bool `json:"all_rows,omitempty"`

	State string `json:"state"`
	// CancelledAt is when siglake delete-cancel withdrew the request.
	CancelledAt *time.Time `json:"cancelled_at,omitempty"`
	// Progress, updated in the commit that deletes the rows (whose snapshot summary names the
	// request in siglake.delete.requests).
	RowsDeleted    int64 `json:"rows_deleted"`
	FilesRewritten int64 `json:"files_rewritten"`
	// DoneAt and DoneSnapshotID say when a sweep found no live file with matching rows: rows
	// committed after DoneSnapshotID are not deleted.
	DoneAt         *time.Time `json:"done_at,omitempty"`
	DoneSnapshotID int64      `json:"done_snapshot_id,omitempty"`
}

// PropertyPrefix prefixes the table property holding a request: siglake.delete.<id>.
const PropertyPrefix = tableprops.DeletePrefix

// requestProperty reads and writes stored requests: versions 1 and 2 (2 adds execute_at, all_rows
// and the cancelled state), each under its id's key.
var requestProperty = tableprops.Codec[Request]{Name: PropertyPrefix, What: "deletion request",
	Version: func(r *Request) *int { return &r.Version }, MinVersion: 1, MaxVersion: Version,
	KeyOf: func(r Request) string { return Key(r.ID) },
	Check: func(r Request) error {
		if r.State != Pending && r.State != Done && !(r.State == Cancelled && r.Version >= 2) {
			return fmt.Errorf("state %q, accepted: %s, %s, %s (cancelled from version 2)", r.State, Pending, Done, Cancelled)
		}
		return nil
	}}

// Key is the table property of request id.
func Key(id string) string { return PropertyPrefix + id }

// DoneRetention is how long a done request stays in the table properties (for status pages and
// audits) before the commit that completes a later request removes it. The snapshot that did
// the deleting names the request in its summary for as long as snapshots are kept.
const DoneRetention = 30 * 24 * time.Hour

// NewID returns a request id that sorts by creation time: UTC time plus 6 random hex digits.
func NewID(now time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Encode is the stored form of r.
func (r Request) Encode() (string, error) { return requestProperty.Encode(r) }

// Decode parses the stored form of a request; key names the property in errors.
func Decode(key, v string) (Request, error) { return requestProperty.Decode(key, v) }

// Executable returns the requests of rs that validate against the table schema now, and an
// error for each that does not. A stored request is checked again before every sweep: it may
// have been written by another tool, or the schema may have changed since it was recorded, and
// an unchecked one could delete rows nobody asked for (an empty one matches every row).
func Executable(rs []Request, sc *iceberg.Schema, tsColumn string) ([]Request, []error) {
	var ok []Request
	var errs []error
	for _, r := range rs {
		err := r.Validate(sc, tsColumn)
		if err == nil && r.recordedWithoutBound() {
			err = fmt.Errorf("version 1, no condition and only a to within 10 minutes before its creation: what siglake before format 2 recorded for a request " +
				"with no condition at all, which would delete every row; record it again (with --all-rows if every row is meant) " +
				"and remove this one with siglake delete-cancel")
		}
		if err == nil {
			err = r.unbounded()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("table property %s: %w", Key(r.ID), err))
			continue
		}
		ok = append(ok, r)
	}
	return ok, errs
}

// List returns the requests stored in a table's properties, sorted by id, and an error for each
// property under PropertyPrefix that does not decode (those are left alone, never executed).
func List(props iceberg.Properties) ([]Request, []error) {
	entries, errs := requestProperty.List(props)
	var out []Request
	for _, e := range entries {
		out = append(out, e.Value) // by key, which is by id
	}
	return out, errs
}

// recordedWithoutBound recognises a version-1 request recorded by `delete-request --table T` with
// nothing else: the old CLI filled to with the time of the request before its whole-table check.
func (r *Request) recordedWithoutBound() bool {
	if r.Version >= 2 || len(r.Where) > 0 || r.From != "" || r.To == "" {
		return false
	}
	to, err := rows.ParseTime("--to", r.To)
	if err != nil {
		return false
	}
	// The old CLI took to before it opened the lake and created_at after, so to lies before
	// created_at by the time it took to connect (seconds on a slow catalog): 10 minutes covers that
	// with room; 2 s after covers clocks read in the other order.
	d := to.Sub(r.CreatedAt)
	return d >= -10*time.Minute && d <= 2*time.Second
}

// ExecuteAt is when a sweep with cancel period cancelPeriod may start executing r: the later of
// the stored execution time and its creation plus that period, so neither a sweeper with a
// shorter period nor a recorder with one runs a request before the other would.
func (r *Request) ExecuteAt(cancelPeriod time.Duration) time.Time {
	at := r.CreatedAt.Add(cancelPeriod)
	if r.NotBefore != nil && r.NotBefore.After(at) {
		at = *r.NotBefore
	}
	return at
}

// CancelMargin is how long before its execution time a request can no longer be cancelled: the
// clocks of the machine that cancels and of the sweepers may differ, and a cancel must never
// land while a sweep executes the request (a property-only commit cannot be ordered against the
// sweep's: the catalog applies the later one on top of the earlier).
const CancelMargin = time.Minute

// Span is the time range of a table's rows, in microseconds, inclusive: the bounds of its live
// files in the manifests. Empty says the table holds no row.
type Span struct {
	Min, Max int64
	Empty    bool
}

// WholeTable says whether r, as the user gave it (before to defaults to the time of the
// request), bounds no row of a table whose rows span sp at now: no condition, and no time bound
// that leaves a row out. An empty table counts as rows at now, the time the next ones arrive.
// Such a request deletes every row and is recorded only with AllRows.
func (r *Request) WholeTable(sp Span, now time.Time) (bool, error) {
	if len(r.Where) > 0 {
		return false, nil
	}
	from, to, err := r.Filter().Range()
	if err != nil {
		return false, err
	}
	lo, hi := sp.Min, sp.Max
	if sp.Empty {
		lo, hi = now.UnixMicro(), now.UnixMicro()
	}
	if from != nil && *from > lo || to != nil && *to <= hi {
		return false, nil
	}
	return true, nil
}

// unbounded refuses a stored request that would delete every row without saying so: no
// condition and no all_rows, and no bound that leaves rows out (a from, or a to at or before its
// creation, which leaves out every row that came later). delete-request refuses such requests,
// but another tool may write one (only to: 2099-01-01), and the sweep deletes what it is given.
func (r *Request) unbounded() error {
	if len(r.Where) > 0 || r.AllRows || r.From != "" {
		return nil
	}
	if r.To != "" {
		to, err := rows.ParseTime("--to", r.To)
		if err != nil {
			return err
		}
		if !to.After(r.CreatedAt) {
			return nil
		}
	}
	return fmt.Errorf("no condition, no all_rows and no from, and to (%q) is not at or before its creation (%s): "+
		"%w; record it again with a condition, or with --all-rows if every row is meant, and remove this one with siglake delete-cancel",
		r.To, r.CreatedAt.Format(time.RFC3339Nano), ErrWholeTable)
}

// PendingOf returns the pending requests of rs.
func PendingOf(rs []Request) []Request {
	var out []Request
	for _, r := range rs {
		if r.State == Pending {
			out = append(out, r)
		}
	}
	return out
}

// Validate checks r against a table schema (rows.Filter.Check: columns, values, times). A
// request with neither a condition nor a time range is refused: it would delete the whole table.
func (r *Request) Validate(sc *iceberg.Schema, tsColumn string) error {
	if r.AllRows && len(r.Where) > 0 {
		return fmt.Errorf("--all-rows deletes every row: give it without --where/--in, or drop it to delete the matching rows")
	}
	if len(r.Where) == 0 && r.From == "" && r.To == "" && !r.AllRows {
		return fmt.Errorf("a deletion request needs at least one --where/--in condition or a --from/--to range (%w; to delete every row, say so with --all-rows)", ErrWholeTable)
	}
	return r.Filter().Check(sc, tsColumn)
}

// Filter is the rows r selects, named by r's id in errors.
func (r *Request) Filter() rows.Filter {
	return rows.Filter{Name: "request " + r.ID, Where: r.Where, From: r.From, To: r.To}
}

// Describe renders r's predicate for logs and the CLI: service IN (billing) AND timestamp >= ....
func (r *Request) Describe() string {
	d := r.Filter().Describe()
	if !r.AllRows {
		return d
	}
	if d == "" {
		return "ALL ROWS"
	}
	return "ALL ROWS AND " + d
}
