package retention

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/rows"
)

func where(col string, vs ...string) []rows.Condition {
	return []rows.Condition{{Column: col, Values: vs}}
}

// TestPrecedence: a row takes the highest-priority rule that matches it, ties take the shortest
// period, a rule kept for ever shields its rows, and rows no rule matches keep the table period.
// Each case is evaluated by the merge's row filter, the code that drops rows in rewrites and
// the drain.
func TestPrecedence(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	debug3 := Rule{Where: where("severity", "debug"), Period: "3d"}
	api10 := Rule{Where: where("service", "api"), Period: "10d"}
	type row struct {
		service, severity string
		age               time.Duration
		dropped           bool
	}
	cases := []struct {
		name   string
		policy Policy
		rows   []row
	}{
		{"table period only", Policy{Period: "30d"}, []row{
			{"api", "info", 29 * day, false}, {"api", "info", 31 * day, true}, {"api", "debug", 31 * day, true}}},
		{"a shorter rule", Policy{Period: "30d", Rules: []Rule{debug3}}, []row{
			{"api", "debug", 4 * day, true}, {"api", "debug", 2 * day, false}, {"api", "info", 4 * day, false}, {"api", "info", 31 * day, true}}},
		{"a longer rule extends", Policy{Period: "3d", Rules: []Rule{api10}}, []row{
			{"api", "info", 5 * day, false}, {"api", "info", 11 * day, true}, {"cart", "info", 5 * day, true}}},
		{"forever rule", Policy{Period: "30d", Rules: []Rule{{Where: where("severity", "error"), Period: "0"}}}, []row{
			{"api", "error", 400 * day, false}, {"api", "info", 31 * day, true}}},
		{"table kept for ever, rule drops", Policy{Period: "0", Rules: []Rule{debug3}}, []row{
			{"api", "debug", 4 * day, true}, {"api", "info", 400 * day, false}}},
		{"tie: shortest period wins", Policy{Period: "30d", Rules: []Rule{api10, debug3}}, []row{
			{"api", "debug", 5 * day, true}, {"api", "info", 5 * day, false}, {"cart", "debug", 5 * day, true}}},
		{"priority beats period", Policy{Period: "30d", Rules: []Rule{{Where: api10.Where, Period: "10d", Priority: 5}, debug3}}, []row{
			{"api", "debug", 5 * day, false}, {"api", "debug", 11 * day, true}, {"cart", "debug", 5 * day, true}}},
		{"tie with for ever: the finite period wins", Policy{Period: "30d", Rules: []Rule{{Where: where("severity", "debug"), Period: "0"}, {Where: where("service", "api"), Period: "3d"}}}, []row{
			{"api", "debug", 5 * day, true}, {"cart", "debug", 400 * day, false}}},
	}
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
		{Name: "service", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "severity", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
			defer b.Release()
			at := func(i int) int64 { return now.Add(-c.rows[i].age).UnixMicro() + int64(i) } // distinct per row
			for i, r := range c.rows {
				b.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(at(i)))
				b.Field(1).(*array.StringBuilder).Append(r.service)
				b.Field(2).(*array.StringBuilder).Append(r.severity)
			}
			rec := b.NewRecordBatch()
			defer rec.Release()
			cs := c.policy.Classes(now, 0)
			out, _, err := merge.FilterRecord(rec, "timestamp", RowFilter(cs), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer out.Release()
			kept := map[int64]bool{}
			for i := 0; i < int(out.NumRows()); i++ {
				kept[int64(out.Column(0).(*array.Timestamp).Value(i))] = true
			}
			for i, r := range c.rows {
				ts := at(i)
				if kept[ts] == r.dropped {
					t.Errorf("row %d (%s/%s, %s old): dropped=%v, want %v (classes %v)", i, r.service, r.severity, r.age, !kept[ts], r.dropped, names(cs))
				}
			}
		})
	}
}

func names(cs []Class) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+" "+FormatPeriod(c.Period))
	}
	return out
}

