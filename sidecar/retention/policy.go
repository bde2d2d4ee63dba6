// Package retention removes rows older than their table's retention period and frees their
// storage (docs/retention.md). The policy (a period and rules with their own periods) lives in
// the table's properties; the planner (plan.PlanRetention) picks what a run drops whole and what
// it rewrites; the runner commits through the lake and the rewrite executor and deletes the
// removed objects after the delete delay, from a pending list kept in the table's properties.
package retention

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/duration"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/rows"
)

// Property is the table property holding the policy (JSON, docs/retention.md).
const Property = tableprops.Retention

// Version is the format version of a stored policy (and of a pending deletion); readers refuse
// newer ones.
const Version = 1

// PolicyProperty reads and writes the stored policy (docs/format/table-properties.md);
// PolicyProperty.Read is the policy of a table's properties. Fields it does not know are refused:
// people write policies by hand.
var PolicyProperty = tableprops.Codec[Policy]{Name: Property, What: "retention policy", Strict: true,
	Version: func(p *Policy) *int { return &p.Version }, MinVersion: 1, MaxVersion: Version}

// MinPeriod is the shortest period accepted: a shorter one is far more often a typo (30m for
// 30d) than a wish, and it would drop rows commit batching and late ingest still deliver.
const MinPeriod = 24 * time.Hour

// Policy is a table's retention: rows older than Period leave the table, except rows a rule
// matches, which keep that rule's period.
type Policy struct {
	Version int `json:"version"`
	// Period is the table's period ("30d"); "" takes the process default
	// (SIGLAKE_RETENTION_PERIOD); "0" keeps rows for ever.
	Period string `json:"period,omitempty"`
	Rules  []Rule `json:"rules,omitempty"`
}

// Rule gives the rows its conditions match (a conjunction, the deletion-request grammar) their
// own period. Precedence: the highest Priority wins; among equal priorities the shortest period
// (Loki's per-stream retention).
type Rule struct {
	Where    []rows.Condition `json:"where"`
	Period   string           `json:"period"` // "0" keeps matching rows for ever
	Priority int              `json:"priority,omitempty"`
}

// ParsePeriod reads a period: a number of days (30d) or weeks (2w), a Go duration (36h), or 0
// (keep for ever). flag names the input in errors.
func ParsePeriod(flag, v string) (time.Duration, error) {
	bad := fmt.Errorf("%s %q: accepted: 0 (keep for ever), days (30d), weeks (4w) or hours (36h), at least %s", flag, v, FormatPeriod(MinPeriod))
	s := strings.TrimSpace(v)
	if s == "0" || s == "forever" {
		return 0, nil
	}
	// One duration syntax (package duration), which refuses NaN, negatives and overflow; a zero
	// spelled otherwise (0d) is refused, so only 0 or forever keeps rows for ever.
	d, err := duration.Parse(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	if d < MinPeriod {
		return 0, fmt.Errorf("%s %q: below the minimum of %s (0 keeps rows for ever)", flag, v, FormatPeriod(MinPeriod))
	}
	return d, nil
}

// FormatPeriod renders d as ParsePeriod reads it: whole days as 30d, 0 as 0.
func FormatPeriod(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}

// Encode is the stored form of p, at the current format version.
func (p Policy) Encode() (string, error) { return PolicyProperty.Encode(PolicyProperty.Current(p)) }

// Validate checks p against a table schema: periods parse and are at least MinPeriod (or 0),
// every rule has a condition, and its conditions pass the deletion-request checks (the columns
// exist and take conditions, the values parse). Stored policies are checked again before every
// use: another tool may have written them, or the schema may have changed.
func (p Policy) Validate(sc *iceberg.Schema, tsColumn string) error {
	if p.Period != "" {
		if _, err := ParsePeriod("--period", p.Period); err != nil {
			return err
		}
	}
	for i, r := range p.Rules {
		if len(r.Where) == 0 {
			return fmt.Errorf("rule %d: a rule needs at least one condition (the table period covers every row)", i+1)
		}
		if _, err := ParsePeriod(fmt.Sprintf("rule %d period", i+1), r.Period); err != nil {
			return err
		}
		if err := (rows.Filter{Where: r.Where}).Check(sc, tsColumn); err != nil {
			return &RuleError{Rule: i + 1, Shape: r.Shape(), Err: err}
		}
	}
	return nil
}

// RuleError is a rule whose conditions do not validate. Its cause may quote a value (a value
// that does not parse as its column's type); PublicError leaves the cause out.
type RuleError struct {
	Rule  int    // 1-based
	Shape string // the rule's columns, without values
	Err   error
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %d: %v", e.Rule, e.Err) }
func (e *RuleError) Unwrap() error { return e.Err }

// PublicError renders a validation error of Validate for status pages and logs: a rule's
// conditions are named by their columns only (the operator command siglake retention show
// prints the cause with its values).
func PublicError(err error) string {
	var re *RuleError
	if errors.As(err, &re) {
		return fmt.Sprintf("rule %d (%s): its conditions do not validate against the table's schema (siglake retention show says why)", re.Rule, re.Shape)
	}
	return err.Error()
}

// Shape renders r's conditions without their values, for pages that must not publish them:
// "user (1 value) AND service (2 values)".
func (r Rule) Shape() string {
	parts := make([]string, len(r.Where))
	for i, c := range r.Where {
		unit := "values"
		if len(c.Values) == 1 {
			unit = "value"
		}
		parts[i] = fmt.Sprintf("%s (%d %s)", c.Column, len(c.Values), unit)
	}
	return strings.Join(parts, " AND ")
}

// Fingerprint identifies r's conditions where their values must not be shown (status pages: a
// rule may name a person, user=alice@example.com): equal conditions, in any order, give equal
// fingerprints, so an operator matches a status line with siglake retention show, which prints
// the values and the same fingerprint. It is keyed (the table's UUID): an unkeyed short hash of
// an address is a dictionary lookup away from the address.
func (r Rule) Fingerprint(key string) string {
	type cond struct {
		C string   `json:"c"`
		V []string `json:"v"`
	}
	cs := make([]cond, len(r.Where))
	for i, c := range r.Where {
		vs := append([]string(nil), c.Values...)
		sort.Strings(vs)
		cs[i] = cond{c.Column, vs}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].C < cs[j].C })
	b, _ := json.Marshal(cs) // strings only: never fails
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write(b)
	return hex.EncodeToString(mac.Sum(nil))[:12]
}

