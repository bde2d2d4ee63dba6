package rows

import (
	"strconv"
	"strings"
	"testing"
)

// TestParseConditions: the one parser of --where/--in (the CLI and the WAL buffer's where=/in=).
func TestParseConditions(t *testing.T) {
	if cs, err := ParseWhere("user=a=b"); err != nil || len(cs) != 1 || cs[0].Column != "user" || len(cs[0].Values) != 1 || cs[0].Values[0] != "a=b" {
		t.Fatalf("%+v %v", cs, err)
	}
	if c, err := ParseIn("service=a,b"); err != nil || c.Column != "service" || len(c.Values) != 2 {
		t.Fatalf("%+v %v", c, err)
	}
	for _, bad := range []string{"user", "=x"} {
		if _, err := ParseWhere(bad); err == nil || !strings.Contains(err.Error(), "accepted: COLUMN=VALUE") {
			t.Errorf("where %q: %v", bad, err)
		}
	}
	for _, bad := range []string{"service", "service=", "=a"} {
		if _, err := ParseIn(bad); err == nil || !strings.Contains(err.Error(), "accepted: COLUMN=V1,V2,...") {
			t.Errorf("in %q: %v", bad, err)
		}
	}
}

// TestParseWhereUnicodeBlanks: blanks are any Unicode space (a copied non-breaking space joins
// conditions as well as a plain one), and an unquoted value holding an invisible character or the
// word AND is refused with the token, never read as one value that matches nothing.
func TestParseWhereUnicodeBlanks(t *testing.T) {
	for _, in := range []string{"service=billing\u00a0AND\u00a0severity=debug", "service=billing\u2003and\u3000severity=debug", "\u00a0service=billing AND severity=debug\u00a0"} {
		cs, err := ParseWhere(in)
		if err != nil || len(cs) != 2 || cs[0].Values[0] != "billing" || cs[1].Column != "severity" || cs[1].Values[0] != "debug" {
			t.Errorf("%q: %+v, %v; want two conditions", in, cs, err)
		}
	}
	for in, token := range map[string]string{
		"service=billing\u200bAND\u200bseverity=debug": "service=billing\u200bAND\u200bseverity=debug",
		"service=billing_AND_severity=debug":           "service=billing_AND_severity=debug",
		"msg=a\ufeffb":                                 "msg=a\ufeffb",
	} {
		_, err := ParseWhere(in)
		if err == nil || !strings.Contains(err.Error(), "token "+strconv.Quote(token)) {
			t.Errorf("%q: %v, want a refusal naming token %q", in, err, token)
		}
	}
	if cs, err := ParseWhere("msg=\"a\u00a0AND b\""); err != nil || cs[0].Values[0] != "a\u00a0AND b" {
		t.Errorf("a quoted value: %+v, %v", cs, err)
	}
}

// TestParseWhereAnd: one --where holds conditions joined by AND (any case), values may be quoted,
// and what the grammar does not have is refused with the token, never read into a value.
func TestParseWhereAnd(t *testing.T) {
	for in, want := range map[string][]Condition{
		"service=billing AND severity=debug":  {{Column: "service", Values: []string{"billing"}}, {Column: "severity", Values: []string{"debug"}}},
		"service=billing and  severity=debug": {{Column: "service", Values: []string{"billing"}}, {Column: "severity", Values: []string{"debug"}}},
		`raw="a AND b" And host='web 1'`:      {{Column: "raw", Values: []string{"a AND b"}}, {Column: "host", Values: []string{"web 1"}}},
		"user=a=b":                            {{Column: "user", Values: []string{"a=b"}}},
		"user_id=":                            {{Column: "user_id", Values: []string{""}}},
	} {
		got, err := ParseWhere(in)
		if err != nil || len(got) != len(want) {
			t.Errorf("%q: %+v, %v; want %+v", in, got, err, want)
			continue
		}
		for i := range want {
			if got[i].Column != want[i].Column || len(got[i].Values) != 1 || got[i].Values[0] != want[i].Values[0] {
				t.Errorf("%q: condition %d is %+v, want %+v", in, i, got[i], want[i])
			}
		}
	}
	for in, token := range map[string]string{
		"service=billing OR severity=debug": `token "OR"`,
		"service!=billing":                  `token "!="`,
		"service==billing":                  `token "service=="`,
		"service=billing AND":               "AND at the end",
		"service=billing severity=debug":    `token "severity=debug"`,
		`service="billing`:                  "quote of service's value is not closed",
		"service = billing":                 `token "service"`,
		"service":                           `token "service"`,
		"=x":                                `token "=x"`,
	} {
		_, err := ParseWhere(in)
		if err == nil || !strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "accepted: COLUMN=VALUE") {
			t.Errorf("%q: error %v, want it to name %s and what is accepted", in, err, token)
		}
	}
}
