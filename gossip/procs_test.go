package gossip

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/gossip/lease"
)

// Members in child processes, so a test can SIGKILL one for real. The test
// binary re-executes itself with SIGLAKE_GOSSIP_CHILD set; the child starts
// one member, prints its address and runs until killed or until its stdin
// closes (the parent went away).

const childEnv = "SIGLAKE_GOSSIP_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

// runChild's spec is "profile|name|join".
func runChild(spec string) int {
	parts := strings.SplitN(spec, "|", 3)
	if len(parts) != 3 {
		fmt.Println("ERR bad spec", spec)
		return 2
	}
	mk := fastConfig
	if parts[0] == "default" {
		mk = prodConfig
	}
	c, err := Start(mk(parts[1], parts[2]), nil)
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("READY", c.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startChild starts a member named name in a child process joining join.
func startChild(t *testing.T, profile, name, join string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+profile+"|"+name+"|"+join)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "READY ") {
		t.Fatalf("child %s: %q %v", name, line, err)
	}
	return cmd
}

// sigkillFailover starts n-1 in-process members and one child process,
// waits until all agree, SIGKILLs the child and measures like failover.
func sigkillFailover(t *testing.T, profile string, n int, tables []string) (detect, acting time.Duration) {
	t.Helper()
	mk := fastConfig
	if profile == "default" {
		mk = prodConfig
	}
	tc := &testCluster{t: t, dead: map[string]bool{}}
	defer func() {
		for _, m := range tc.members {
			_ = m.Shutdown()
		}
	}()
	for i := range n - 1 {
		tc.add(mk, i)
	}
	victim := fmt.Sprintf("child-%02d", n-1)
	cmd := startChild(t, profile, victim, tc.seedAddr())
	tc.extra = []string{victim}
	tc.waitConverged(tables, 60*time.Second)
	time.Sleep(mk("x").SettlePeriod + 200*time.Millisecond)

	var moved, kept []string
	for _, tb := range tables {
		if lease.Owner(tb, tc.names()) == victim {
			moved = append(moved, tb)
		} else {
			kept = append(kept, tb)
		}
	}
	tc.assertOneOwnerEach(kept)
	if len(moved) == 0 {
		t.Fatalf("child %s owns none of %d tables", victim, len(tables))
	}
	// Before the kill, no in-process member may act on the child's tables.
	for tb, os := range tc.ownersNow(moved) {
		t.Fatalf("table %s owned by the child is also owned by %v", tb, os)
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	tc.extra = nil
	deadline := start.Add(90 * time.Second)
	for detect == 0 || acting == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no failover within 90s (detect %s acting %s)", detect, acting)
		}
		if detect == 0 {
			seen := true
			for _, m := range tc.live() {
				for _, tb := range moved {
					if o, _ := m.Owner(tb); o == victim {
						seen = false
					}
				}
			}
			if seen {
				detect = time.Since(start)
			}
		}
		if detect != 0 {
			owners := tc.ownersNow(moved)
			all := true
			for _, tb := range moved {
				if len(owners[tb]) != 1 {
					all = false
				}
			}
			if all {
				acting = time.Since(start)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	tc.waitConverged(tables, 10*time.Second)
	tc.assertOneOwnerEach(tables)
	return detect, acting
}

// A member process killed with SIGKILL loses its tables to the survivors
// within the fast-timing bound (5 s), and each goes to exactly one.
func TestClusterFailoverSIGKILL(t *testing.T) {
	detect, acting := sigkillFailover(t, "fast", 3, tableNames(100))
	t.Logf("SIGKILL of a child member: new owner seen by all after %s, acting after %s",
		detect.Round(time.Millisecond), acting.Round(time.Millisecond))
	if acting > raceSlowdown*5*time.Second {
		t.Fatalf("failover took %s, bound 5s", acting)
	}
}

// SIGLAKE_GOSSIP_BENCH=1 go test ./gossip/ -run TestBenchFailoverSIGKILL -v -count=1 -timeout 30m
func TestBenchFailoverSIGKILL(t *testing.T) {
	benchEnabled(t)
	runs := envInt("SIGLAKE_GOSSIP_BENCH_RUNS", 7)
	for _, profile := range []string{"default", "fast"} {
		for _, n := range []int{3, 10} {
			var detects, actings []time.Duration
			for r := range runs {
				d, a := sigkillFailover(t, profile, n, tableNames(200))
				detects, actings = append(detects, d), append(actings, a)
				t.Logf("%s n=%d run %d: detect %s acting %s", profile, n, r, d.Round(time.Millisecond), a.Round(time.Millisecond))
			}
			dm, dx := medianMax(detects)
			am, ax := medianMax(actings)
			t.Logf("RESULT SIGKILL failover %s timings, %d members, %d runs: detect median %s max %s; acting median %s max %s",
				profile, n, runs, dm.Round(time.Millisecond), dx.Round(time.Millisecond), am.Round(time.Millisecond), ax.Round(time.Millisecond))
		}
	}
}