// Class is one retention class at an instant: the rows matching Where (all rows when empty)
// that no earlier class took, kept while newer than Cutoff.
type Class struct {
	Name string `json:"class"`
	// Rule is the 1-based index of the policy rule the class is (0: the table period).
	Rule   int              `json:"-"`
	Where  []rows.Condition `json:"-"`
	Period time.Duration    `json:"-"`
	// Cutoff in microseconds; nil keeps the class for ever.
	Cutoff *int64 `json:"-"`
}

// Classes are p's classes in precedence order at now, the table period's last; each cutoff is
// now minus the class's period, floored to UTC midnight. def is the
// process default for a policy without its own period. p must be valid.
func (p Policy) Classes(now time.Time, def time.Duration) []Class {
	type ranked struct {
		r   Rule
		d   time.Duration
		idx int
	}
	rs := make([]ranked, len(p.Rules))
	for i, r := range p.Rules {
		d, _ := ParsePeriod("", r.Period)
		rs[i] = ranked{r, d, i}
	}
	forever := func(d time.Duration) time.Duration {
		if d == 0 {
			return 1<<63 - 1
		}
		return d
	}
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].r.Priority != rs[j].r.Priority {
			return rs[i].r.Priority > rs[j].r.Priority
		}
		return forever(rs[i].d) < forever(rs[j].d)
	})
	// Cutoffs fall on UTC midnight, the day partitions' boundary: a row stays up to a day past
	// its period, and in exchange the table period's cutoff never splits a partition (its days
	// go whole, metadata only) and every cutoff moves once a day, so a file is read for rows past
	// retention at most once a day, not at every run.
	cut := func(d time.Duration) *int64 {
		if d == 0 {
			return nil
		}
		us := now.Add(-d).UTC().Truncate(24 * time.Hour).UnixMicro()
		return &us
	}
	var out []Class
	for _, r := range rs {
		out = append(out, Class{Name: fmt.Sprintf("rule %d: %s", r.idx+1, rows.Filter{Where: r.r.Where}.Describe()), Rule: r.idx + 1, Where: r.r.Where, Period: r.d, Cutoff: cut(r.d)})
	}
	d := p.TablePeriod(def)
	out = append(out, Class{Name: "table period", Period: d, Cutoff: cut(d)})
	return out
}

// TablePeriod is the period of rows no rule matches: p's own, else def.
func (p Policy) TablePeriod(def time.Duration) time.Duration {
	if p.Period == "" {
		return def
	}
	d, _ := ParsePeriod("", p.Period)
	return d
}

