package commit

import (
	"os"
	"testing"
	"time"
)

// TestGroupCommitHarnessShort is the short version of TestBenchGroupCommit that make test runs:
// 16 pods on the PostgreSQL catalog and the S3 server of the tests, first with the owner's
// maintainer rewriting beside the committer, then with the committer stopped halfway and a
// successor started a lease later. Each run checks every sealed row is in the table once
// (benchRun), that no pod is left waiting, that the table sees at most 2 commits/s, and the
// issue's lag targets: p99 seal-to-visible <= 15 s in steady state, <= 30 s across the failover.
func TestGroupCommitHarnessShort(t *testing.T) {
	if os.Getenv("SIGLAKE_BENCH") == "1" {
		t.Skip("TestBenchGroupCommit runs the long version")
	}
	for _, tc := range []struct {
		mode   benchMode
		window time.Duration
		p99    time.Duration
	}{
		{benchMode{Group: true, Maint: true}, 20 * time.Second, 15 * time.Second},
		{benchMode{Group: true, Failover: true}, 30 * time.Second, 30 * time.Second},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			r := benchRun(t, 16, tc.mode, tc.window)
			if r.Waiting != 0 {
				t.Errorf("%d segments still waiting after the tail", r.Waiting)
			}
			if rate := float64(r.Snapshots) / r.Window.Seconds(); rate > 2 {
				t.Errorf("%.2f commits/s on the table, want at most 2", rate)
			}
			if r.P99 > tc.p99 {
				t.Errorf("p99 seal to visible %s, want at most %s", r.P99, tc.p99)
			}
			if tc.mode.Maint && (r.Failed != 0 || r.Maint.Conflicts != 0 || r.Maint.Rewrites == 0) {
				t.Errorf("with maintenance: %d of %d commit attempts refused, %d bins lost to conflicts, %d rewrites committed; want none refused or lost, and a rewrite",
					r.Failed, r.Attempts, r.Maint.Conflicts, r.Maint.Rewrites)
			}
		})
	}
}
