package deletes

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
)

// TestListKeepsGoodRequestsAndReportsBadOnes: a property that does not decode (bad JSON, a newer
// format, an unknown state) is reported by name and never returned for execution.
func TestListKeepsGoodRequestsAndReportsBadOnes(t *testing.T) {
	good := Request{Version: 1, ID: NewID(time.Now()), State: Pending, Where: []Condition{{Column: "service", Values: []string{"a"}}}}
	v, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	props := iceberg.Properties{
		Key(good.ID):       v,
		Key("bad-json"):    "{",
		Key("newer"):       `{"version":3,"id":"newer","state":"pending"}`,
		Key("odd-state"):   `{"version":1,"id":"odd-state","state":"maybe"}`,
		"siglake.mark.pod": "1:2",
	}
	rs, errs := List(props)
	if len(rs) != 1 || rs[0].ID != good.ID || rs[0].Describe() != `service = "a"` {
		t.Fatalf("requests %+v", rs)
	}
	want := []string{"siglake.delete.bad-json: not a deletion request", "siglake.delete.newer: request format version 3, this siglake reads 1..2",
		`siglake.delete.odd-state: state "maybe", accepted: pending, done, cancelled`}
	all := ""
	for _, e := range errs {
		all += e.Error() + "\n"
	}
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("errors %q lack %q", all, w)
		}
	}
}

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

// TestParseDurationRefusesWrapping: a cancel period that is not a number or too large used to
// wrap to about -292 years, which waiting() read as no period: requests ran at once.
func TestParseDurationRefusesWrapping(t *testing.T) {
	for _, in := range []string{"20000w", "1e5w", "NaNd", "nand", "Infd", "-1d", "-24h"} {
		d, err := ParseDuration(in)
		if err == nil || !strings.Contains(err.Error(), `"`+in+`"`) || !strings.Contains(err.Error(), "accepted:") {
			t.Errorf("%q: %v, %v; want an error naming the input and what is accepted", in, d, err)
		}
	}
	for in, want := range map[string]time.Duration{"0": 0, "72h": 72 * time.Hour, "3d": 72 * time.Hour, "1w": 7 * 24 * time.Hour} {
		if d, err := ParseDuration(in); err != nil || d != want {
			t.Errorf("%q: %v, %v; want %v", in, d, err, want)
		}
	}
}
