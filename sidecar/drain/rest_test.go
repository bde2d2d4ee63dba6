package drain

import (
	"context"
	"testing"
	"time"

	"github.com/siglake/siglake/test/restcat"
)

// TestRESTCommitFaultsNoDuplicate is TestLostCommitResponseNoDuplicate on a REST catalog with its
// real failure answers (test/restcat): one batch's commit is applied and answered 503, one is
// applied and its connection cut, one gets a 409, one a 429 with Retry-After. The two applied
// ones are found through the stream mark on the retry (already_committed), nothing is appended
// twice, and every segment leaves the WAL.
func TestRESTCommitFaultsNoDuplicate(t *testing.T) {
	var srv *restcat.Server
	e := newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0 // one batch per segment
		var err error
		if srv, err = restcat.Start(restcat.Config{Warehouse: "file://" + c.Lake.Warehouse}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
		c.Lake.Catalog = "rest+" + srv.URL
	})
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	want := e.writeSegments("events", 1, 2000, 7, start)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil { // creates the table
		t.Fatal(err)
	}
	srv.SetFaults(restcat.Faults{RetryAfter: time.Second})
	for _, f := range restcat.AllFaults {
		srv.Inject(f, 1)
	}
	want.Merge(e.writeSegments("events", 4, 2000, 8, start.Add(time.Hour)))
	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 4 || res.Pending != 0 {
		t.Fatalf("cycle %+v, want the 4 segments drained", res)
	}
	for _, f := range restcat.AllFaults {
		if n := srv.Fired()[f]; n != 1 {
			t.Fatalf("%s fired %d times, want 1 (fired %v)", f, n, srv.Fired())
		}
	}
	if n := counterValue(t, e.drain.Metrics, "siglake_drain_commits_total", "already_committed"); n != 2 {
		t.Fatalf("already_committed commits = %v, want 2 (the two commits applied without an answer)", n)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v (a fault duplicated or lost rows)", got, want)
	}
}
