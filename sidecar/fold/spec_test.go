package fold

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rows"
)

func rollupSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "service", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "severity", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "events", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 5, Name: "bytes", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 6, Name: "latency_max", Type: iceberg.PrimitiveTypes.Float64},
	)
}

func goodSpec() Spec {
	return Spec{Bucket: "1m", Keys: []string{"service", "severity"},
		Aggregates: []Aggregate{{"events", "count"}, {"bytes", "sum"}, {"latency_max", "max"}},
		Tiers:      []Tier{{After: "7d", Bucket: "1h"}, {After: "30d", Bucket: "1d"}}}
}

func TestValidate(t *testing.T) {
	if err := goodSpec().Validate(rollupSchema()); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Aggregates = s.Aggregates[:2] }, `column "latency_max" is neither`},
		{func(s *Spec) { s.Aggregates[0].Func = "count_distinct" }, `column "events": count_distinct: distinct counts do not fold`},
		{func(s *Spec) { s.Aggregates[2].Func = "avg" }, `column "latency_max": function "avg"`},
		{func(s *Spec) { s.Aggregates[2].Func = "count" }, `column "latency_max": type float64 does not hold a count`},
		{func(s *Spec) { s.Keys = append(s.Keys, "nope") }, `column "nope": the table has no such column`},
		{func(s *Spec) { s.Keys = nil }, "no key columns"},
		{func(s *Spec) { s.Bucket = "7m" }, `bucket "7m": accepted: a duration that divides a day`},
		{func(s *Spec) { s.Tiers[1].Bucket = "90m" }, "tier 2: bucket 90m is not a coarser multiple of 1h0m0s"},
		{func(s *Spec) { s.Tiers[1].After = "3d" }, "tier 2: after 3d is not older"},
		{func(s *Spec) { s.Keys = []string{"service", "severity", "events"} }, `fold column "events": both key and aggregated`},
	}
	for _, c := range cases {
		s := goodSpec()
		s.Aggregates = append([]Aggregate(nil), s.Aggregates...)
		s.Tiers = append([]Tier(nil), s.Tiers...)
		c.edit(&s)
		err := s.Validate(rollupSchema())
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), Property) {
			t.Errorf("got %v, want an error naming %s and %q", err, Property, c.want)
		}
	}
}

func TestOfRoundTrip(t *testing.T) {
	v, err := goodSpec().Encode()
	if err != nil {
		t.Fatal(err)
	}
	s, ok, err := SpecProperty.Read(iceberg.Properties{Property: v})
	if !ok || err != nil || s.Describe() != goodSpec().Describe() {
		t.Fatalf("round trip: %+v %v %v", s, ok, err)
	}
	if _, _, err := SpecProperty.Read(iceberg.Properties{Property: `{"version":1,"bucket":"1m","oops":1}`}); err == nil || !strings.Contains(err.Error(), Property) {
		t.Fatalf("unknown field: %v", err)
	}
	if _, _, err := SpecProperty.Read(iceberg.Properties{Property: `{"version":9}`}); err == nil {
		t.Fatal("a newer version was read")
	}
}

// TestCutoffs: cutoffs start a bucket of their tier, youngest tier first, and move with the clock.
func TestCutoffs(t *testing.T) {
	now := time.Date(2026, 3, 10, 13, 27, 5, 0, time.UTC)
	c, err := goodSpec().Cutoffs(now)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Time{time.Date(2026, 3, 3, 13, 0, 0, 0, time.UTC), time.Date(2026, 2, 8, 0, 0, 0, 0, time.UTC)}
	for i, w := range want {
		if got := time.UnixMicro(c[i]).UTC(); !got.Equal(w) {
			t.Fatalf("cutoff %d: %s, want %s", i, got, w)
		}
	}
	f, err := goodSpec().MergeFold(now, 0)
	if err != nil || len(f.Tiers) != 2 || f.Tiers[0].Before != c[1] || f.Tiers[0].Bucket != int64(24*time.Hour/time.Microsecond) {
		t.Fatalf("merge fold tiers %+v (%v): want the oldest cutoff first", f.Tiers, err)
	}
}

