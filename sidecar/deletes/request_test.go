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
		Key("newer"):       `{"version":2,"id":"newer","state":"pending"}`,
		Key("odd-state"):   `{"version":1,"id":"odd-state","state":"maybe"}`,
		"siglake.mark.pod": "1:2",
	}
	rs, errs := List(props)
	if len(rs) != 1 || rs[0].ID != good.ID || rs[0].Describe() != `service = "a"` {
		t.Fatalf("requests %+v", rs)
	}
	want := []string{"siglake.delete.bad-json: not a deletion request", "siglake.delete.newer: request format version 2, this siglake reads 1..1",
		`siglake.delete.odd-state: state "maybe", accepted: pending, done`}
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
