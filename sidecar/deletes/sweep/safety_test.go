package sweep_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/rows"
)

func billing() []rows.Condition {
	return []rows.Condition{{Column: "service", Values: []string{"billing"}}}
}

// TestWholeTableRequestsRefused: the whole-table check sees what the user gave, before --to
// defaults to now: no condition and no time bound that leaves a row out is refused without
// AllRows, whatever the bound says (1970, a --to in the future or past every row); a bound inside
// the table's rows, or a condition, is a real request; AllRows records it and says so.
func TestWholeTableRequestsRefused(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1) // 1,500 rows from DeleteBase, 1 ms apart
	inside := testlake.DeleteBase.Add(time.Second).Format(time.RFC3339)
	ctx := context.Background()
	toNow := deletes.RecordOptions{ToNow: true}
	for _, r := range []deletes.Request{
		{},
		{From: "1970-01-01"},
		{To: "2099-01-01"},
		{From: "1970-01-01", To: "2099-01-01"},
		{To: testlake.Hour(1)}, // after every row of the table
		{From: testlake.DeleteBase.Format(time.RFC3339)},
	} {
		_, err := deletes.RecordWith(ctx, e.Lake, "events", r, time.Now(), toNow)
		if !errors.Is(err, deletes.ErrWholeTable) || !strings.Contains(err.Error(), "--all-rows") {
			t.Errorf("%+v: error %v, want the whole-table refusal naming --all-rows", r, err)
		}
	}
	if n := len(testlake.StoredRequests(t, e.Lake)); n != 0 {
		t.Fatalf("%d requests stored after whole-table requests", n)
	}
	for _, r := range []deletes.Request{{From: inside}, {To: inside}, {Where: billing()}} {
		got, err := deletes.RecordWith(ctx, e.Lake, "events", r, time.Now(), toNow)
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if r.To == "" && got.To == "" {
			t.Errorf("%+v: to not defaulted to the time of the request", r)
		}
	}
	got, err := deletes.RecordWith(ctx, e.Lake, "events", deletes.Request{AllRows: true}, time.Now(), toNow)
	if err != nil {
		t.Fatal(err)
	}
	if !got.AllRows || got.To == "" || got.Version != deletes.Version || !strings.HasPrefix(got.Describe(), "ALL ROWS AND timestamp < ") {
		t.Fatalf("all-rows request stored as %+v (%s)", got, got.Describe())
	}
	if _, err := deletes.RecordWith(ctx, e.Lake, "events", deletes.Request{AllRows: true, Where: billing()}, time.Now(), toNow); err == nil ||
		!strings.Contains(err.Error(), "--all-rows deletes every row") {
		t.Fatalf("--all-rows with a condition: %v", err)
	}
}

// TestWholeTableSpan: the rule itself, on an empty table too (rows arrive at now).
func TestWholeTableSpan(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	sp := deletes.Span{Min: now.Add(-48 * time.Hour).UnixMicro(), Max: now.Add(-time.Hour).UnixMicro()}
	for _, c := range []struct {
		r         deletes.Request
		sp        deletes.Span
		whole     bool
		situation string
	}{
		{deletes.Request{}, sp, true, "nothing given"},
		{deletes.Request{From: "2026-12-01"}, sp, true, "from before every row"},
		{deletes.Request{From: "2026-12-02"}, sp, false, "from inside the rows"},
		{deletes.Request{To: "2026-12-03T11:00:00.000001Z"}, sp, true, "to after the newest row"},
		{deletes.Request{To: "2026-12-03T11:00:00Z"}, sp, false, "to at the newest row, which it leaves out"},
		{deletes.Request{Where: billing()}, sp, false, "a condition"},
		{deletes.Request{From: "1970-01-01"}, deletes.Span{Empty: true}, true, "empty table, from the past"},
		{deletes.Request{To: "2026-12-01"}, deletes.Span{Empty: true}, false, "empty table, to in the past"},
		{deletes.Request{To: "2027-01-01"}, deletes.Span{Empty: true}, true, "empty table, to in the future"},
	} {
		if got, err := c.r.WholeTable(c.sp, now); err != nil || got != c.whole {
			t.Errorf("%s: whole table = %v (%v), want %v", c.situation, got, err, c.whole)
		}
	}
}

