// Package fold is aggregate folding's table side (docs/folding.md): the fold specification a
// rollup table keeps in its properties, its validation against the table's schema, and the
// folding.Fold a rewrite of the table runs with at an instant. Folding itself is a stream transform
// of the merge paths (folding.Fold); which files fold when is the planner's (plan.PlanFold).
package fold

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/sidecar/duration"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/retention"
)

// Property is the table property holding the specification (JSON, docs/folding.md).
const Property = tableprops.Fold

// Version is the format version of a stored specification; readers refuse newer ones.
const Version = 1

// SpecProperty reads and writes the stored specification (docs/format/table-properties.md);
// SpecProperty.Read is the specification of a table's properties. Fields it does not know are
// refused: people write specifications by hand.
var SpecProperty = tableprops.Codec[Spec]{Name: Property, What: "fold specification", Strict: true,
	Version: func(s *Spec) *int { return &s.Version }, MinVersion: 1, MaxVersion: Version}

const day = 24 * time.Hour

// Spec is a table's fold specification: rows of one (bucket, keys) fold into one.
type Spec struct {
	Version int `json:"version"`
	// Bucket is the fold bucket ("1m"), a duration that divides a day.
	Bucket string `json:"bucket"`
	// Keys are the columns a folded row shares.
	Keys []string `json:"keys"`
	// Aggregates are every other column but the timestamp, with its function.
	Aggregates []Aggregate `json:"aggregates"`
	// Tiers coarsen older rows, youngest age first.
	Tiers []Tier `json:"tiers,omitempty"`
}

// Aggregate is an aggregated column and its function (sum, min, max, count).
type Aggregate struct {
	Column string `json:"column"`
	Func   string `json:"func"`
}

// Tier folds the rows older than After at Bucket.
type Tier struct {
	After  string `json:"after"`
	Bucket string `json:"bucket"`
}

// ParseBucket reads a bucket: a Go duration (1m, 1h) or days (1d) that divides a day, at least
// one second. what names the input in errors.
func ParseBucket(what, v string) (time.Duration, error) {
	d, err := duration.Parse(v)
	if err != nil || d < time.Second || d > day || day%d != 0 {
		return 0, fmt.Errorf("%s %q: accepted: a duration that divides a day, from 1s to 1d (1m, 5m, 1h, 1d)", what, v)
	}
	return d, nil
}

// distinctFuncs are the functions a fold refuses by name: a distinct count of two pods' partial
// rows is not the sum of theirs.
var distinctFuncs = map[string]bool{"count_distinct": true, "distinct": true, "uniq": true, "approx_count_distinct": true, "countDistinct": true}

// Encode is the stored form of s, at the current format version.
func (s Spec) Encode() (string, error) { return SpecProperty.Encode(SpecProperty.Current(s)) }

// Validate checks s against a table schema: the buckets divide a day, each tier is older and
// coarser than the one before (a multiple of it), every column is the timestamp, a key or
// aggregated with a function its type takes, and no distinct count. Errors name the property and
// the column. A stored specification is checked again before every use: another tool may have
// written it, or the drain may have added a column since.
func (s Spec) Validate(sc *iceberg.Schema) error {
	if err := s.validate(sc); err != nil {
		return fmt.Errorf("table property %s: %w", Property, err)
	}
	return nil
}

func (s Spec) validate(sc *iceberg.Schema) error {
	for _, a := range s.Aggregates {
		if distinctFuncs[a.Func] {
			return fmt.Errorf("column %q: %s: distinct counts do not fold (the distinct counts of two partial rows do not add up); accepted: sum, min, max, count", a.Column, a.Func)
		}
	}
	if len(s.Keys) == 0 {
		return fmt.Errorf("no key columns: a fold needs at least one")
	}
	f, err := s.mergeFold(time.Unix(0, 0))
	if err != nil {
		return err
	}
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return fmt.Errorf("the table schema: %w", err)
	}
	return folding.CheckFold(f, asc, lake.TimestampColumn)
}

// tier is a parsed tier.
type tier struct {
	after, bucket time.Duration
}

func (s Spec) parse() (time.Duration, []tier, error) {
	base, err := ParseBucket("bucket", s.Bucket)
	if err != nil {
		return 0, nil, err
	}
	var ts []tier
	prevAfter, prevBucket := time.Duration(0), base
	for i, t := range s.Tiers {
		after, err := retention.ParsePeriod(fmt.Sprintf("tier %d after", i+1), t.After)
		if err != nil {
			return 0, nil, err
		}
		b, err := ParseBucket(fmt.Sprintf("tier %d bucket", i+1), t.Bucket)
		if err != nil {
			return 0, nil, err
		}
		if after <= prevAfter {
			return 0, nil, fmt.Errorf("tier %d: after %s is not older than the tier before (list tiers youngest first)", i+1, t.After)
		}
		if b <= prevBucket || b%prevBucket != 0 {
			return 0, nil, fmt.Errorf("tier %d: bucket %s is not a coarser multiple of %s", i+1, t.Bucket, prevBucket)
		}
		prevAfter, prevBucket = after, b
		ts = append(ts, tier{after: after, bucket: b})
	}
	return base, ts, nil
}

// Cutoffs are the tiers' cutoffs at now, in microseconds, youngest tier first: a row older
// than cutoff i folds at tier i+1's bucket (see plan.FoldCutoffs).
func (s Spec) Cutoffs(now time.Time) ([]int64, error) {
	_, ts, err := s.parse()
	if err != nil {
		return nil, err
	}
	out := make([]int64, len(ts))
	for i, t := range ts {
		out[i] = cutoff(now, t)
	}
	return out, nil
}

