package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// scanSum fingerprints the rows of a table that filter selects, read through iceberg-go.
func (s *site) scanSum(name string, filter iceberg.BooleanExpression) rowsum.Sum {
	s.t.Helper()
	tbl, _ := s.table(name)
	_, recs, err := tbl.Scan(table.WithRowFilter(filter)).ToArrowRecords(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	var sum rowsum.Sum
	for rec, err := range recs {
		if err != nil {
			s.t.Fatal(err)
		}
		if err := sum.Add(rec, walgen.Columns...); err != nil {
			s.t.Fatal(err)
		}
		rec.Release()
	}
	return sum
}

// TestDeleteRequestSweptByRunningCompactor: a request recorded with `siglake delete-request`
// while `siglake compactor` runs is executed by the idle-cycle sweep: the table ends with
// exactly the rows the request does not match, and the request is done.
func TestDeleteRequestSweptByRunningCompactor(t *testing.T) { deleteRequestSwept(t, newSite(t)) }

// deleteRequestSwept is TestDeleteRequestSweptByRunningCompactor on any site.
func deleteRequestSwept(t *testing.T, s *site) {
	w := s.walgen("pod-0", 20000, 7)
	r := s.start(nil, "--recluster-interval-secs", "1")
	r.waitDrained(60 * time.Second)

	billing := iceberg.EqualTo(iceberg.Reference("service"), "billing")
	keep := s.scanSum("events", iceberg.NewNot(billing))
	before := s.scanSum("events", billing)
	if before.Rows == 0 || keep.Rows+before.Rows != w.Rows {
		t.Fatalf("setup: %d billing and %d other rows of %d", before.Rows, keep.Rows, w.Rows)
	}

	cmd := exec.Command(bin, "delete-request", "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--table", "events", "--where", "service=billing", "--reason", "e2e", "--json", "--include-future")
	cmd.Env = append(os.Environ(), s.extraEnv...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("delete-request: %v", err)
	}
	var req deletes.Request
	if err := json.Unmarshal(out, &req); err != nil || req.ID == "" || req.State != deletes.Pending {
		t.Fatalf("delete-request printed %q (%v)", out, err)
	}
	if req.To != "" {
		t.Fatalf("request to = %q with --include-future, want an open range", req.To)
	}

	waitFor(t, 90*time.Second, "the idle-cycle sweep to finish the request", func() bool {
		return r.scrape().sum("siglake_delete_requests_done_total", `table="events"`) >= 1
	})
	m := r.scrape()
	r.stop()
	if got := m.sum("siglake_delete_rows_deleted_total", `table="events"`); got != float64(before.Rows) {
		t.Fatalf("siglake_delete_rows_deleted_total = %v, want %d", got, before.Rows)
	}
	if got := s.tableSum("events"); got != keep {
		t.Fatalf("table holds %+v, want exactly the rows the request does not match %+v", got, keep)
	}
	tbl, _ := s.table("events")
	rs, _ := deletes.List(tbl.Properties())
	if len(rs) != 1 || rs[0].ID != req.ID || rs[0].State != deletes.Done || rs[0].RowsDeleted != int64(before.Rows) {
		t.Fatalf("stored requests: %+v", rs)
	}
}

// TestDeleteRequestDefaultsToNow: without --to (and without --include-future) a request covers
// the rows with timestamps before the time it was recorded.
func TestDeleteRequestDefaultsToNow(t *testing.T) {
	s := newSite(t)
	s.walgen("pod-0", 1000, 3)
	s.drainOnce()
	cmd := exec.Command(bin, "delete-request", "--catalog", s.catalog, "--warehouse", s.warehouse,
		"--table", "events", "--where", "service=billing", "--json")
	cmd.Env = append(os.Environ(), s.extraEnv...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("delete-request: %v", err)
	}
	var req deletes.Request
	if err := json.Unmarshal(out, &req); err != nil {
		t.Fatalf("delete-request printed %q (%v)", out, err)
	}
	if to, err := time.Parse(time.RFC3339Nano, req.To); err != nil || time.Since(to) < 0 || time.Since(to) > time.Minute {
		t.Fatalf("request to = %q (%v), want the time of the request", req.To, err)
	}
}
