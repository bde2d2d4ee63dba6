package reader

import (
	"net/url"
	"reflect"
	"testing"

	"github.com/siglake/siglake/sidecar/rows"
)

func TestMarksAndQueryRoundTrip(t *testing.T) {
	m, err := ParseMarks("pod-1:5:9, pod-0:1772366400000000000:42")
	if err != nil {
		t.Fatal(err)
	}
	if s := m.String(); s != "pod-0:1772366400000000000:42,pod-1:5:9" {
		t.Fatalf("%s", s)
	}
	if m, err := ParseMarks(""); err != nil || len(m) != 0 {
		t.Fatalf("%v %v", m, err)
	}
	m2 := Marks{"pod-0": {Incarnation: 1772366400000000000, Seq: 50}, "pod-2": {Incarnation: 1, Seq: 1}}
	m.Advance(m2)
	if m.String() != "pod-0:1772366400000000000:50,pod-1:5:9,pod-2:1:1" {
		t.Fatalf("advance: %s", m)
	}
	q := Query{Filter: rows.Filter{From: "2026-11-30", To: "2026-12-01T00:00:00Z",
		Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}, {Column: "severity", Values: []string{"error", "fatal"}}}},
		Columns: []string{"timestamp", "raw"}, After: m2, Unverified: true}
	back, err := ParseQuery(url.Values(q.Values()))
	if err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("round trip %+v %v, want %+v", back, err, q)
	}
	if back, err := ParseQuery(url.Values{}); err != nil || back.After != nil {
		t.Fatalf("no after: %+v %v", back, err)
	}
	if back, err := ParseQuery(url.Values{"after": {""}}); err != nil || back.After == nil || len(back.After) != 0 {
		t.Fatalf("after= (no marks): %+v %v", back, err)
	}
}
