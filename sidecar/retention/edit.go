package retention

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar/rows"
)

// Edit is a change to a stored policy, as `siglake retention set` names it: what it does not
// name stays, so setting a period keeps the rules (an operator fixing the period once lost
// every rule with it).
type Edit struct {
	// Period, when not nil, becomes the table period ("" the process default, "0" for ever).
	Period *string
	// Rules are added, or replace the rule with the same conditions (in any order).
	Rules []Rule
	// Remove are the conditions of rules to remove; each must match a rule.
	Remove [][]rows.Condition
	// Replace starts from an empty policy instead of the stored one.
	Replace bool
}

// Apply returns p changed by e. Removing a rule the policy does not have is an error naming it,
// so a typo cannot pass for a removal.
func (p Policy) Apply(e Edit) (Policy, error) {
	out := Policy{Version: p.Version, Period: p.Period, Rules: slices.Clone(p.Rules)}
	if e.Replace {
		out = Policy{Version: p.Version}
	}
	if e.Period != nil {
		out.Period = *e.Period
	}
	for _, w := range e.Remove {
		i := out.ruleIndex(w)
		if i < 0 {
			return Policy{}, fmt.Errorf("--remove-rule %s: the policy has no rule with these conditions (its rules: %s)", conditionsKey(w), out.ruleList())
		}
		out.Rules = slices.Delete(out.Rules, i, i+1)
	}
	for _, r := range e.Rules {
		if i := out.ruleIndex(r.Where); i >= 0 {
			out.Rules[i] = r
		} else {
			out.Rules = append(out.Rules, r)
		}
	}
	return out, nil
}

func (p Policy) ruleIndex(where []rows.Condition) int {
	k := conditionsKey(where)
	for i, r := range p.Rules {
		if conditionsKey(r.Where) == k {
			return i
		}
	}
	return -1
}

func (p Policy) ruleList() string {
	if len(p.Rules) == 0 {
		return "none"
	}
	var ks []string
	for _, r := range p.Rules {
		ks = append(ks, conditionsKey(r.Where))
	}
	return strings.Join(ks, ", ")
}

// conditionsKey identifies a rule by its conditions whatever their order: COLUMN=V1,V2 joined by
// & (the --rule syntax), columns and values sorted.
func conditionsKey(where []rows.Condition) string {
	var cs []string
	for _, c := range where {
		vs := slices.Clone(c.Values)
		sort.Strings(vs)
		cs = append(cs, c.Column+"="+strings.Join(vs, ","))
	}
	sort.Strings(cs)
	return strings.Join(cs, "&")
}

// Lines renders p one item a line (the period, then each rule), for a before/after diff; def is
// the process default for a policy without its own period.
func (p Policy) Lines(def time.Duration) []string {
	period := "period " + FormatPeriod(p.TablePeriod(def))
	if p.Period == "" {
		period += " (process default)"
	}
	out := []string{period}
	for _, r := range p.Rules {
		l := fmt.Sprintf("rule %s keeps %s", conditionsKey(r.Where), r.Period)
		if r.Priority != 0 {
			l += fmt.Sprintf(" (priority %d)", r.Priority)
		}
		out = append(out, l)
	}
	return out
}
