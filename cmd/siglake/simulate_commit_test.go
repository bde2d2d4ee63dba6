package main

import (
	"strings"
	"testing"
)

// TestSimulateGroupCommit: simulate --group-commit prints one row per pod count and mode, and
// refuses a bad pod list.
func TestSimulateGroupCommit(t *testing.T) {
	r := siglake(t, "simulate", "--group-commit", "--pods", "4,8", "--duration", "1m")
	modes := map[string]int{}
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 11 {
			modes[f[1]]++
		}
	}
	if r.code != 0 || modes["direct"] != 2 || modes["group"] != 2 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := siglake(t, "simulate", "--group-commit", "--pods", "x"); r.code == 0 || !strings.Contains(r.stderr, "--pods") {
		t.Errorf("--pods x: exit %d, stderr %s", r.code, r.stderr)
	}
}