// Longest is the age past which no row of the table is kept (0: some class keeps for ever):
// what siglake_retention_period_seconds exports and the oldest-data alert compares with.
func Longest(cs []Class) time.Duration {
	var l time.Duration
	for _, c := range cs {
		if c.Period == 0 {
			return 0
		}
		l = max(l, c.Period)
	}
	return l
}

// Cutoffs are the planner's bounds for classes cs.
func Cutoffs(cs []Class) plan.RetentionCutoffs {
	var c plan.RetentionCutoffs
	whole := true
	for _, cl := range cs {
		if cl.Cutoff == nil {
			whole = false
			continue
		}
		if c.Latest == nil || *cl.Cutoff > *c.Latest {
			v := *cl.Cutoff
			c.Latest = &v
		}
		if c.Whole == nil || *cl.Cutoff < *c.Whole {
			v := *cl.Cutoff
			c.Whole = &v
		}
	}
	if !whole {
		c.Whole = nil
	}
	return c
}

// RowFilter drops the rows past their class's cutoff: the merge evaluates classes in order and
// a row takes the first whose conditions hold.
func RowFilter(cs []Class) *rowfilter.Filter {
	f := &rowfilter.Filter{FirstMatch: true}
	for _, c := range cs {
		p := rowfilter.Predicate{To: c.Cutoff, Keep: c.Cutoff == nil}
		for _, w := range c.Where {
			p.Columns = append(p.Columns, rowfilter.ColumnIn{Column: w.Column, Values: w.Values})
		}
		f.Predicates = append(f.Predicates, p)
	}
	return f
}

// Expr is the Iceberg filter of rows that may be past their class's cutoff, for scan planning:
// any class's conditions with its cutoff. It ignores precedence (a wider set, never a narrower
// one): planning only rules files out.
func Expr(cs []Class, sc *iceberg.Schema, tsColumn string) (iceberg.BooleanExpression, error) {
	var fs []rows.Filter
	for _, c := range cs {
		if c.Cutoff == nil {
			continue
		}
		fs = append(fs, rows.Filter{Where: c.Where, To: time.UnixMicro(*c.Cutoff).UTC().Format(time.RFC3339Nano)})
	}
	return rows.AnyExpr(fs, sc, tsColumn)
}

// Describe renders p for the CLI and logs, with def for a policy without its own period.
func (p Policy) Describe(def time.Duration) string {
	src := ""
	if p.Period == "" {
		src = " (process default)"
	}
	s := "period " + FormatPeriod(p.TablePeriod(def)) + src
	for i, r := range p.Rules {
		s += fmt.Sprintf("; rule %d: %s keeps %s", i+1, rows.Filter{Where: r.Where}.Describe(), r.Period)
		if r.Priority != 0 {
			s += fmt.Sprintf(" (priority %d)", r.Priority)
		}
	}
	return s
}

// Public renders p like Describe for status pages and logs: each rule's columns and the
// fingerprint of its conditions (key: the table's UUID), never their values.
func (p Policy) Public(def time.Duration, key string) string {
	src := ""
	if p.Period == "" {
		src = " (process default)"
	}
	s := "period " + FormatPeriod(p.TablePeriod(def)) + src
	for i, r := range p.Rules {
		s += fmt.Sprintf("; rule %d: %s [%s] keeps %s", i+1, r.Shape(), r.Fingerprint(key), r.Period)
		if r.Priority != 0 {
			s += fmt.Sprintf(" (priority %d)", r.Priority)
		}
	}
	return s
}

// DrainFilter is retention as the drain sees it (drain.Config.PastRetention): for a table at an
// instant, the filter of rows already past retention and the latest cutoff; nil when the policy
// keeps every row. A stored policy that does not validate drops nothing here: the maintenance
// run reports it. def is SIGLAKE_RETENTION_PERIOD. A nil t is a table not created yet (the WAL
// buffer serves its rows): the drain creates it without a policy, so def applies.
func DrainFilter(def time.Duration) func(t *table.Table, now time.Time) (*rowfilter.Filter, int64) {
	return func(t *table.Table, now time.Time) (*rowfilter.Filter, int64) {
		var pol Policy
		var err error
		if t != nil {
			pol, _, err = PolicyProperty.Read(t.Properties())
			if err == nil {
				err = pol.Validate(t.Schema(), lake.TimestampColumn)
			}
		}
		if err != nil {
			return nil, 0
		}
		cs := pol.Classes(now, def)
		cut := Cutoffs(cs)
		if cut.Latest == nil {
			return nil, 0
		}
		return RowFilter(cs), *cut.Latest
	}
}
