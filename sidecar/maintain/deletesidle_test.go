package maintain

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/rows"
)

func newDeleteEnv(t *testing.T, mutate func(*testConfig)) *env {
	return newEnv(t, func(c *testConfig) {
		c.CommitBatchTargetBytes = 0
		c.SnapshotExpireInterval = 0
		if mutate != nil {
			mutate(c)
		}
	})
}

// TestDeleteTasksSwitch: with SIGLAKE_DELETE_TASKS off, idle maintenance cycles leave requests
// pending (and count them); delete-sweep --apply executes them by hand. With it on, the idle
// cycle sweeps.
func TestDeleteTasksSwitch(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("on=%v", on), func(t *testing.T) {
			e := newDeleteEnv(t, func(c *testConfig) { c.DeleteTasks = on })
			recs := e.te.DeleteTable(3)
			r := testlake.Record(t, e.lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
			want, _ := testlake.ExpectAfter(recs, []deletes.Request{r})
			all, _ := testlake.ExpectAfter(recs, nil)
			m := newMaintainer(t, e, e.lake, time.Now)
			for i := 0; i < 3; i++ {
				rep, err := m.Cycle(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if rep.Planned != 0 {
					t.Fatalf("setup: the cycle planned %d rewrites; the test needs idle cycles", rep.Planned)
				}
			}
			pending := m.Metrics.Deletes.Pending.WithLabelValues("events")
			st := testlake.StoredRequests(t, e.lake)[r.ID]
			if !on {
				if got := e.tableSum("events"); got != all || st.State != deletes.Pending {
					t.Fatalf("switch off: table %+v (want %+v), request %s", got, all, st.State)
				}
				if v := promtest.Gauge(pending); v != 1 {
					t.Fatalf("siglake_delete_requests_pending = %v, want 1", v)
				}
				var shown []sweep.PendingRequest
				if st := published(m).deletes["events"]; st != nil {
					shown = st.Pending
				}
				if len(shown) != 1 || shown[0].ID != r.ID {
					t.Fatalf("/debug/status pending requests: %+v", shown)
				}
				deleteSweep(t, e, []string{"events"})
				st = testlake.StoredRequests(t, e.lake)[r.ID]
			}
			if got := e.tableSum("events"); got != want || st.State != deletes.Done {
				t.Fatalf("table %+v (want %+v), request %s", got, want, st.State)
			}
		})
	}
}

// TestFailingTableDoesNotStarveDeletes: one owned table whose pass fails every cycle (its
// manifest list is unreadable) must not keep the other tables' deletion requests from being
// swept, and the pending gauge is published in busy cycles too.
func TestFailingTableDoesNotStarveDeletes(t *testing.T) {
	e := newDeleteEnv(t, func(c *testConfig) { c.DeleteTasks = true })
	e.te.DeleteTable(3)
	r := testlake.Record(t, e.lake, deletes.Request{Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}}})
	e.writeSegments("other", 2, 2000, 9, testlake.DeleteBase)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	ot, err := e.lake.LoadTable(context.Background(), "other")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strings.TrimPrefix(ot.CurrentSnapshot().ManifestList, "file://"), []byte("not avro"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newMaintainer(t, e, e.lake, time.Now)
	for i := 0; i < 4; i++ {
		if _, err := m.Cycle(context.Background()); err == nil {
			t.Fatal("the broken table's pass did not fail: the test does not test anything")
		}
	}
	if st := testlake.StoredRequests(t, e.lake)[r.ID]; st.State != deletes.Done {
		t.Fatalf("after 4 cycles the request on events is %s, pending gauge %v", st.State,
			promtest.Gauge(m.Metrics.Deletes.Pending.WithLabelValues("events")))
	}
}