// MergeFold is the fold a rewrite of the table runs with at now; maxGroups is its group budget
// (SIGLAKE_FOLD_MAX_GROUPS, 0 = merge's default).
func (s Spec) MergeFold(now time.Time, maxGroups int) (folding.Fold, error) {
	f, err := s.mergeFold(now)
	f.MaxGroups = maxGroups
	return f, err
}

func (s Spec) mergeFold(now time.Time) (folding.Fold, error) {
	base, ts, err := s.parse()
	if err != nil {
		return folding.Fold{}, err
	}
	f := folding.Fold{Keys: append([]string(nil), s.Keys...), Bucket: base.Microseconds()}
	for _, a := range s.Aggregates {
		f.Aggregates = append(f.Aggregates, folding.Aggregate{Column: a.Column, Func: folding.AggFunc(a.Func)})
	}
	// merge wants the oldest cutoff first.
	for i := len(ts) - 1; i >= 0; i-- {
		f.Tiers = append(f.Tiers, folding.FoldTier{Before: cutoff(now, ts[i]), Bucket: ts[i].bucket.Microseconds()})
	}
	return f, nil
}

// cutoff is tier t's cutoff at now: rows older than the tier's age, rounded down to the start
// of one of its buckets, so a bucket is coarsened whole or not at all.
func cutoff(now time.Time, t tier) int64 {
	c, b := now.Add(-t.after).UnixMicro(), t.bucket.Microseconds()
	return c - ((c%b)+b)%b
}

// IsKey says whether column is one of the specification's keys.
func (s Spec) IsKey(column string) bool {
	for _, k := range s.Keys {
		if k == column {
			return true
		}
	}
	return false
}

// Describe renders s in words for `siglake fold show` and /debug/status.
func (s Spec) Describe() string {
	var aggs []string
	for _, a := range s.Aggregates {
		aggs = append(aggs, a.Func+"("+a.Column+")")
	}
	sort.Strings(aggs)
	out := fmt.Sprintf("bucket %s by %s: %s", s.Bucket, strings.Join(s.Keys, ", "), strings.Join(aggs, ", "))
	for _, t := range s.Tiers {
		out += fmt.Sprintf("; after %s: %s buckets", t.After, t.Bucket)
	}
	return out
}

// Table is one table's fold state: its specification, or why it has none that works.
type Table struct {
	Spec  *Spec  `json:"spec,omitempty"`
	Error string `json:"error,omitempty"` // a bad specification: the table is not folded
}

// Load reads and validates the specification of t: ok is false for a table without one; a bad
// one is returned as err (the table is then not folded).
func Load(t *table.Table) (s Spec, ok bool, err error) {
	s, ok, err = SpecProperty.Read(t.Properties())
	if !ok || err != nil {
		return s, ok, err
	}
	return s, true, s.Validate(t.Schema())
}

// Set validates s against table name's schema and stores it, replacing the table's
// specification; one that does not validate is refused and nothing is written. A zero Spec
// removes the table's specification (the table is no longer folded; folded rows stay folded).
func Set(ctx context.Context, l *lake.Lake, name string, s Spec) (Spec, error) {
	t, err := l.LoadTable(ctx, name)
	if err != nil {
		return Spec{}, err
	}
	clear := s.empty()
	var v string
	if !clear {
		if err := s.Validate(t.Schema()); err != nil {
			return Spec{}, fmt.Errorf("fold specification for %s: %w", name, err)
		}
		if err := s.checkExisting(t.Properties()); err != nil {
			return Spec{}, fmt.Errorf("fold specification for %s: %w", name, err)
		}
		s.Version = Version
		if v, err = s.Encode(); err != nil {
			return Spec{}, err
		}
	}
	if err := l.SetProperty(ctx, name, Property, v, clear); err != nil {
		return Spec{}, fmt.Errorf("store the fold specification of %s: %w", name, err)
	}
	return s, nil
}

// PlanTiers is what the planner needs of s at now: the cutoffs, youngest tier first.
func (s Spec) PlanTiers(now time.Time) (plan.FoldCutoffs, error) {
	c, err := s.Cutoffs(now)
	return plan.FoldCutoffs(c), err
}

// Update edits table name's fold specification inside one properties commit (lake.EditValue,
// shared with retention.Update): edit gets the specification stored now (and its decode error)
// and returns the new one (a zero Spec removes it); a concurrent edit that commits first makes
// edit run again on its result. It returns the specification replaced and the one stored.
func Update(ctx context.Context, l *lake.Lake, name string, edit func(cur Spec, curErr error) (Spec, error)) (before, after Spec, err error) {
	return lake.EditValue(ctx, l, name, lake.ValueEdit[Spec]{Codec: SpecProperty, Edit: edit, Empty: Spec.empty,
		Check: func(sc *iceberg.Schema, props iceberg.Properties, next Spec) error {
			if next.empty() {
				return nil
			}
			if err := next.Validate(sc); err != nil {
				return err
			}
			return next.checkExisting(props)
		}})
}

// empty says s is the zero specification, which removes the table's.
func (s Spec) empty() bool {
	return s.Bucket == "" && len(s.Keys) == 0 && len(s.Aggregates) == 0 && len(s.Tiers) == 0
}
