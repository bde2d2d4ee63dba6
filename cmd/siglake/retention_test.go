package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siglake/siglake/sidecar/retention"
)

// TestRetentionCommand: bad input is refused with the input named and nothing written; a dry
// run writes nothing; set stores the policy and show prints it.
func TestRetentionCommand(t *testing.T) {
	dir := t.TempDir()
	wal, cat, wh := filepath.Join(dir, "wal"), "sqlite:"+filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse")
	if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "2000"); r.code != 0 {
		t.Fatalf("walgen: %d %s", r.code, r.stderr)
	}
	if r := siglake(t, "compactor", "--once", "--wal-dir", wal, "--catalog", cat, "--warehouse", wh, "--http-addr", "127.0.0.1:0"); r.code != 0 {
		t.Fatalf("compactor --once: %d %s", r.code, r.stderr)
	}
	lakeArgs := []string{"--catalog", cat, "--warehouse", wh}
	set := func(args ...string) result {
		return siglake(t, append(append([]string{"retention", "set", "events"}, args...), lakeArgs...)...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--period", "12h"}, "--period"},
		{[]string{"--period", "thirty"}, "--period"},
		{[]string{"--rule", "nope=x:3d"}, `column "nope"`},
		{[]string{"--rule", "severity=debug"}, "--rule"},
		{[]string{"--rule", "severity=debug:3m"}, "--rule period"},
		{[]string{"--rule", "severity=debug:3d:high"}, "priority"},
		{[]string{}, "give --period"},
	} {
		r := set(c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("retention set %v: exit %d, stderr %q; want an error naming %q", c.args, r.code, head(r.stderr), c.want)
		}
	}
	show := func() []retention.Report {
		r := siglake(t, append([]string{"retention", "show", "events", "--json"}, lakeArgs...)...)
		if r.code != 0 {
			t.Fatalf("retention show: %d %s", r.code, r.stderr)
		}
		var reps []retention.Report
		if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil || len(reps) != 1 {
			t.Fatalf("retention show --json: %v: %s", err, r.stdout)
		}
		return reps
	}
	if p := show()[0].Policy; p != "period 0 (process default)" {
		t.Fatalf("before any set (and after refused ones) the policy is %q", p)
	}
	if r := set("--period", "30d", "--rule", "severity=debug,trace:3d", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "dry run: nothing written") {
		t.Fatalf("dry run: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if p := show()[0].Policy; p != "period 0 (process default)" {
		t.Fatalf("the dry run wrote the policy: %q", p)
	}
	if r := set("--period", "30d", "--rule", "severity=debug,trace&service=api:3d:5"); r.code != 0 {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	rep := show()[0]
	if !strings.Contains(rep.Policy, "period 30d; rule 1: severity IN (\"debug\", \"trace\") AND service = \"api\" keeps 3d (priority 5)") || len(rep.Classes) != 2 {
		t.Fatalf("stored policy: %q, classes %+v", rep.Policy, rep.Classes)
	}
	// The operator command prints the fingerprint /debug/status shows in place of the values.
	if fp := rep.Classes[0].Fingerprint; len(fp) != 12 || rep.Classes[1].Fingerprint != "" {
		t.Fatalf("classes %+v: want rule 1's fingerprint and none for the table period", rep.Classes)
	}
	if r := siglake(t, append([]string{"retention", "show"}, lakeArgs...)...); r.code != 0 || !strings.Contains(r.stdout, "table events") || !strings.Contains(r.stdout, "would remove") ||
		!strings.Contains(r.stdout, "["+rep.Classes[0].Fingerprint+"]") {
		t.Fatalf("retention show: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := set("--clear"); r.code != 0 || show()[0].Policy != "period 0 (process default)" {
		t.Fatalf("clear: %d %s", r.code, r.stderr)
	}
	if r := siglake(t, "retention", "prune"); r.code != 2 {
		t.Fatalf("retention prune: exit %d, want 2", r.code)
	}
}

// TestRetentionSetKeepsWhatItDoesNotName: `retention set --period` used to store a policy of that
// period alone, dropping the table's rules without a word. set keeps what it does not name, prints
// the change, replaces a rule by its conditions, removes one only when told (naming the rules when
// none matches), and drops the rest only with --replace.
func TestRetentionSetKeepsWhatItDoesNotName(t *testing.T) {
	dir := demoLakeDir(t)
	set := func(args ...string) result {
		return siglake(t, append([]string{"retention", "set", "events", "--dir", dir}, args...)...)
	}
	policy := func() string {
		r := siglake(t, "retention", "show", "events", "--json", "--dir", dir)
		var reps []retention.Report
		if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil || len(reps) != 1 {
			t.Fatalf("retention show --json: %v: %s%s", err, r.stdout, r.stderr)
		}
		return reps[0].Policy
	}
	if r := set("--period", "30d", "--rule", "severity=debug:3d", "--rule", "service=audit:0:10"); r.code != 0 {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	r := set("--period", "0")
	if r.code != 0 {
		t.Fatalf("set --period 0: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"  - period 30d\n", "  + period 0\n", "    rule severity=debug keeps 3d\n", "    rule service=audit keeps 0 (priority 10)\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("set --period 0 does not show %q:\n%s", want, r.stdout)
		}
	}
	if p := policy(); p != `period 0; rule 1: severity = "debug" keeps 3d; rule 2: service = "audit" keeps 0 (priority 10)` {
		t.Fatalf("set --period 0 dropped the rules: %q", p)
	}
	// A rule with the same conditions replaces the stored one; a new one is added.
	r = set("--rule", "severity=debug:7d", "--rule", "host=a&service=api:2d")
	if r.code != 0 || !strings.Contains(r.stdout, "  - rule severity=debug keeps 3d\n") || !strings.Contains(r.stdout, "  + rule severity=debug keeps 7d\n") {
		t.Fatalf("set --rule: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if p := policy(); !strings.Contains(p, `rule 1: severity = "debug" keeps 7d; rule 2: service = "audit"`) || !strings.Contains(p, "rule 3: host") {
		t.Fatalf("after a replaced and an added rule: %q", p)
	}
	// Removal by conditions, in any order; a rule that is not there is named with the ones that are.
	if r := set("--remove-rule", "service=api&host=a"); r.code != 0 || !strings.Contains(r.stdout, "  - rule host=a&service=api keeps 2d") {
		t.Fatalf("remove-rule: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := set("--remove-rule", "severity=info"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "severity=debug, service=audit") {
		t.Fatalf("remove-rule of a missing rule: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// --replace drops what the command does not give.
	if r := set("--replace", "--period", "60d"); r.code != 0 || !strings.Contains(r.stdout, "  - rule service=audit keeps 0 (priority 10)") {
		t.Fatalf("replace: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if p := policy(); p != "period 60d" {
		t.Fatalf("after --replace: %q", p)
	}
	// default: the process default period (a policy left empty is removed).
	if r := set("--period", "default"); r.code != 0 || !strings.Contains(r.stdout, "  + period 0 (process default)") || policy() != "period 0 (process default)" {
		t.Fatalf("--period default: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := set("--period", "60d"); r.code != 0 {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	// A dry run shows the change and writes nothing.
	if r := set("--period", "90d", "--dry-run"); r.code != 0 || !strings.Contains(r.stdout, "  + period 90d") || policy() != "period 60d" {
		t.Fatalf("dry run: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