// TestCancelPeriodHoldsSweeps: an applying sweep leaves a request alone until its cancel period
// has passed since it was recorded (reported as waiting, published with its execution time), then
// executes it; SkipCancelPeriod executes at once. A dry run counts it either way.
func TestCancelPeriodHoldsSweeps(t *testing.T) {
	e := testlake.New(t)
	recs := e.DeleteTable(2)
	created := time.Now()
	r, err := deletes.Record(context.Background(), e.Lake, "events", deletes.Request{Where: billing()}, created)
	if err != nil {
		t.Fatal(err)
	}
	want, counts := testlake.ExpectAfter(recs, []deletes.Request{r})
	if counts[r.ID] == 0 {
		t.Fatal("setup: the request matches no row")
	}
	before := e.Sum("events")
	s, _ := sweeper(e)
	now := created.Add(time.Hour - time.Second)
	s.Now = func() time.Time { return now }
	s.Cfg.CancelPeriod = time.Hour
	var pub capture
	s.Publish = &pub
	ctx := context.Background()

	dry, err := s.Sweep(ctx, "events", sweep.Options{NoCaps: true})
	if err != nil || dry.ByRequest[r.ID] != counts[r.ID] {
		t.Fatalf("dry run counts %d rows (%v), want %d", dry.ByRequest[r.ID], err, counts[r.ID])
	}
	reps, err := s.SweepTables(ctx, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Rewritten != 0 || len(reps[0].Waiting) != 1 || reps[0].Waiting[0] != r.ID {
		t.Fatalf("inside the cancel period: %+v", reps)
	}
	if got := e.Sum("events"); got != before {
		t.Fatalf("rows deleted inside the cancel period: %+v, want %+v", got, before)
	}
	st := pub.get("events")
	if st == nil || len(st.Pending) != 1 || st.Pending[0].State != sweep.Waiting || !st.Pending[0].ExecuteAt.Equal(created.Add(time.Hour).UTC()) {
		t.Fatalf("published %+v", st)
	}

	now = created.Add(time.Hour)
	if _, err := s.SweepTables(ctx, nil, true); err != nil {
		t.Fatal(err)
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("after the cancel period the table holds %+v, want %+v", got, want)
	}
	if st := testlake.StoredRequests(t, e.Lake)[r.ID]; st.State != deletes.Done {
		t.Fatalf("request %+v after the period", st)
	}

	// By hand, skipping the period.
	e2 := testlake.New(t)
	recs2 := e2.DeleteTable(2)
	r2 := testlake.Record(t, e2.Lake, deletes.Request{Where: billing()})
	want2, _ := testlake.ExpectAfter(recs2, []deletes.Request{r2})
	s2, _ := sweeper(e2)
	s2.Cfg.CancelPeriod = 24 * time.Hour
	if _, err := s2.SweepTablesWith(ctx, nil, sweep.Options{Apply: true, SkipCancelPeriod: true}); err != nil {
		t.Fatal(err)
	}
	if got := e2.Sum("events"); got != want2 {
		t.Fatalf("--skip-cancel-period: the table holds %+v, want %+v", got, want2)
	}
}

// capture is a Publisher that keeps the last state per table.
type capture struct {
	mu sync.Mutex
	m  map[string]*sweep.State
}

func (c *capture) Deletes(table string, st *sweep.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*sweep.State{}
	}
	c.m[table] = st
}

func (c *capture) get(table string) *sweep.State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[table]
}

