package e2e

import (
	"math/rand/v2"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// TestCrashLoopExactlyOnce kills the real binary with SIGKILL at random moments while it drains,
// half of the kills right as a commit starts, then drains cleanly and checks that the table holds
// exactly the rows walgen sealed: same count, same multiset (order-independent fingerprint, so
// also no duplicates), read back through iceberg-go and, independently, DuckDB.
func TestCrashLoopExactlyOnce(t *testing.T) {
	kills := 24
	if os.Getenv("SIGLAKE_LONG") == "1" {
		kills = 200
	}
	crashLoop(t, newSite(t), kills)
}

// crashLoop is the crash loop on any site: it feeds walgen rows, SIGKILLs the compactor kills
// times (every other kill as a commit starts), drains cleanly and checks exactly-once through
// iceberg-go and DuckDB.
func crashLoop(t *testing.T, s *site, kills int) {
	rng := rand.New(rand.NewPCG(42, uint64(time.Now().UnixNano())))
	var want rowsum.Sum
	seed := 1
	feed := func(rows int) {
		r := s.walgen("pod-a", rows, seed)
		seed++
		want.Merge(r.Fingerprint)
	}
	feed(40000)

	duringCommit := 0
	for k := 0; k < kills; k++ {
		lines := make(chan string, 4096)
		cmd := s.compactor(lines, "--log-level", "debug")
		if k%2 == 0 {
			// Kill as a commit starts (plus a little jitter so some land inside it).
			deadline := time.After(10 * time.Second)
		wait:
			for {
				select {
				case l := <-lines:
					if strings.Contains(l, "committing batch") {
						duringCommit++
						time.Sleep(time.Duration(rng.IntN(15)) * time.Millisecond)
						break wait
					}
				case <-deadline:
					break wait
				}
			}
		} else {
			time.Sleep(time.Duration(50+rng.IntN(700)) * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		if segs, err := localwal.Scan(s.wal); err == nil && len(segs) < 10 {
			feed(15000)
		}
	}
	if duringCommit < kills/4 {
		t.Fatalf("only %d of %d kills landed at a commit; the test did not exercise what it claims", duringCommit, kills)
	}
	s.drainOnce()
	if segs, err := localwal.Scan(s.wal); err != nil || len(segs) != 0 {
		t.Fatalf("after the clean drain %d segments remain (%v)", len(segs), err)
	}
	got := s.tableSum("events")
	if got != want {
		t.Fatalf("after %d kills the table holds %d rows (sum %d); walgen sealed %d rows (sum %d)",
			kills, got.Rows, got.Sum, want.Rows, want.Sum)
	}
	t.Logf("%d kills (%d at a commit): table holds exactly the %d sealed rows", kills, duringCommit, want.Rows)
	s.checkDuckDB("events")
}
