package deletes

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/rows"
)

// TestListKeepsGoodRequestsAndReportsBadOnes: a property that does not decode (bad JSON, a newer
// format, an unknown state) is reported by name and never returned for execution.
func TestListKeepsGoodRequestsAndReportsBadOnes(t *testing.T) {
	good := Request{Version: 1, ID: NewID(time.Now()), State: Pending, Where: []rows.Condition{{Column: "service", Values: []string{"a"}}}}
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

// TestExecutableRefusesUnboundedRequests: a stored request with no condition and no all_rows runs
// only with a bound that leaves rows out: a from, or a to at or before its creation. A version-1
// request whose to lies up to 10 minutes before its creation is the old CLI's whole-table default
// (it read the clock before connecting to the catalog) and is refused too.
func TestExecutableRefusesUnboundedRequests(t *testing.T) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "service", Type: iceberg.PrimitiveTypes.String})
	created := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ts := func(d time.Duration) string { return created.Add(d).Format(time.RFC3339Nano) }
	for _, c := range []struct {
		name string
		r    Request
		ok   bool
	}{
		{"v2, only to far in the future (another tool)", Request{Version: 2, To: "2099-01-01"}, false},
		{"v2, nothing at all", Request{Version: 2}, false},
		{"v2, to at its creation (delete-request's default)", Request{Version: 2, To: ts(0)}, true},
		{"v2, to before its creation", Request{Version: 2, To: ts(-time.Hour)}, true},
		{"v2, a from", Request{Version: 2, From: "2026-11-01"}, true},
		{"v2, all_rows", Request{Version: 2, AllRows: true, To: "2099-01-01"}, true},
		{"v2, a condition and a future to", Request{Version: 2, To: "2099-01-01", Where: []rows.Condition{{Column: "service", Values: []string{"a"}}}}, true},
		{"v1, to = created", Request{Version: 1, To: ts(0)}, false},
		{"v1, to = created - 5s (slow connect)", Request{Version: 1, To: ts(-5 * time.Second)}, false},
		{"v1, to = created - 9m", Request{Version: 1, To: ts(-9 * time.Minute)}, false},
		{"v1, to = created + 1s", Request{Version: 1, To: ts(time.Second)}, false},
		{"v1, to = created - 1h (a real bound)", Request{Version: 1, To: ts(-time.Hour)}, true},
		{"v1, to in the future", Request{Version: 1, To: "2099-01-01"}, false},
	} {
		r := c.r
		r.ID, r.State, r.CreatedAt = NewID(created), Pending, created
		ok, errs := Executable([]Request{r}, sc, "timestamp")
		if got := len(ok) == 1; got != c.ok {
			t.Errorf("%s: executable %v (%v), want %v", c.name, got, errs, c.ok)
		}
		if !c.ok && (len(errs) != 1 || !strings.Contains(errs[0].Error(), "every row")) {
			t.Errorf("%s: errors %v, want one saying it would delete every row", c.name, errs)
		}
	}
}
