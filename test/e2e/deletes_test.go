package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
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
	r := s.start(nil, "--recluster-interval-secs", "1", "--delete-cancel-period", "0")
	r.waitDrained(60 * time.Second)

	billing := iceberg.EqualTo(iceberg.Reference("service"), "billing")
	keep := s.scanSum("events", iceberg.NewNot(billing))
	before := s.scanSum("events", billing)
	if before.Rows == 0 || keep.Rows+before.Rows != w.Rows {
		t.Fatalf("setup: %d billing and %d other rows of %d", before.Rows, keep.Rows, w.Rows)
	}

	// The request stores its execution time from the recorder's period: 0, as the compactor's.
	cmd := exec.Command(bin, "delete-request", "--catalog", s.catalog, "--warehouse", s.warehouse, "--delete-cancel-period", "0",
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

// deleteTool runs a delete-* command of the binary against s; it returns stdout, stderr and the
// exit code.
func (s *site) deleteTool(args ...string) (string, string, int) {
	s.t.Helper()
	cmd := exec.Command(bin, append([]string{args[0], "--catalog", s.catalog, "--warehouse", s.warehouse}, args[1:]...)...)
	cmd.Env = append(os.Environ(), s.extraEnv...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		s.t.Fatalf("%s: %v", args[0], err)
	}
	return out.String(), errb.String(), code
}

// TestDeleteRequestSafety (issue 30): with the real binary, a request that would delete every
// row is refused (no condition, --from 1970, a --to in the future) and recorded only with
// --all-rows, which says so; `--where 'A AND B'` is two conditions; delete-cancel withdraws a
// pending request (a second cancel is refused); delete-request says what it matches and when it
// runs; and neither delete-sweep --apply nor the running compactor's idle sweep executes a
// request before SIGLAKE_DELETE_CANCEL_PERIOD has passed (its rows are still there, status shows
// it waiting without its values), after which its rows are gone and only they.
func TestDeleteRequestSafety(t *testing.T) {
	s := newSite(t)
	w := s.walgen("pod-0", 20000, 7)
	s.drainOnce()

	for _, args := range [][]string{{}, {"--from", "1970-01-01"}, {"--to", "2099-01-01"}, {"--reason", "cleanup"}} {
		_, stderr, code := s.deleteTool(append([]string{"delete-request", "--table", "events"}, args...)...)
		if code == 0 || !strings.Contains(stderr, "every row") || !strings.Contains(stderr, "--all-rows") {
			t.Fatalf("delete-request --table events %v: exit %d, want a refusal naming --all-rows:\n%s", args, code, stderr)
		}
	}
	if got := s.tableProps("events"); len(deleteKeys(got)) != 0 {
		t.Fatalf("refused requests were stored: %v", deleteKeys(got))
	}

	// --all-rows is accepted and says what it does; cancelled at once, it never runs.
	out, stderr, code := s.deleteTool("delete-request", "--table", "events", "--all-rows", "--reason", "e2e")
	if code != 0 || !strings.Contains(stderr, "EVERY ROW of table events") {
		t.Fatalf("delete-request --all-rows: exit %d\n%s%s", code, out, stderr)
	}
	all := strings.TrimSpace(out)
	if o, e, c := s.deleteTool("delete-cancel", "--table", "events", all); c != 0 || !strings.Contains(o, "cancelled deletion request "+all) {
		t.Fatalf("delete-cancel: exit %d\n%s%s", c, o, e)
	}
	if _, e, c := s.deleteTool("delete-cancel", "--table", "events", all); c == 0 || !strings.Contains(e, "already cancelled") {
		t.Fatalf("second delete-cancel: exit %d\n%s", c, e)
	}

	// AND in one --where: two conditions; cancelled too, so debug rows of billing stay until B.
	out, stderr, code = s.deleteTool("delete-request", "--table", "events", "--where", "service=billing AND severity=debug", "--json")
	var and deletes.Request
	if code != 0 || json.Unmarshal([]byte(out), &and) != nil || len(and.Where) != 2 || and.Where[1].Column != "severity" {
		t.Fatalf("--where with AND: exit %d, stored %+v\n%s", code, and.Where, stderr)
	}
	if _, e, c := s.deleteTool("delete-cancel", "--table", "events", and.ID); c != 0 {
		t.Fatalf("delete-cancel: %s", e)
	}
	if _, e, c := s.deleteTool("delete-request", "--table", "events", "--where", "service=billing OR severity=debug"); c == 0 || !strings.Contains(e, `token "OR"`) {
		t.Fatalf("--where with OR: exit %d\n%s", c, e)
	}
	// A copied non-breaking space joins conditions like a plain one.
	if _, e, c := s.deleteTool("delete-request", "--table", "events", "--where", "service=billing\u00a0AND\u00a0severity=nosuch"); c != 0 ||
		!strings.Contains(e, `service = "billing" AND severity = "nosuch"`) {
		t.Fatalf("--where with non-breaking spaces: exit %d\n%s", c, e)
	} else if !strings.Contains(e, "WARNING: the request matches no row now") || !strings.Contains(e, "columns of events: ") {
		// A request that matches nothing is said so loudly, with the columns.
		t.Fatalf("a request matching no row: no warning\n%s", e)
	}

	billing := iceberg.EqualTo(iceberg.Reference("service"), "billing")
	keep := s.scanSum("events", iceberg.NewNot(billing))
	before := s.scanSum("events", billing)
	if before.Rows == 0 || keep.Rows+before.Rows != w.Rows {
		t.Fatalf("setup: %d billing and %d other rows of %d", before.Rows, keep.Rows, w.Rows)
	}
	const period = 15 * time.Second
	env := "SIGLAKE_DELETE_CANCEL_PERIOD=" + period.String()
	s.extraEnv = append(s.extraEnv, env)
	recorded := time.Now()
	out, stderr, code = s.deleteTool("delete-request", "--table", "events", "--where", "service=billing", "--reason", "e2e")
	if code != 0 || !strings.Contains(stderr, fmt.Sprintf("matches now: %d rows", before.Rows)) || !strings.Contains(stderr, "sweeps execute it from") {
		t.Fatalf("delete-request: exit %d, want what it matches (%d rows) and when it runs\n%s", code, before.Rows, stderr)
	}
	id := strings.TrimSpace(out)

	// By hand, inside the period: nothing runs, and it says why; a period of 0 on the sweeping
	// command does not shorten the one stored in the request.
	if o, e, c := s.deleteTool("delete-sweep", "--apply", "--table", "events"); c != 0 || !strings.Contains(o, "waits its cancel period") {
		t.Fatalf("delete-sweep --apply: exit %d\n%s%s", c, o, e)
	}
	if o, e, c := s.deleteTool("delete-sweep", "--apply", "--table", "events", "--delete-cancel-period", "0"); c != 0 || !strings.Contains(o, "waits its cancel period") {
		t.Fatalf("delete-sweep --apply --delete-cancel-period 0: exit %d\n%s%s", c, o, e)
	}
	r := s.start(nil, "--recluster-interval-secs", "1")
	waitFor(t, period, "status to show the request waiting", func() bool {
		_, body := r.get("/debug/status")
		return strings.Contains(body, id) && strings.Contains(body, `"state": "waiting"`)
	})
	_, body := r.get("/debug/status")
	if strings.Contains(body, `"billing"`) || strings.Contains(body, "service =") {
		t.Fatalf("status shows the request's predicate:\n%s", body)
	}
	if got := s.scanSum("events", billing); got != before || time.Since(recorded) >= period {
		t.Fatalf("before the cancel period ended (%s of %s): billing rows %+v, want all %+v", time.Since(recorded), period, got, before)
	}
	waitFor(t, period+90*time.Second, "the idle sweep to finish the request after its cancel period", func() bool {
		return r.scrape().sum("siglake_delete_requests_done_total", `table="events"`) >= 1
	})
	r.stop()
	if time.Since(recorded) < period {
		t.Fatalf("the request ran %s after it was recorded, inside its %s cancel period", time.Since(recorded), period)
	}
	if got := s.tableSum("events"); got != keep {
		t.Fatalf("table holds %+v, want exactly the rows the request does not match %+v", got, keep)
	}
	tbl, _ := s.table("events")
	rs, _ := deletes.List(tbl.Properties())
	states := map[string]string{}
	for _, q := range rs {
		states[q.ID] = q.State
	}
	if states[id] != deletes.Done || states[all] != deletes.Cancelled || states[and.ID] != deletes.Cancelled {
		t.Fatalf("stored states %v", states)
	}
}

func deleteKeys(props map[string]string) []string {
	var out []string
	for k := range props {
		if strings.HasPrefix(k, deletes.PropertyPrefix) {
			out = append(out, k)
		}
	}
	return out
}
