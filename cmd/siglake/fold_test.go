package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestFoldCommand: walgen writes the built-in rollup; bad specifications are refused with the
// property and the column named and nothing stored; set stores one and show prints it.
func TestFoldCommand(t *testing.T) {
	dir := t.TempDir()
	wal, cat, wh := filepath.Join(dir, "wal"), "sqlite:"+filepath.Join(dir, "catalog.db"), filepath.Join(dir, "warehouse")
	if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "3000", "--rollup", walgen.RollupTable); r.code != 0 || !strings.Contains(r.stdout, "partial rollup rows") {
		t.Fatalf("walgen: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := siglake(t, "compactor", "--once", "--wal-dir", wal, "--catalog", cat, "--warehouse", wh, "--http-addr", "127.0.0.1:0"); r.code != 0 {
		t.Fatalf("compactor --once: %d %s", r.code, r.stderr)
	}
	lakeArgs := []string{"--catalog", cat, "--warehouse", wh}
	set := func(args ...string) result {
		return siglake(t, append(append([]string{"fold", "set", walgen.RollupTable}, args...), lakeArgs...)...)
	}
	good := []string{"--bucket", "1m", "--key", "service", "--key", "severity", "--agg", "events=count", "--agg", "bytes=sum", "--agg", "max_bytes=max"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{good[:len(good)-2], `siglake.fold: column "max_bytes" is neither`},
		{append(append([]string{}, good[:len(good)-2]...), "--agg", "max_bytes=count_distinct"), `column "max_bytes": count_distinct: distinct counts do not fold`},
		{append(append([]string{}, good...), "--key", "raw"), `column "raw": the table has no such column`},
		{append([]string{"--bucket", "7m"}, good[2:]...), `bucket "7m"`},
		{append(append([]string{}, good...), "--tier", "7d"), `--tier "7d"`},
		{append(append([]string{}, good...), "--tier", "7d:1h", "--tier", "30d:90m"), "tier 2: bucket 90m"},
		{[]string{"--key", "service"}, "--bucket is required"},
	} {
		r := set(c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("fold set %v: exit %d, stderr %q; want an error naming %q", c.args, r.code, head(r.stderr), c.want)
		}
	}
	show := func() []foldReport {
		r := siglake(t, append([]string{"fold", "show", "--json"}, lakeArgs...)...)
		if r.code != 0 {
			t.Fatalf("fold show: %d %s", r.code, r.stderr)
		}
		var reps []foldReport
		if err := json.Unmarshal([]byte(r.stdout), &reps); err != nil {
			t.Fatalf("fold show --json: %v: %s", err, r.stdout)
		}
		return reps
	}
	if reps := show(); len(reps) != 0 {
		t.Fatalf("refused specifications were stored: %+v", reps)
	}
	if r := set(append(good, "--tier", "7d:1h")...); r.code != 0 || !strings.Contains(r.stdout, "stored the fold specification") {
		t.Fatalf("fold set: %d %s %s", r.code, r.stdout, r.stderr)
	}
	reps := show()
	if len(reps) != 1 || reps[0].Name != walgen.RollupTable || reps[0].Spec == nil || len(reps[0].Spec.Tiers) != 1 {
		t.Fatalf("fold show: %+v", reps)
	}
	if r := set("--clear"); r.code != 0 {
		t.Fatalf("fold set --clear: %d %s", r.code, r.stderr)
	}
	if reps := show(); len(reps) != 0 {
		t.Fatalf("after --clear: %+v", reps)
	}
}

