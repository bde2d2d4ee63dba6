package retention

import (
	"reflect"
	"strings"
	"testing"

	"github.com/siglake/siglake/sidecar/rows"
)

// TestPolicyApply: an edit keeps what it does not name; a rule is identified by its conditions in
// any order; removing a missing rule names the rules; Replace starts empty.
func TestPolicyApply(t *testing.T) {
	p := Policy{Version: 1, Period: "30d", Rules: []Rule{
		{Where: where("severity", "debug"), Period: "3d"},
		{Where: []rows.Condition{{Column: "service", Values: []string{"b", "a"}}, {Column: "host", Values: []string{"h"}}}, Period: "0", Priority: 10},
	}}
	zero := "0"
	got, err := p.Apply(Edit{Period: &zero})
	if err != nil || got.Period != "0" || !reflect.DeepEqual(got.Rules, p.Rules) {
		t.Fatalf("a period alone: %+v, %v", got, err)
	}
	got, err = p.Apply(Edit{Rules: []Rule{{Where: []rows.Condition{{Column: "host", Values: []string{"h"}}, {Column: "service", Values: []string{"a", "b"}}}, Period: "7d"}}})
	if err != nil || len(got.Rules) != 2 || got.Rules[1].Period != "7d" || got.Rules[1].Priority != 0 || got.Period != "30d" {
		t.Fatalf("a rule with the same conditions in another order: %+v, %v", got, err)
	}
	if p.Rules[1].Period != "0" {
		t.Fatal("Apply changed its receiver's rules")
	}
	got, err = p.Apply(Edit{Remove: [][]rows.Condition{where("severity", "debug")}, Rules: []Rule{{Where: where("severity", "trace"), Period: "1d"}}})
	if err != nil || len(got.Rules) != 2 || got.Rules[1].Where[0].Values[0] != "trace" {
		t.Fatalf("remove one, add one: %+v, %v", got, err)
	}
	if _, err := p.Apply(Edit{Remove: [][]rows.Condition{where("severity", "info")}}); err == nil || !strings.Contains(err.Error(), "host=h&service=a,b") {
		t.Fatalf("removing a missing rule: %v", err)
	}
	got, err = p.Apply(Edit{Replace: true, Period: &zero})
	if err != nil || got.Period != "0" || len(got.Rules) != 0 {
		t.Fatalf("replace: %+v, %v", got, err)
	}
	if l := p.Lines(0); !reflect.DeepEqual(l, []string{"period 30d", "rule severity=debug keeps 3d", "rule host=h&service=a,b keeps 0 (priority 10)"}) {
		t.Fatalf("lines: %q", l)
	}
}
