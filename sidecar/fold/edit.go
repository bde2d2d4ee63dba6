package fold

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/siglake/siglake/sidecar/retention"
)

// Edit is a change to a stored specification, as `siglake fold set` names it: what it does not
// name stays, so changing the bucket keeps the tiers (they were silently dropped before).
type Edit struct {
	Bucket string // "" keeps the bucket
	// Keys become key columns (a column named here stops being aggregated).
	Keys []string
	// Aggregates set their column's function (a column named here stops being a key).
	Aggregates []Aggregate
	// Tiers are added, or replace the tier of the same age (7d and 1w are the same age).
	Tiers []Tier
	// RemoveTiers are the ages of tiers to remove; each must match a tier.
	RemoveTiers []string
	// Replace starts from an empty specification instead of the stored one.
	Replace bool
}

// Apply returns s changed by e, tiers youngest first. Removing a tier s does not have is an error
// naming the tiers it has.
func (s Spec) Apply(e Edit) (Spec, error) {
	out := Spec{Version: s.Version, Bucket: s.Bucket, Keys: slices.Clone(s.Keys),
		Aggregates: slices.Clone(s.Aggregates), Tiers: slices.Clone(s.Tiers)}
	if e.Replace {
		out = Spec{Version: s.Version}
	}
	if e.Bucket != "" {
		out.Bucket = e.Bucket
	}
	for _, k := range e.Keys {
		out.Aggregates = slices.DeleteFunc(out.Aggregates, func(a Aggregate) bool { return a.Column == k })
		if !slices.Contains(out.Keys, k) {
			out.Keys = append(out.Keys, k)
		}
	}
	for _, a := range e.Aggregates {
		out.Keys = slices.DeleteFunc(out.Keys, func(k string) bool { return k == a.Column })
		if i := slices.IndexFunc(out.Aggregates, func(b Aggregate) bool { return b.Column == a.Column }); i >= 0 {
			out.Aggregates[i] = a
		} else {
			out.Aggregates = append(out.Aggregates, a)
		}
	}
	for _, age := range e.RemoveTiers {
		i := tierIndex(out.Tiers, age)
		if i < 0 {
			return Spec{}, fmt.Errorf("--remove-tier %s: the specification has no tier of that age (its tiers: %s)", age, tierList(out.Tiers))
		}
		out.Tiers = slices.Delete(out.Tiers, i, i+1)
	}
	for _, t := range e.Tiers {
		if i := tierIndex(out.Tiers, t.After); i >= 0 {
			out.Tiers[i] = t
		} else {
			out.Tiers = append(out.Tiers, t)
		}
	}
	// Youngest first, as Validate wants; an age that does not parse sorts last and Validate names it.
	sort.SliceStable(out.Tiers, func(i, j int) bool {
		a, errA := retention.ParsePeriod("", out.Tiers[i].After)
		b, errB := retention.ParsePeriod("", out.Tiers[j].After)
		return errA == nil && (errB != nil || a < b)
	})
	return out, nil
}

// tierIndex is the index of the tier of age, compared as durations (7d is 1w), else as written.
func tierIndex(ts []Tier, age string) int {
	want, werr := retention.ParsePeriod("", age)
	for i, t := range ts {
		got, err := retention.ParsePeriod("", t.After)
		if t.After == age || werr == nil && err == nil && got == want {
			return i
		}
	}
	return -1
}

func tierList(ts []Tier) string {
	if len(ts) == 0 {
		return "none"
	}
	var out []string
	for _, t := range ts {
		out = append(out, t.After+":"+t.Bucket)
	}
	return strings.Join(out, ", ")
}

// Lines renders s one item a line (bucket, keys, each aggregate, each tier), for a before/after
// diff; an empty specification has none.
func (s Spec) Lines() []string {
	if s.Bucket == "" && len(s.Keys) == 0 && len(s.Aggregates) == 0 && len(s.Tiers) == 0 {
		return nil
	}
	out := []string{"bucket " + s.Bucket}
	for _, k := range s.Keys {
		out = append(out, "key "+k)
	}
	for _, a := range s.Aggregates {
		out = append(out, "agg "+a.Column+"="+a.Func)
	}
	for _, t := range s.Tiers {
		out = append(out, "tier "+t.After+":"+t.Bucket)
	}
	return out
}