// TestFoldSetKeepsWhatItDoesNotName: `fold set` used to store only what it was given, dropping
// the stored tiers without a word. set keeps what it does not name, prints the change, replaces
// a tier by its age, removes one only when told, and drops the rest only with --replace.
func TestFoldSetKeepsWhatItDoesNotName(t *testing.T) {
	dir := t.TempDir()
	wal := filepath.Join(dir, "wal")
	if r := siglake(t, "walgen", "--wal-dir", wal, "--rows", "2000", "--rollup", walgen.RollupTable); r.code != 0 {
		t.Fatalf("walgen: %d %s", r.code, r.stderr)
	}
	cat, wh := demoLake(dir)
	if r := siglake(t, "compactor", "--once", "--wal-dir", wal, "--catalog", cat, "--warehouse", wh, "--http-addr", "127.0.0.1:0"); r.code != 0 {
		t.Fatalf("compactor --once: %d %s", r.code, r.stderr)
	}
	set := func(args ...string) result {
		return siglake(t, append([]string{"fold", "set", walgen.RollupTable, "--dir", dir}, args...)...)
	}
	spec := func() string {
		r := siglake(t, "fold", "show", walgen.RollupTable, "--dir", dir)
		if r.code != 0 {
			t.Fatalf("fold show: %d %s", r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	if r := set("--bucket", "1m", "--key", "service", "--key", "severity", "--agg", "events=count", "--agg", "bytes=sum",
		"--agg", "max_bytes=max", "--tier", "7d:1h", "--tier", "30d:1d"); r.code != 0 {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	r := set("--bucket", "5m")
	if r.code != 0 {
		t.Fatalf("set --bucket 5m: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"  - bucket 1m\n", "  + bucket 5m\n", "    tier 7d:1h\n", "    tier 30d:1d\n", "    agg events=count\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("set --bucket 5m does not show %q:\n%s", want, r.stdout)
		}
	}
	if s := spec(); !strings.Contains(s, "bucket 5m by service, severity") || !strings.Contains(s, "after 7d: 1h buckets; after 30d: 1d buckets") {
		t.Fatalf("set --bucket dropped what it did not name: %s", s)
	}
	// A tier of the same age (1w is 7d) replaces the stored one; a new one goes in age order.
	if r := set("--tier", "1w:2h", "--tier", "14d:6h"); r.code != 0 || !strings.Contains(r.stdout, "  - tier 7d:1h\n") {
		t.Fatalf("set --tier: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s := spec(); !strings.Contains(s, "after 1w: 2h buckets; after 14d: 6h buckets; after 30d: 1d buckets") {
		t.Fatalf("after a replaced and an added tier: %s", s)
	}
	if r := set("--remove-tier", "14d"); r.code != 0 || !strings.Contains(r.stdout, "  - tier 14d:6h\n") {
		t.Fatalf("remove-tier: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := set("--remove-tier", "3d"); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "1w:2h, 30d:1d") {
		t.Fatalf("remove-tier of a missing tier: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := set("--replace", "--bucket", "1m", "--key", "service", "--key", "severity", "--agg", "events=count", "--agg", "bytes=sum", "--agg", "max_bytes=max"); r.code != 0 {
		t.Fatalf("replace: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if s := spec(); strings.Contains(s, "after") {
		t.Fatalf("--replace kept the tiers: %s", s)
	}
}

// TestConcurrentFoldEditsKeepBoth: another `fold set` committed between this edit's read and its
// write is kept: the later commit conflicts and its edit runs again on the other's result.
func TestConcurrentFoldEditsKeepBoth(t *testing.T) {
	dir := t.TempDir()
	if r := siglake(t, "walgen", "--wal-dir", filepath.Join(dir, "wal"), "--rows", "2000", "--rollup", walgen.RollupTable); r.code != 0 {
		t.Fatalf("walgen: %d %s", r.code, r.stderr)
	}
	cat, wh := demoLake(dir)
	if r := siglake(t, "compactor", "--once", "--wal-dir", filepath.Join(dir, "wal"), "--catalog", cat, "--warehouse", wh, "--http-addr", "127.0.0.1:0"); r.code != 0 {
		t.Fatalf("compactor --once: %d %s", r.code, r.stderr)
	}
	if r := siglake(t, "fold", "set", walgen.RollupTable, "--dir", dir, "--bucket", "1m", "--key", "service", "--key", "severity",
		"--agg", "events=count", "--agg", "bytes=sum", "--agg", "max_bytes=max"); r.code != 0 {
		t.Fatalf("set: %d %s", r.code, r.stderr)
	}
	ctx := context.Background()
	l, err := lake.Open(ctx, lake.Config{Catalog: cat, Warehouse: wh, Namespace: "siglake"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tier := func(after, bucket string) func(fold.Spec, error) (fold.Spec, error) {
		return func(cur fold.Spec, err error) (fold.Spec, error) {
			if err != nil {
				return fold.Spec{}, err
			}
			return cur.Apply(fold.Edit{Tiers: []fold.Tier{{After: after, Bucket: bucket}}})
		}
	}
	calls := 0
	before, after, err := fold.Update(ctx, l, walgen.RollupTable, func(cur fold.Spec, err error) (fold.Spec, error) {
		calls++
		if calls == 1 { // another operator's edit, from another process (one Lake's edits of a table take turns)
			other, err := lake.Open(ctx, lake.Config{Catalog: cat, Warehouse: wh, Namespace: "siglake"})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			if _, _, err := fold.Update(ctx, other, walgen.RollupTable, tier("30d", "1d")); err != nil {
				t.Fatal(err)
			}
		}
		return tier("7d", "1h")(cur, err)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Tiers) != 1 || len(after.Tiers) != 2 || calls != 2 {
		t.Fatalf("replaced %+v, stored %+v after %d edits: want the other edit's tier kept", before, after, calls)
	}
	if r := siglake(t, "fold", "show", walgen.RollupTable, "--dir", dir); !strings.Contains(r.stdout, "30d") || !strings.Contains(r.stdout, "7d") {
		t.Fatalf("fold show after two edits:\n%s", r.stdout)
	}
}
