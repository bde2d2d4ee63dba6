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

// TestSimulateWorkers: --workers is in simulate's help, runs the table's bins on that many
// rewriters (the report says how many and the JSON carries it), and a count under 1 is refused
// naming the flag.
func TestSimulateWorkers(t *testing.T) {
	if r := siglake(t, "simulate", "--help"); r.code != 0 || !strings.Contains(r.stdout, "-workers int") {
		t.Fatalf("simulate --help: exit %d, no --workers:\n%s", r.code, r.stdout)
	}
	args := []string{"simulate", "--duration", "30m", "--compare=false", "--ingest-mbps", "5", "--pods", "4", "--workers", "3"}
	if r := siglake(t, args...); r.code != 0 || !strings.Contains(r.stdout, "on 3 worker(s)") || !strings.Contains(r.stdout, "EDGE DEPTH P50") {
		t.Fatalf("simulate --workers 3: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := siglake(t, append(args, "--json")...); r.code != 0 || !strings.Contains(r.stdout, `"Workers":3`) {
		t.Fatalf("simulate --workers 3 --json: exit %d\nstdout:\n%s", r.code, r.stdout)
	}
	if r := siglake(t, "simulate", "--workers", "0", "--duration", "1m", "--compare=false"); r.code == 0 || !strings.Contains(r.stderr, "--workers") {
		t.Fatalf("simulate --workers 0: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
