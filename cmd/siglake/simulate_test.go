package main

import (
	"strings"
	"testing"
)

// TestSimulateProgress: simulate shows its progress on stderr with --progress (by default only
// when stderr is a terminal, which a pipe is not), and stdout keeps only the results.
func TestSimulateProgress(t *testing.T) {
	args := []string{"simulate", "--duration", "1h", "--compare=false", "--ingest-mbps", "5", "--pods", "4"}
	r := siglake(t, append(args, "--progress")...)
	if r.code != 0 || !strings.Contains(r.stderr, "simulating leveled: 1h0m0s of 1h0m0s simulated (100%)") || strings.Contains(r.stdout, "simulating") {
		t.Fatalf("simulate --progress: exit %d\nstdout:\n%s\nstderr:\n%q", r.code, r.stdout, r.stderr)
	}
	if r := siglake(t, args...); r.code != 0 || strings.Contains(r.stderr, "simulating") {
		t.Fatalf("simulate into a pipe: exit %d\nstderr:\n%q", r.code, r.stderr)
	}
}
