package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/test/restcat"
	"github.com/siglake/siglake/test/testenv"
)

// The real binary on an Iceberg REST catalog: --catalog rest+http://127.0.0.1:PORT, a
// test/restcat server in this test process (SQLite behind it), with an s3:// warehouse on
// versitygw. The harness reads through the same server (restcat's faults act on commits only,
// and the tests heal it before they read).

// newRESTSite is a site on REST + S3. The server writes table metadata to the site's warehouse;
// the binary writes the data files there.
func newRESTSite(t *testing.T) (*site, *restcat.Server) {
	s := newBackendSite(t, "rest+http://unset", "")
	srv := testenv.REST(t, s.warehouse, s.s3)
	s.catalog = "rest+" + srv.URL
	return s, srv
}

// TestRESTCrashLoopExactlyOnce is the SIGKILL crash loop on REST + S3 (a little latency on every
// catalog request), then gc of what the kills left behind.
func TestRESTCrashLoopExactlyOnce(t *testing.T) {
	kills := 10
	if long() {
		kills = 100
	}
	s, srv := newRESTSite(t)
	srv.SetFaults(restcat.Faults{Latency: time.Millisecond, Jitter: 4 * time.Millisecond, Seed: uint64(time.Now().UnixNano())})
	crashLoop(t, s, kills)
	checkGC(t, s)
	if srv.Fired()[restcat.Delayed] == 0 {
		t.Fatal("no catalog request was delayed")
	}
	t.Logf("REST requests: %v", srv.Requests())
}