// TestParsePeriod: days, weeks, hours and 0 are read; below a day, negative and unknown units
// are refused with the input named.
func TestParsePeriod(t *testing.T) {
	for in, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "36h": 36 * time.Hour, "0": 0, "forever": 0, "1.5d": 36 * time.Hour} {
		got, err := ParsePeriod("--period", in)
		if err != nil || got != want {
			t.Errorf("ParsePeriod(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"12h", "30", "-3d", "3y", "", "d"} {
		_, err := ParsePeriod("--period", in)
		if err == nil || !strings.Contains(err.Error(), "--period") {
			t.Errorf("ParsePeriod(%q) = %v, want an error naming --period", in, err)
		}
	}
	// NaN and values past time.Duration's range once wrapped to a negative period, refused only as
	// "below the minimum"; now as what they are.
	for _, in := range []string{"nand", "NaNd", "20000w", "1e5w", "Infd", "0d"} {
		_, err := ParsePeriod("--period", in)
		if err == nil || !strings.Contains(err.Error(), "--period") || !strings.Contains(err.Error(), "accepted:") {
			t.Errorf("ParsePeriod(%q) = %v, want an error naming --period and what is accepted", in, err)
		}
	}
	if FormatPeriod(30*24*time.Hour) != "30d" || FormatPeriod(36*time.Hour) != "36h0m0s" || FormatPeriod(0) != "0" {
		t.Error("FormatPeriod")
	}
}

// TestValidate: unknown columns, timestamp conditions, rules without conditions and periods
// below the minimum are refused, naming what is wrong.
func TestValidate(t *testing.T) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "severity", Type: iceberg.PrimitiveTypes.String})
	for _, c := range []struct {
		p    Policy
		want string
	}{
		{Policy{Period: "12h"}, "below the minimum"},
		{Policy{Period: "30d", Rules: []Rule{{Period: "3d"}}}, "at least one condition"},
		{Policy{Period: "30d", Rules: []Rule{{Where: where("sev", "debug"), Period: "3d"}}}, `column "sev"`},
		{Policy{Period: "30d", Rules: []Rule{{Where: where("timestamp", "1"), Period: "3d"}}}, "timestamp"},
		{Policy{Period: "30d", Rules: []Rule{{Where: where("severity", "debug"), Period: "3m"}}}, "rule 1 period"},
	} {
		if err := c.p.Validate(sc, "timestamp"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error with %q", c.p, err, c.want)
		}
	}
	if err := (Policy{Period: "30d", Rules: []Rule{{Where: where("severity", "debug"), Period: "3d"}}}).Validate(sc, "timestamp"); err != nil {
		t.Error(err)
	}
	if _, _, err := PolicyProperty.Read(iceberg.Properties{Property: `{"version":1,"period":"30d","rulez":[]}`}); err == nil {
		t.Error("an unknown field must be refused, not ignored (a typo would keep rows nobody meant to keep)")
	}
}

// TestFingerprint: the fingerprint status pages show in place of a rule's values is the same for
// the same conditions in any order, differs for other values or another table (the key), and
// holds no value.
func TestFingerprint(t *testing.T) {
	const key = "7d4c1e0a-0000-4000-8000-000000000001"
	a := Rule{Where: []rows.Condition{{Column: "host", Values: []string{"alice@example.com", "bob@example.com"}}, {Column: "service", Values: []string{"api"}}}}
	b := Rule{Where: []rows.Condition{{Column: "service", Values: []string{"api"}}, {Column: "host", Values: []string{"bob@example.com", "alice@example.com"}}}}
	c := Rule{Where: []rows.Condition{{Column: "host", Values: []string{"carol@example.com", "bob@example.com"}}, {Column: "service", Values: []string{"api"}}}}
	fa := a.Fingerprint(key)
	if len(fa) != 12 || fa != b.Fingerprint(key) {
		t.Fatalf("fingerprints %q and %q of the same conditions", fa, b.Fingerprint(key))
	}
	if fa == c.Fingerprint(key) || fa == a.Fingerprint("another table") {
		t.Fatalf("fingerprint %q does not tell other values or another table apart", fa)
	}
	if s := a.Shape(); s != "host (2 values) AND service (1 value)" {
		t.Fatalf("shape %q", s)
	}
	if p := (Policy{Period: "30d", Rules: []Rule{a}}).Public(0, key); strings.Contains(p, "alice") || !strings.Contains(p, fa) {
		t.Fatalf("public policy %q", p)
	}
}

// TestPublicErrorHidesValues: a rule whose value does not parse as its column's type is
// reported to logs and status pages by its columns; the cause with the value stays in the error
// siglake retention show prints.
func TestPublicErrorHidesValues(t *testing.T) {
	sc := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "user_id", Type: iceberg.PrimitiveTypes.Int64})
	p := Policy{Rules: []Rule{{Where: where("user_id", "alice@example.com"), Period: "1d"}}}
	err := p.Validate(sc, "timestamp")
	if err == nil || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("Validate: %v, want the cause with the value", err)
	}
	if pub := PublicError(err); strings.Contains(pub, "alice") || !strings.Contains(pub, "rule 1 (user_id (1 value))") {
		t.Fatalf("PublicError: %q", pub)
	}
}
