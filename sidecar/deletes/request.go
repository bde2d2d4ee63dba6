// Package deletes holds deletion requests ("delete the rows of user X"): their format, how they
// are validated against a table's schema, stored in the table's properties, and turned into an
// Iceberg row filter (for scan planning) and a merge.RowFilter (for the rewrite).
// Format and semantics: docs/deletes.md.
package deletes

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/duration"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
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
	Where []Condition `json:"where"`
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

// Condition is COLUMN IN (VALUES...); one value is an equality. Values are text in the column's
// type: strings as is, integers in decimal, booleans true/false.
type Condition struct {
	Column string   `json:"column"`
	Values []string `json:"values"`
}

// whereAccepted is the --where grammar, for errors.
const whereAccepted = `accepted: COLUMN=VALUE, several joined by AND (service=billing AND severity=debug); ` +
	`quote a value holding spaces or the word AND: COLUMN="a b"`

// ParseWhere parses one --where (the CLI, the WAL buffer's where=): COLUMN=VALUE conditions joined
// by AND (any case), each an equality; a value holding blanks is quoted ("a b" or 'a b'). What it
// cannot read (OR, !=, <, a dangling AND) is refused with the token: read as a value, it would make
// a deletion match nothing, or something else than asked. The value may be empty here; Validate
// refuses an empty value for a deletion.
func ParseWhere(s string) ([]Condition, error) {
	var out []Condition
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	for {
		i := strings.IndexFunc(rest, func(c rune) bool { return c == '=' || unicode.IsSpace(c) })
		if i <= 0 || rest[i] != '=' {
			return nil, fmt.Errorf("%q: token %q is not COLUMN=VALUE; %s", s, firstToken(rest), whereAccepted)
		}
		col := rest[:i]
		if j := strings.IndexAny(col, "!<>()\"'"); j >= 0 {
			return nil, fmt.Errorf("%q: token %q: the only comparison is = (equality); %s", s, col[j:]+"=", whereAccepted)
		}
		rest = rest[i+1:]
		var val string
		if rest != "" && (rest[0] == '"' || rest[0] == '\'') {
			end := strings.IndexByte(rest[1:], rest[0])
			if end < 0 {
				return nil, fmt.Errorf("%q: the quote of %s's value is not closed; %s", s, col, whereAccepted)
			}
			val, rest = rest[1:1+end], rest[2+end:]
			if c, _ := utf8.DecodeRuneInString(rest); rest != "" && !unicode.IsSpace(c) {
				return nil, fmt.Errorf("%q: token %q right after the quoted value of %s; %s", s, firstToken(rest), col, whereAccepted)
			}
		} else {
			end := strings.IndexFunc(rest, unicode.IsSpace)
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
			if strings.HasPrefix(val, "=") {
				return nil, fmt.Errorf("%q: token %q: the only comparison is = (equality); %s", s, col+"="+val[:1], whereAccepted)
			}
			if err := plainValue(val); err != nil {
				return nil, fmt.Errorf("%q: token %q: %w; %s", s, col+"="+val, err, whereAccepted)
			}
		}
		out = append(out, Condition{Column: col, Values: []string{val}})
		rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
		if rest == "" {
			return out, nil
		}
		tok := firstToken(rest)
		if !strings.EqualFold(tok, "AND") {
			return nil, fmt.Errorf("%q: token %q after %s's value: conditions are joined by AND only (for one of several values use --in COLUMN=V1,V2); %s",
				s, tok, col, whereAccepted)
		}
		rest = strings.TrimLeftFunc(rest[len(tok):], unicode.IsSpace)
		if rest == "" {
			return nil, fmt.Errorf("%q: AND at the end: a condition must follow; %s", s, whereAccepted)
		}
	}
}

// plainValue refuses an unquoted value that holds an invisible separator (a zero-width space or
// another format character, which unicode.IsSpace does not count as a blank) or the word AND:
// text copied from a page can join two conditions with such characters, and read as one value
// the deletion would match nothing. A quoted value may hold anything.
func plainValue(v string) error {
	for _, c := range v {
		if unicode.IsSpace(c) || unicode.Is(unicode.Cf, c) {
			return fmt.Errorf("an unquoted value holds the invisible character %U (copied text?)", c)
		}
	}
	for _, w := range strings.FieldsFunc(v, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsDigit(c) }) {
		if strings.EqualFold(w, "AND") {
			return fmt.Errorf("an unquoted value holds the word AND: join conditions with blanks around AND, or quote the value")
		}
	}
	return nil
}

// firstToken is s up to its first blank (any Unicode space: a copied non-breaking space is one).
func firstToken(s string) string {
	if i := strings.IndexFunc(s, unicode.IsSpace); i >= 0 {
		return s[:i]
	}
	return s
}

