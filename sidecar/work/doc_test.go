package work

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var backticked = regexp.MustCompile("`([a-z_]+)`")

// firstCells returns the names in backticks in the first cell of section's table rows.
func firstCells(section string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(strings.Split(line, "|")[1], -1) {
			out[m[1]] = true
		}
	}
	return out
}

func topNames(types ...reflect.Type) map[string]bool {
	out := map[string]bool{}
	for _, typ := range types {
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out[name] = true
		}
	}
	return out
}

// section returns the text of doc from heading start to the next heading of its level.
func section(t *testing.T, doc, start string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+start)
	if i < 0 {
		t.Fatalf("docs/format/bin-lease-messages.md has no %q", start)
	}
	rest := doc[i+1+len(start):]
	if j := strings.Index(rest, "\n## "); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestFormatDocInStep: docs/format/bin-lease-messages.md has a row for every JSON field of each
// message, a lease and a job, in its section, and no row for a field they lack; the fields of a
// job's inputs and metadata are named in the job's section; the kind bytes agree.
func TestFormatDocInStep(t *testing.T) {
	raw, err := os.ReadFile("../../docs/format/bin-lease-messages.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, c := range []struct {
		heading string
		want    map[string]bool
	}{
		{"## Worker messages", topNames(reflect.TypeFor[WorkerMessage]())},
		{"## Owner messages", topNames(reflect.TypeFor[OwnerMessage](), reflect.TypeFor[Grant]())},
		{"## Job", topNames(reflect.TypeFor[Job]())},
	} {
		documented := firstCells(section(t, doc, c.heading))
		for name := range c.want {
			if !documented[name] {
				t.Errorf("%s: field %q has no row", c.heading, name)
			}
		}
		for name := range documented {
			if !c.want[name] {
				t.Errorf("%s documents field %q, which the code lacks", c.heading, name)
			}
		}
	}
	job := section(t, doc, "## Job")
	for name := range topNames(reflect.TypeFor[Input](), reflect.TypeFor[Metadata](), reflect.TypeFor[Fold](),
		reflect.TypeFor[FoldAggregate](), reflect.TypeFor[FoldTier]()) {
		if !strings.Contains(job, "`"+name+"`") {
			t.Errorf("## Job does not name the field %q", name)
		}
	}
	if !strings.Contains(doc, "| `W` (0x57) |") || !strings.Contains(doc, "| `L` (0x4C) |") || KindWorker != 'W' || KindOwner != 'L' {
		t.Error("the kind bytes of the page and the code differ")
	}
}
