package search

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestCompileRefusesBadInput: every refusal names the flag and the value at fault.
func TestCompileRefusesBadInput(t *testing.T) {
	sc, err := table.ArrowSchemaToIcebergWithFreshIDs(walgen.EventsSchema, false)
	if err != nil {
		t.Fatal(err)
	}
	empty, phrase := "", "two words"
	for _, c := range []struct {
		q    Query
		want string
	}{
		{Query{Where: []rows.Condition{{Column: "nosuch", Values: []string{"x"}}}}, `--where column "nosuch": the table has no such column; columns: timestamp, service`},
		{Query{Where: []rows.Condition{{Column: "attributes", Values: []string{"x"}}}}, `--where column "attributes" has type map`},
		{Query{Where: []rows.Condition{{Column: "timestamp", Values: []string{"x"}}}}, `bound the timestamp with --from/--to`},
		{Query{Columns: []string{"nosuch"}}, `--columns "nosuch": the table has no such column`},
		{Query{From: "yesterday"}, `--from "yesterday": accepted: RFC 3339`},
		{Query{To: "2026-11-29T10:00:00"}, `--to "2026-11-29T10:00:00"`},
		{Query{From: "2026-11-29T10:00:00.0000001Z"}, `at most 6 fractional digits`},
		{Query{From: "2026-11-30", To: "2026-11-29"}, `--from 2026-11-30 is not before --to 2026-11-29`},
		{Query{Contains: &empty}, `--contains "": an empty substring`},
		{Query{Token: &phrase}, `--token "two words": not a single token`},
		{Query{Limit: -1}, `--limit -1`},
	} {
		_, err := compile(c.q, sc, lake.TimestampColumn, "raw")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error containing %q", c.q, err, c.want)
		}
	}
	if _, err := compile(Query{Where: []rows.Condition{{Column: "service", Values: []string{"api"}}}}, sc, lake.TimestampColumn, "raw"); err != nil {
		t.Fatal(err)
	}
}

func TestContainsToken(t *testing.T) {
	for _, c := range []struct {
		s, tok string
		want   bool
	}{
		{"GET /api/v1 status=200", "api", true},
		{"GET /api/v1 status=200", "ap", false},
		{"GET /api/v1 status=200", "200", true},
		{"apiapi api", "api", true},
		{"apiapi", "api", false},
		{"user=ivan_2", "ivan", false},
		{"user=ivan_2", "ivan_2", true},
		{"", "a", false},
		{"a b", "a b", false},
	} {
		if got := index.ContainsToken(c.s, c.tok); got != c.want {
			t.Errorf("ContainsToken(%q, %q) = %v", c.s, c.tok, got)
		}
	}
}