// TestDeleteCancel: a pending request is withdrawn and no sweep runs it; cancelling it again, a
// done request, a running one (rows already deleted) or an unknown id is refused with the reason.
func TestDeleteCancel(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	ctx := context.Background()
	before := e.Sum("events")
	r, err := deletes.RecordWith(ctx, e.Lake, "events", deletes.Request{Where: billing()}, time.Now(), deletes.RecordOptions{CancelPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	got, err := deletes.Cancel(ctx, e.Lake, "events", r.ID, time.Now(), deletes.DefaultCancelPeriod)
	if err != nil || got.State != deletes.Cancelled || got.CancelledAt == nil {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	reps := sweepAll(t, e)
	if reps[0].Rewritten != 0 || e.Sum("events") != before {
		t.Fatalf("a cancelled request was executed: %+v", reps[0])
	}
	if st := testlake.StoredRequests(t, e.Lake)[r.ID]; st.State != deletes.Cancelled {
		t.Fatalf("stored %+v", st)
	}
	for id, want := range map[string]string{r.ID: "already cancelled", "20261203T000000Z-000000": "has no deletion request"} {
		if _, err := deletes.Cancel(ctx, e.Lake, "events", id, time.Now(), deletes.DefaultCancelPeriod); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cancel %s: %v, want %q", id, err, want)
		}
	}

	done := testlake.Record(t, e.Lake, deletes.Request{Where: billing()})
	sweepAll(t, e)
	if _, err := deletes.Cancel(ctx, e.Lake, "events", done.ID, time.Now(), deletes.DefaultCancelPeriod); err == nil || !strings.Contains(err.Error(), "done") {
		t.Fatalf("cancel a done request: %v", err)
	}

	running := testlake.Record(t, e.Lake, deletes.Request{Where: []rows.Condition{{Column: "severity", Values: []string{"debug"}}}})
	running.RowsDeleted, running.FilesRewritten = 10, 1
	tbl := e.Table("events")
	txn := tbl.NewTransaction()
	if err := deletes.Stage(txn, running); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := deletes.Cancel(ctx, e.Lake, "events", running.ID, time.Now(), deletes.DefaultCancelPeriod); err == nil || !strings.Contains(err.Error(), "running, 10 rows already deleted") {
		t.Fatalf("cancel a running request: %v", err)
	}
}

// TestCancelInsideSweepCommitRefused: a cancel committed inside a sweep's commit step (after the
// sweep read the request as pending from the newest metadata, before the catalog commit) would
// be overwritten by the sweep's staged progress, and rows would go after delete-cancel said it
// was withdrawn. Once the request's execution time has come, the cancel is refused as executing;
// whatever happens, a cancel that reports success keeps every row and stays cancelled.
func TestCancelInsideSweepCommitRefused(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	before := e.Sum("events")
	r := testlake.Record(t, e.Lake, deletes.Request{Where: billing()}) // cancel period 0: due now
	s, _ := sweeper(e)
	var once sync.Once
	var cerr error
	called := false
	sweep.SetStaged(s, func() {
		once.Do(func() {
			called = true
			_, cerr = deletes.Cancel(context.Background(), e.Lake, "events", r.ID, time.Now(), 0)
		})
	})
	if _, err := s.Sweep(context.Background(), "events", sweep.Options{Apply: true}); err != nil {
		t.Fatal(err)
	}
	if !called {
		t.Fatal("setup: the sweep's commit step never ran")
	}
	st := testlake.StoredRequests(t, e.Lake)[r.ID]
	if cerr == nil && (st.State != deletes.Cancelled || e.Sum("events") != before) {
		t.Fatalf("delete-cancel reported success, yet the request is %s with %d rows deleted", st.State, st.RowsDeleted)
	}
	if cerr == nil || !strings.Contains(cerr.Error(), "executing: it may already be deleting rows") {
		t.Fatalf("cancel of a request being executed: %v, want it refused as executing", cerr)
	}
	if st.State != deletes.Pending || st.RowsDeleted == 0 {
		t.Fatalf("the sweep's progress: %+v", st)
	}
}

// TestSweepCommitsNothingForAGoneRequest: a request removed from the table properties after the
// sweep read it (no longer asked for) makes the rewrite's commit a conflict: no row goes.
func TestSweepCommitsNothingForAGoneRequest(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(2)
	before := e.Sum("events")
	r := testlake.Record(t, e.Lake, deletes.Request{Where: billing()})
	s, _ := sweeper(e)
	var once sync.Once
	// The hook runs after the sweep read the request, before the rewrite's commit step.
	sweep.SetVetted(s, func() {
		once.Do(func() {
			txn := e.Table("events").NewTransaction()
			if err := txn.RemoveProperties([]string{deletes.Key(r.ID)}); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(context.Background()); err != nil {
				t.Error(err)
			}
		})
	})
	rep, err := s.Sweep(context.Background(), "events", sweep.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Rewritten != 0 || rep.Conflicts == 0 {
		t.Fatalf("sweep after the request was removed: %d rewritten, %d conflicts", rep.Rewritten, rep.Conflicts)
	}
	if got := e.Sum("events"); got != before {
		t.Fatalf("rows of a removed request were deleted: %+v, want %+v", got, before)
	}
}

// TestStoredExecutionTimeHolds: the cancel period comes from the request: a sweeper with a shorter
// period, or with none, waits until the stored execute_at; only --skip-cancel-period runs it
// before; a sweeper with a longer period waits longer.
func TestStoredExecutionTimeHolds(t *testing.T) {
	e := testlake.New(t)
	recs := e.DeleteTable(2)
	before := e.Sum("events")
	created := time.Now()
	r, err := deletes.RecordWith(context.Background(), e.Lake, "events", deletes.Request{Where: billing()}, created,
		deletes.RecordOptions{CancelPeriod: 72 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r.NotBefore == nil || !r.NotBefore.Equal(created.UTC().Add(72*time.Hour)) {
		t.Fatalf("stored execute_at %v, want created + 72h", r.NotBefore)
	}
	want, _ := testlake.ExpectAfter(recs, []deletes.Request{r})
	ctx := context.Background()
	for _, c := range []struct {
		period time.Duration
		at     time.Duration
	}{{24 * time.Hour, 25 * time.Hour}, {0, time.Hour}, {96 * time.Hour, 80 * time.Hour}} {
		s, _ := sweeper(e)
		s.Cfg.CancelPeriod = c.period
		now := created.Add(c.at)
		s.Now = func() time.Time { return now }
		reps, err := s.SweepTables(ctx, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		if e.Sum("events") != before || len(reps[0].Waiting) != 1 {
			t.Fatalf("sweeper with period %s at created+%s ran a request stored to execute at created+72h: %+v", c.period, c.at, reps[0])
		}
	}
	s, _ := sweeper(e)
	if _, err := s.SweepTablesWith(ctx, nil, sweep.Options{Apply: true, SkipCancelPeriod: true}); err != nil {
		t.Fatal(err)
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("--skip-cancel-period: the table holds %+v, want %+v", got, want)
	}
}

// TestExpiredCancelledRequestsLeave: a cancelled request older than DoneRetention leaves the
// table properties in the commit that marks a later request done, as done ones do.
func TestExpiredCancelledRequestsLeave(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	old := time.Now().Add(-deletes.DoneRetention - time.Hour).UTC()
	for i, at := range []time.Time{old, time.Now().UTC()} {
		c := deletes.Request{Version: 2, ID: deletes.NewID(at.Add(time.Duration(i) * time.Second)), CreatedAt: at, State: deletes.Cancelled,
			CancelledAt: &at, Where: billing()}
		txn := e.Table("events").NewTransaction()
		if err := deletes.Stage(txn, c); err != nil {
			t.Fatal(err)
		}
		if _, err := txn.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	testlake.Record(t, e.Lake, deletes.Request{Where: billing()})
	sweepAll(t, e)
	var cancelled int
	for _, st := range testlake.StoredRequests(t, e.Lake) {
		if st.State == deletes.Cancelled {
			cancelled++
			if st.CancelledAt.Before(time.Now().Add(-deletes.DoneRetention)) {
				t.Errorf("cancelled request %s from %s still stored", st.ID, st.CancelledAt)
			}
		}
	}
	if cancelled != 1 {
		t.Fatalf("%d cancelled requests stored, want the recent one only", cancelled)
	}
}

// TestOldUnboundedRequestNotExecuted: a version-1 request with no condition and to = its creation
// time is what the CLI before format 2 stored for `delete-request --table T`; it is reported and
// never executed.
func TestOldUnboundedRequestNotExecuted(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	before := e.Sum("events")
	created := time.Now().UTC()
	old := deletes.Request{Version: 1, ID: deletes.NewID(created), CreatedAt: created, State: deletes.Pending,
		To: created.Truncate(time.Microsecond).Format(time.RFC3339Nano)}
	tbl := e.Table("events")
	txn := tbl.NewTransaction()
	if err := deletes.Stage(txn, old); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	reps := sweepAll(t, e)
	if reps[0].Rewritten != 0 || len(reps[0].Invalid) != 1 || !strings.Contains(reps[0].Invalid[0], "would delete every row") {
		t.Fatalf("sweep: %+v", reps[0])
	}
	if got := e.Sum("events"); got != before {
		t.Fatalf("an old unbounded request deleted rows: %+v, want %+v", got, before)
	}
}

// TestRecordRefusesWhatSweepsRefuse: a request with no condition and a to after its creation
// leaves rows out only when the table holds rows past that to; every sweep would refuse it as
// unbounded, so recording refuses it too.
func TestRecordRefusesWhatSweepsRefuse(t *testing.T) {
	e := testlake.New(t)
	e.DeleteTable(1)
	now := testlake.DeleteBase.Add(500 * time.Millisecond) // rows of the table lie after now and after to
	_, err := deletes.RecordWith(context.Background(), e.Lake, "events", deletes.Request{To: testlake.DeleteBase.Add(time.Second).Format(time.RFC3339)},
		now, deletes.RecordOptions{})
	if !errors.Is(err, deletes.ErrWholeTable) {
		t.Fatalf("record: %v, want the whole-table refusal", err)
	}
	if n := len(testlake.StoredRequests(t, e.Lake)); n != 0 {
		t.Fatalf("%d requests stored", n)
	}
}

// TestDoneMarkWaitsOutTheProcessAppends: the done marks are committed pinned to the metadata
// their check read. This process's own drain appends between the check and the commit would move
// the table under every attempt (at group commit's pace, every second) and keep a finished request
// pending; they take the table's lock, so they wait for the commit instead, and land after it.
func TestDoneMarkWaitsOutTheProcessAppends(t *testing.T) {
	e := testlake.New(t)
	recs := e.DeleteTable(3)
	r := testlake.Record(t, e.Lake, deletes.Request{From: testlake.Hour(2), To: testlake.Hour(3), Reason: "whole segment 1"})
	want, _ := testlake.ExpectAfter(recs, []deletes.Request{r})
	s, _ := sweeper(e)
	var appends sync.WaitGroup
	errs := make(chan error, 8)
	checks := 0
	sweep.SetChecked(s, func() {
		// Rows far from the request's hours, drained by this process while the marks commit.
		checks++
		want.Merge(e.SealRows("events", 1, 200, uint64(checks), testlake.DeleteBase.Add(time.Duration(20+checks)*time.Hour)))
		landed := make(chan struct{})
		appends.Add(1)
		go func() {
			defer appends.Done()
			defer close(landed)
			_, err := e.Drain.Cycle(context.Background(), true)
			errs <- err
		}()
		select {
		case <-landed: // appended before the commit: the commit conflicts
		case <-time.After(2 * time.Second): // waiting for the table's lock
		}
	})
	rep, err := s.Sweep(context.Background(), "events", sweep.Options{Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	appends.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(rep.Done) != 1 || checks != 1 {
		t.Fatalf("request done %v after %d checks: the appends between check and commit moved the table", rep.Done, checks)
	}
	if got := e.Sum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v", got, want)
	}
}