// ParseIn parses COLUMN=V1,V2,..., the column is one of the values (`--in`, the buffer's in=);
// values cannot contain commas.
func ParseIn(s string) (Condition, error) {
	col, vals, ok := strings.Cut(s, "=")
	if !ok || col == "" || vals == "" {
		return Condition{}, fmt.Errorf("%q: accepted: COLUMN=V1,V2,...", s)
	}
	return Condition{Column: col, Values: strings.Split(vals, ",")}, nil
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
	to, err := ParseTime("--to", r.To)
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
	from, to, err := r.Range()
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
		to, err := ParseTime("--to", r.To)
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

// ParseDuration reads a duration in the one syntax of siglake's options (package duration): a
// number with s, m, h, d (24h) or w (7d), or several Go units (1h30m); 0 is none. NaN, infinities,
// negatives and values past time.Duration's range are refused: they used to wrap to a negative
// period, which meant none.
func ParseDuration(v string) (time.Duration, error) {
	d, err := duration.Parse(v)
	if err != nil {
		return 0, fmt.Errorf("%q: %w", v, err)
	}
	return d, nil
}

// ParseTime accepts RFC 3339 (2026-11-29T10:00:00Z, fractions allowed) or a UTC day (2026-11-29).
func ParseTime(flag, v string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("%s %q: accepted: RFC 3339 (2026-11-29T10:00:00Z) or a UTC day (2026-11-29)", flag, v)
}

// Validate checks r against a table schema: every column exists, is a top-level scalar the
// filter accepts (string, int, long, boolean; not the timestamp column, which --from/--to bound),
// appears once, and every value parses; the times parse and From < To. A request with neither
// a condition nor a time range is refused: it would delete the whole table.
func (r *Request) Validate(sc *iceberg.Schema, tsColumn string) error {
	if r.AllRows && len(r.Where) > 0 {
		return fmt.Errorf("--all-rows deletes every row: give it without --where/--in, or drop it to delete the matching rows")
	}
	if len(r.Where) == 0 && r.From == "" && r.To == "" && !r.AllRows {
		return fmt.Errorf("a deletion request needs at least one --where/--in condition or a --from/--to range (%w; to delete every row, say so with --all-rows)", ErrWholeTable)
	}
	seen := map[string]bool{}
	for _, c := range r.Where {
		if c.Column == tsColumn {
			return fmt.Errorf("column %q: bound the timestamp column with --from/--to, not a condition", c.Column)
		}
		f, ok := sc.FindFieldByName(c.Column)
		if !ok || strings.Contains(c.Column, ".") {
			return fmt.Errorf("column %q: the table has no such top-level column; columns: %s", c.Column, columnNames(sc))
		}
		if seen[c.Column] {
			return fmt.Errorf("column %q: more than one condition; list the values of one column in one --in", c.Column)
		}
		seen[c.Column] = true
		switch f.Type.(type) {
		case iceberg.StringType, iceberg.Int32Type, iceberg.Int64Type, iceberg.BooleanType:
		default:
			return fmt.Errorf("column %q has type %s: conditions accept string, int, long and boolean columns", c.Column, f.Type)
		}
		if len(c.Values) == 0 {
			return fmt.Errorf("column %q: a condition needs at least one value", c.Column)
		}
		for _, v := range c.Values {
			if v == "" {
				// Most often an unset shell variable (--where user_id=$USER_ID), which would
				// delete every row whose column is empty.
				return fmt.Errorf("column %q: an empty value; give the value to delete", c.Column)
			}
			if err := parseValue(f.Type, v); err != nil {
				return fmt.Errorf("column %q value %q: %w", c.Column, v, err)
			}
		}
	}
	from, to, err := r.Range()
	if err != nil {
		return err
	}
	if from != nil && to != nil && *from >= *to {
		return fmt.Errorf("--from %s is not before --to %s: the range is [from, to)", r.From, r.To)
	}
	return nil
}

func parseValue(t iceberg.Type, v string) error {
	switch t.(type) {
	case iceberg.Int32Type:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return fmt.Errorf("accepted: a decimal 32-bit integer")
		}
	case iceberg.Int64Type:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("accepted: a decimal integer")
		}
	case iceberg.BooleanType:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("accepted: true, false")
		}
	}
	return nil
}