// TestRESTCommitFaultsExactlyOnce is the fault suite on REST: commits answered 503 after they
// were applied, connections cut after the commit, 409s and 429s (Retry-After: 1). First the drain
// alone meets one of each, in order, so each lands on a drain append: the two lost answers must
// be recognised through the stream mark (already_committed), not appended again. Then drain and
// rewrites run together under a fault on a third of the commits. Rows exactly once (iceberg-go and
// DuckDB), every fault fired, at least one rewrite in the table.
func TestRESTCommitFaultsExactlyOnce(t *testing.T) {
	s, srv := newRESTSite(t)
	srv.SetFaults(restcat.Faults{Tables: []string{"events"}, RetryAfter: time.Second})
	for _, f := range restcat.AllFaults {
		srv.Inject(f, 1)
	}
	var want rowsum.Sum
	want.Merge(s.walgen("pod-a", 4000, 1).Fingerprint)
	d := s.start(nil, "--role", "drain")
	d.waitDrained(2 * time.Minute)
	m := d.scrape()
	d.stop()
	fired := srv.Fired()
	for _, f := range restcat.AllFaults {
		if fired[f] != 1 {
			t.Fatalf("drain alone: %s fired %d times, want once (fired %v, %d still queued)", f, fired[f], fired, srv.Queued())
		}
	}
	if got := m.sum("siglake_drain_commits_total", `outcome="already_committed"`); got != 2 {
		t.Fatalf("drain commits already_committed = %v, want 2 (the 503 and the cut connection after applying)", got)
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("after the drain alone the table holds %d rows (sum %d); walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}

	// Drain and maintenance together, a fault on about a third of the commits.
	srv.SetFaults(restcat.Faults{Tables: []string{"events"}, RetryAfter: time.Second, Jitter: 3 * time.Millisecond,
		Seed: uint64(time.Now().UnixNano()), Rates: map[restcat.Fault]float64{
			restcat.ApplyThen503: 0.1, restcat.ApplyThenCut: 0.1, restcat.Conflict409: 0.1, restcat.Throttle429: 0.05}})
	// About 30 drain commits and the rewrites: at a fault rate of 0.35, fewer than 3 faults would
	// come up about once in 3000 runs.
	want.Merge(s.walgen("pod-a", 10000, 2).Fingerprint)
	lines := make(chan string, 100000)
	c := s.start(lines, "--recluster-interval-secs", "1")
	c.waitDrained(2 * time.Minute)
	want.Merge(s.walgen("pod-a", 6000, 3).Fingerprint) // more while it runs
	c.waitDrained(2 * time.Minute)
	// A rewrite counts once it is in the table: committed, or answered with an unknown outcome
	// (a 503 or a cut after the server applied it) and found among the live files (generation > 0).
	deadline := time.Now().Add(90 * time.Second)
	for !rewriteLanded(s, c.scrape()) {
		if time.Now().After(deadline) {
			for len(lines) > 0 {
				if l := <-lines; strings.Contains(l, "rewrite") {
					t.Log(l)
				}
			}
			t.Fatalf("no rewrite landed on REST under faults within 90 s (faults fired %v)", srv.Fired())
		}
		time.Sleep(300 * time.Millisecond)
	}
	m = c.scrape()
	srv.SetFaults(restcat.Faults{})
	c.stop()

	after := srv.Fired()
	var during int64
	for _, f := range restcat.AllFaults {
		during += after[f] - fired[f]
	}
	t.Logf("faults fired %v (%d while drain and rewrites ran); drain commits %v committed, %v already committed, %v failed; rewrites %v committed, %v conflict, %v failed or of unknown outcome",
		after, during, m.sum("siglake_drain_commits_total", `outcome="committed"`), m.sum("siglake_drain_commits_total", `outcome="already_committed"`),
		m.sum("siglake_drain_commits_total", `outcome="failed"`), m.sum("siglake_compactor_rewrites_total", `outcome="committed"`),
		m.sum("siglake_compactor_rewrites_total", `outcome="conflict"`), m.sum("siglake_compactor_rewrites_total", `outcome="failed"`))
	if during < 3 {
		t.Fatalf("only %d faults fired while drain and rewrites ran; the test did not exercise what it claims", during)
	}
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d); walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}

// rewriteLanded says whether a rewrite of events is known to be in the table.
func rewriteLanded(s *site, m metrics) bool {
	if m.sum("siglake_compactor_rewrites_total", `outcome="committed"`) >= 1 {
		return true
	}
	// An unknown outcome counts as failed in the metric (its log line tells them apart).
	if m.sum("siglake_compactor_rewrites_total", `outcome="failed"`) < 1 {
		return false
	}
	_, files := s.table("events")
	for _, f := range files {
		if f.Generation > 0 {
			return true
		}
	}
	return false
}

// TestRESTClaimsTakeover is the catalog-claims takeover (three drain processes, one SIGKILLed)
// on REST + S3. Claim commits are CAS commits whose lost races come back as REST 409s; a fifth of
// them also get a 409 from the server itself, which the claim manager must take as a lost race
// (re-read the claims, decide again), not as a failed commit of unknown outcome.
func TestRESTClaimsTakeover(t *testing.T) {
	s, srv := newRESTSite(t)
	srv.SetFaults(restcat.Faults{Tables: []string{"streams"}, Seed: uint64(time.Now().UnixNano()),
		Rates: map[restcat.Fault]float64{restcat.Conflict409: 0.2}})
	r := claimsTakeover(t, s)
	t.Logf("%s; REST commits %d, 409s injected on the claims table %d", r, srv.Requests()["updateTable"], srv.Fired()[restcat.Conflict409])
	if srv.Fired()[restcat.Conflict409] < 1 || r.Conflicts < 1 {
		t.Fatalf("%d 409s injected on the claims table, %v counted as conflicts by the survivors; want both",
			srv.Fired()[restcat.Conflict409], r.Conflicts)
	}
}

// TestRESTDeleteRequestSwept: a deletion request recorded through the REST catalog is swept by
// the running compactor; the table ends with exactly the rows it does not match.
func TestRESTDeleteRequestSwept(t *testing.T) {
	s, _ := newRESTSite(t)
	deleteRequestSwept(t, s)
}

// TestRESTIndexRebuild: Puffin index sidecars registered in table properties through REST
// commits, and found at exactly the rows of every service value.
func TestRESTIndexRebuild(t *testing.T) {
	s, _ := newRESTSite(t)
	indexRebuild(t, s)
}