// TestCheckDelete: on a rollup a deletion request tests key columns only; a stored specification
// that does not read gives its own error, not an empty key list.
func TestCheckDelete(t *testing.T) {
	v, err := goodSpec().Encode()
	if err != nil {
		t.Fatal(err)
	}
	props := iceberg.Properties{Property: v}
	key := deletes.Request{ID: "r1", Where: []rows.Condition{{Column: "service", Values: []string{"api"}}}}
	agg := deletes.Request{ID: "r2", Where: []rows.Condition{{Column: "events", Values: []string{"1"}}}}
	if err := CheckDelete(props, key); err != nil {
		t.Fatal(err)
	}
	if err := CheckDelete(props, agg); err == nil || !strings.Contains(err.Error(), `column "events"`) || !strings.Contains(err.Error(), "service, severity") {
		t.Fatalf("request on an aggregated column: %v", err)
	}
	if err := CheckDelete(iceberg.Properties{}, agg); err != nil {
		t.Fatalf("not a rollup: %v", err)
	}
	err = CheckDelete(iceberg.Properties{Property: "{not json"}, key)
	if err == nil || !strings.Contains(err.Error(), "not a fold specification") || strings.Contains(err.Error(), "()") {
		t.Fatalf("bad stored specification: %v", err)
	}
}

// TestCheckRetentionAndExisting: retention rules on a rollup test key columns only, and a
// specification is refused over pending requests and rules that test other columns.
func TestCheckRetentionAndExisting(t *testing.T) {
	v, err := goodSpec().Encode()
	if err != nil {
		t.Fatal(err)
	}
	onBytes := retention.Policy{Period: "30d", Rules: []retention.Rule{{Where: []rows.Condition{{Column: "bytes", Values: []string{"0"}}}, Period: "7d"}}}
	if err := CheckRetention(iceberg.Properties{Property: v}, onBytes); err == nil || !strings.Contains(err.Error(), `column "bytes"`) {
		t.Fatalf("retention rule on an aggregated column: %v", err)
	}
	if err := CheckRetention(iceberg.Properties{}, onBytes); err != nil {
		t.Fatalf("not a rollup: %v", err)
	}
	pv, err := onBytes.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := goodSpec().checkExisting(iceberg.Properties{retention.Property: pv}); err == nil || !strings.Contains(err.Error(), "retention rule 1") {
		t.Fatalf("spec over a rule on an aggregated column: %v", err)
	}
	r := deletes.Request{Version: deletes.Version, ID: deletes.NewID(time.Now()), State: deletes.Pending,
		Where: []rows.Condition{{Column: "events", Values: []string{"1"}}}}
	rv, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	props := iceberg.Properties{deletes.Key(r.ID): rv}
	if err := goodSpec().checkExisting(props); err == nil || !strings.Contains(err.Error(), r.ID) {
		t.Fatalf("spec over a pending request on an aggregated column: %v", err)
	}
	r.State = deletes.Done
	rv, _ = r.Encode()
	if err := goodSpec().checkExisting(iceberg.Properties{deletes.Key(r.ID): rv}); err != nil {
		t.Fatalf("a done request does not hold the specification back: %v", err)
	}
}

// TestRetentionCutoffsOnBucketBoundaries: retention never removes a folded row whose bucket
// reaches past its cutoff (promise 10). Cutoffs fall on UTC midnight and every bucket a
// specification accepts divides a day, so each cutoff starts a bucket of every tier: a row
// stamped before it holds only events before it. Buckets that would break this (coarser than a
// day, not dividing one) are refused.
func TestRetentionCutoffsOnBucketBoundaries(t *testing.T) {
	for _, b := range []string{"2d", "7d", "7h", "50m", "25h"} {
		if _, err := ParseBucket("tier 1 bucket", b); err == nil {
			t.Fatalf("bucket %s accepted: it does not divide a day", b)
		}
	}
	var buckets []time.Duration
	for s := 1; s <= 86400; s++ {
		if d := time.Duration(s) * time.Second; day%d == 0 {
			if _, err := ParseBucket("bucket", d.String()); err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			buckets = append(buckets, d)
		}
	}
	p := retention.Policy{Period: "10d", Rules: []retention.Rule{{Where: []rows.Condition{{Column: "service", Values: []string{"api"}}}, Period: "36h"}}}
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	for _, off := range []time.Duration{0, 7*time.Minute + 13*time.Second, 11*time.Hour + 59*time.Minute, 13 * time.Hour} {
		now := base.Add(off)
		for _, c := range p.Classes(now, 30*day) {
			for _, b := range buckets {
				us := b.Microseconds()
				if *c.Cutoff%us != 0 {
					t.Fatalf("now %s, %s: cutoff %d is not a %s bucket boundary", now, c.Name, *c.Cutoff, b)
				}
				// The bucket of the last row the cutoff removes ends at or before it.
				last := *c.Cutoff - 1
				if start := last - last%us; start+us > *c.Cutoff {
					t.Fatalf("now %s, %s: a %s bucket at %d reaches past the cutoff %d", now, c.Name, b, start, *c.Cutoff)
				}
			}
		}
	}
}