func columnNames(sc *iceberg.Schema) string {
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// Range returns From and To in microseconds (nil when open).
func (r *Request) Range() (from, to *int64, err error) {
	if r.From != "" {
		t, err := ParseTime("--from", r.From)
		if err != nil {
			return nil, nil, err
		}
		if err := microseconds("--from", r.From, t); err != nil {
			return nil, nil, err
		}
		us := t.UnixMicro()
		from = &us
	}
	if r.To != "" {
		t, err := ParseTime("--to", r.To)
		if err != nil {
			return nil, nil, err
		}
		if err := microseconds("--to", r.To, t); err != nil {
			return nil, nil, err
		}
		us := t.UnixMicro()
		to = &us
	}
	return from, to, nil
}

// microseconds refuses a time finer than the table's timestamps: flooring it would move a bound
// past rows the user meant to keep or to delete.
func microseconds(flag, v string, t time.Time) error {
	if t.Nanosecond()%1000 != 0 {
		return fmt.Errorf("%s %q: timestamps are stored to the microsecond; give at most 6 fractional digits", flag, v)
	}
	return nil
}

// Expr is r as an Iceberg row filter, for scan planning (partition and column-metrics pruning).
// r must have been validated against sc.
func (r *Request) Expr(sc *iceberg.Schema, tsColumn string) (iceberg.BooleanExpression, error) {
	var parts []iceberg.BooleanExpression
	for _, c := range r.Where {
		f, _ := sc.FindFieldByName(c.Column)
		ref := iceberg.Reference(c.Column)
		switch f.Type.(type) {
		case iceberg.StringType:
			parts = append(parts, iceberg.IsIn(ref, c.Values...))
		case iceberg.Int32Type:
			vs := make([]int32, len(c.Values))
			for i, v := range c.Values {
				n, _ := strconv.ParseInt(v, 10, 32)
				vs[i] = int32(n)
			}
			parts = append(parts, iceberg.IsIn(ref, vs...))
		case iceberg.Int64Type:
			vs := make([]int64, len(c.Values))
			for i, v := range c.Values {
				vs[i], _ = strconv.ParseInt(v, 10, 64)
			}
			parts = append(parts, iceberg.IsIn(ref, vs...))
		case iceberg.BooleanType:
			vs := make([]bool, len(c.Values))
			for i, v := range c.Values {
				vs[i], _ = strconv.ParseBool(v)
			}
			parts = append(parts, iceberg.IsIn(ref, vs...))
		default:
			return nil, fmt.Errorf("column %q has type %s: conditions accept string, int, long and boolean columns", c.Column, f.Type)
		}
	}
	from, to, err := r.Range()
	if err != nil {
		return nil, err
	}
	if from != nil {
		parts = append(parts, iceberg.GreaterThanEqual(iceberg.Reference(tsColumn), iceberg.Timestamp(*from)))
	}
	if to != nil {
		parts = append(parts, iceberg.LessThan(iceberg.Reference(tsColumn), iceberg.Timestamp(*to)))
	}
	switch len(parts) {
	case 0:
		return iceberg.AlwaysTrue{}, nil
	case 1:
		return parts[0], nil
	}
	return iceberg.NewAnd(parts[0], parts[1], parts[2:]...), nil
}

// AnyExpr is the Iceberg filter of rows any of rs matches.
func AnyExpr(rs []Request, sc *iceberg.Schema, tsColumn string) (iceberg.BooleanExpression, error) {
	var parts []iceberg.BooleanExpression
	for i := range rs {
		e, err := rs[i].Expr(sc, tsColumn)
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", rs[i].ID, err)
		}
		parts = append(parts, e)
	}
	switch len(parts) {
	case 0:
		return iceberg.AlwaysFalse{}, nil
	case 1:
		return parts[0], nil
	}
	return iceberg.NewOr(parts[0], parts[1], parts[2:]...), nil
}

// RowFilter is the merge filter of rows any of rs matches; predicate i is rs[i].
func RowFilter(rs []Request) (*merge.RowFilter, error) {
	f := &merge.RowFilter{}
	for _, r := range rs {
		from, to, err := r.Range()
		if err != nil {
			return nil, fmt.Errorf("request %s: %w", r.ID, err)
		}
		p := merge.Predicate{From: from, To: to}
		for _, c := range r.Where {
			p.Columns = append(p.Columns, merge.ColumnIn{Column: c.Column, Values: c.Values})
		}
		f.Predicates = append(f.Predicates, p)
	}
	return f, nil
}

// Describe renders r's predicate for logs and the CLI: service IN (billing) AND timestamp >= ....
func (r *Request) Describe() string {
	var parts []string
	for _, c := range r.Where {
		if len(c.Values) == 1 {
			parts = append(parts, fmt.Sprintf("%s = %q", c.Column, c.Values[0]))
		} else {
			q := make([]string, len(c.Values))
			for i, v := range c.Values {
				q[i] = strconv.Quote(v)
			}
			parts = append(parts, fmt.Sprintf("%s IN (%s)", c.Column, strings.Join(q, ", ")))
		}
	}
	if r.From != "" {
		parts = append(parts, "timestamp >= "+r.From)
	}
	if r.To != "" {
		parts = append(parts, "timestamp < "+r.To)
	}
	if r.AllRows {
		parts = append([]string{"ALL ROWS"}, parts...)
	}
	return strings.Join(parts, " AND ")
}
