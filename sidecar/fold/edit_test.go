package fold

import (
	"reflect"
	"strings"
	"testing"
)

// TestSpecApply: an edit keeps what it does not name; a tier is identified by its age as a
// duration (1w is 7d) and tiers stay youngest first; a column named as a key stops being
// aggregated and the other way round; removing a missing tier names the tiers.
func TestSpecApply(t *testing.T) {
	s := Spec{Version: 1, Bucket: "1m", Keys: []string{"service", "severity"},
		Aggregates: []Aggregate{{"events", "count"}, {"bytes", "sum"}}, Tiers: []Tier{{"7d", "1h"}, {"30d", "1d"}}}
	got, err := s.Apply(Edit{Bucket: "5m"})
	if err != nil || got.Bucket != "5m" || !reflect.DeepEqual(got.Tiers, s.Tiers) || !reflect.DeepEqual(got.Keys, s.Keys) {
		t.Fatalf("a bucket alone: %+v, %v", got, err)
	}
	got, err = s.Apply(Edit{Tiers: []Tier{{"14d", "6h"}, {"1w", "2h"}}})
	if err != nil || !reflect.DeepEqual(got.Tiers, []Tier{{"1w", "2h"}, {"14d", "6h"}, {"30d", "1d"}}) {
		t.Fatalf("tiers: %+v, %v", got.Tiers, err)
	}
	if s.Tiers[0].Bucket != "1h" {
		t.Fatal("Apply changed its receiver's tiers")
	}
	got, err = s.Apply(Edit{Keys: []string{"bytes"}, Aggregates: []Aggregate{{"severity", "max"}, {"events", "sum"}}})
	if err != nil || !reflect.DeepEqual(got.Keys, []string{"service", "bytes"}) || !reflect.DeepEqual(got.Aggregates, []Aggregate{{"events", "sum"}, {"severity", "max"}}) {
		t.Fatalf("keys and aggregates: %+v, %v", got, err)
	}
	got, err = s.Apply(Edit{RemoveTiers: []string{"1w"}})
	if err != nil || !reflect.DeepEqual(got.Tiers, []Tier{{"30d", "1d"}}) {
		t.Fatalf("remove 1w (the 7d tier): %+v, %v", got.Tiers, err)
	}
	if _, err := s.Apply(Edit{RemoveTiers: []string{"3d"}}); err == nil || !strings.Contains(err.Error(), "7d:1h, 30d:1d") {
		t.Fatalf("removing a missing tier: %v", err)
	}
	got, err = s.Apply(Edit{Replace: true, Bucket: "1h", Keys: []string{"service"}})
	if err != nil || got.Bucket != "1h" || len(got.Aggregates) != 0 || len(got.Tiers) != 0 {
		t.Fatalf("replace: %+v, %v", got, err)
	}
	if l := (Spec{}).Lines(); l != nil {
		t.Fatalf("an empty specification has lines: %q", l)
	}
}
