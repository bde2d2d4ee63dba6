package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/lake/tableprops"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/test/restcat"
)

// Group commit through the real binary (issue 33, docs/group-commit.md): keyed members hand their
// batches to the table's owner, which commits them together; every sealed row lands once, the
// table takes fewer commits than the pods made batches, and a committer killed mid-stream loses
// nothing.

// groupCluster starts n keyed members with group commit on and a walgen feeding each member's WAL
// at rate rows a second for secs seconds; it returns the members and a channel of what walgen
// sealed (one result per member).
func groupCluster(t *testing.T, s *site, n, rate, secs int, extra ...string) ([]*member, chan walgenResult) {
	t.Helper()
	var ms []*member
	for i := 0; i < n; i++ {
		ms = append(ms, newMember(t, s, fmt.Sprintf("gc-%d", i), i))
	}
	startGroup(t, s, ms, gossipKey(7), extra...)
	return ms, feed(t, ms, rate, secs, 60)
}

// startGroup starts ms as one gossip cluster (each joins the others) keyed with key, group commit on.
func startGroup(t *testing.T, s *site, ms []*member, key string, extra ...string) {
	t.Helper()
	for i, m := range ms {
		kf := filepath.Join(filepath.Dir(m.wal), m.name+".keys")
		writeKeys(t, kf, key)
		var join []string
		for j, o := range ms {
			if j != i {
				join = append(join, o.gossip)
			}
		}
		startMember(t, s, m, join, append([]string{"--gossip-key-file", kf, "--group-commit-interval", "200ms"}, extra...)...)
	}
}

// feed runs a walgen into each member's WAL at rate rows a second for secs seconds (seeds from
// seed on) and returns a channel of what each sealed.
func feed(t *testing.T, ms []*member, rate, secs, seed int) chan walgenResult {
	sealed := make(chan walgenResult, len(ms))
	for i, m := range ms {
		go func(i int, m *member) {
			out, err := exec.Command(bin, "walgen", "--wal-dir", m.wal, "--stream", m.name, "--rows", fmt.Sprint(rate*secs),
				"--seed", fmt.Sprint(seed+i), "--batch-rows", "250", "--segment-mb", "0.05", "--late-fraction", "0.05",
				"--rate", fmt.Sprint(rate), "--json").Output()
			var w walgenResult
			if err == nil {
				err = json.Unmarshal(out, &w)
			}
			if err != nil {
				t.Errorf("walgen %s: %v", m.name, err)
			}
			sealed <- w
		}(i, m)
	}
	return sealed
}

// sealedSum waits for n walgen results and adds their fingerprints.
func sealedSum(sealed chan walgenResult, n int) rowsum.Sum {
	var want rowsum.Sum
	for i := 0; i < n; i++ {
		w := <-sealed
		want.Merge(w.Fingerprint)
	}
	return want
}

// stopAll stops ms with SIGTERM and waits for each.
func stopAll(ms []*member) {
	for _, m := range ms {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		_ = m.cmd.Wait()
	}
}

// exactlyOnce checks that the table holds exactly the rows walgen sealed, through iceberg-go and DuckDB.
func exactlyOnce(t *testing.T, s *site, want rowsum.Sum) {
	t.Helper()
	if got := s.tableSum("events"); got != want {
		t.Fatalf("table holds %d rows (sum %d), walgen sealed %d (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
}

// groupMetrics are the group commit counters of one member.
type groupMetrics struct {
	commits, conflicts, unknown, grouped, already, direct, fallbacks, fallbacksExpired, refusedNotOwner, refusedExpired float64
	answeredSecond                                                                                                      float64 // committer: already_committed or mark_ahead answers
}

func scrapeGroup(t *testing.T, m *member) groupMetrics {
	t.Helper()
	mm, err := scrapeMember(m.httpAddr)
	if err != nil {
		t.Fatalf("%s: %v", m.name, err)
	}
	return groupMetrics{
		commits:          mm.sum("siglake_group_commit_commits_total", `outcome="committed"`),
		conflicts:        mm.sum("siglake_group_commit_commits_total", `outcome="conflict"`),
		unknown:          mm.sum("siglake_group_commit_commits_total", `outcome="unknown"`),
		grouped:          mm.sum("siglake_group_commit_requests_total", `outcome="committed"`) + mm.sum("siglake_group_commit_requests_total", `outcome="already_committed"`),
		already:          mm.sum("siglake_group_commit_requests_total", `outcome="already_committed"`),
		direct:           mm.sum("siglake_group_commit_requests_total", `outcome="direct"`),
		fallbacks:        mm.sum("siglake_group_commit_fallbacks_total", ""),
		fallbacksExpired: mm.sum("siglake_group_commit_fallbacks_total", `reason="expired"`),
		refusedNotOwner:  mm.sum("siglake_group_commit_refused_total", `reason="not_owner"`),
		refusedExpired:   mm.sum("siglake_group_commit_refused_total", `reason="expired"`),
		answeredSecond: mm.sum("siglake_group_commit_answers_total", `outcome="already_committed"`) +
			mm.sum("siglake_group_commit_answers_total", `outcome="mark_ahead"`),
	}
}

// committer waits until a member of ms has committed a group and returns it.
func committer(t *testing.T, ms []*member, timeout time.Duration) *member {
	t.Helper()
	var c *member
	waitUntil(t, "a committer to commit a group", timeout, func() (bool, string) {
		for _, m := range ms {
			mm, err := scrapeMember(m.httpAddr)
			if err == nil && mm.sum("siglake_group_commit_commits_total", `outcome="committed"`) > 0 {
				c = m
				return true, ""
			}
		}
		return false, "no group commit yet"
	})
	return c
}

// drained waits until every member in ms shows an empty backlog.
func drained(t *testing.T, ms []*member, timeout time.Duration) {
	t.Helper()
	waitUntil(t, "every member to drain its WAL", timeout, func() (bool, string) {
		for _, m := range ms {
			r, err := status(m.httpAddr)
			if err != nil {
				return false, err.Error()
			}
			if r.Backlog.Segments != 0 {
				return false, fmt.Sprintf("%s: %d segments", m.name, r.Backlog.Segments)
			}
		}
		return true, ""
	})
}

// rewritesCommitted is the rewrites each member of ms has committed so far.
func rewritesCommitted(t *testing.T, ms []*member) map[*member]float64 {
	t.Helper()
	out := map[*member]float64{}
	for _, m := range ms {
		out[m] = memberMetrics(t, m).sum("siglake_compactor_rewrites_total", `outcome="committed"`)
	}
	return out
}

// rewroteThrough waits until the members of ms together committed a rewrite since before (what
// rewritesCommitted said when the fault began): maintenance ran beside the group commits through
// the fault, on the same table. On a loaded machine the first may come after the WALs drained.
func rewroteThrough(t *testing.T, ms []*member, before map[*member]float64) {
	t.Helper()
	waitUntil(t, "a rewrite committed through the fault", 120*time.Second, func() (bool, string) {
		var n float64
		for m, now := range rewritesCommitted(t, ms) {
			n += now - before[m]
		}
		return n > 0, fmt.Sprintf("%v rewrites committed since the fault began", n)
	})
}

// snapshots counts the table's snapshots (expiry keeps far more than these tests make).
func (s *site) snapshots(name string) int {
	tbl, _ := s.table(name)
	return len(tbl.Metadata().Snapshots())
}

func TestGroupCommitCluster(t *testing.T) {
	s := newSite(t)
	start := time.Now()
	ms, sealed := groupCluster(t, s, 3, 800, 12)
	want := sealedSum(sealed, len(ms))
	// Then the first member's stream (one stream a WAL dir, one walgen at a time) keeps batches
	// coming for 40 s: the committer publishes its complete-through watermark only in a group
	// commit made after it owned the table for a liveness window (3 batch periods), which the
	// 12 s feed alone may not outlast under load.
	trickle := make(chan walgenResult, 1)
	go func() {
		var stderr strings.Builder
		cmd := exec.Command(bin, "walgen", "--wal-dir", ms[0].wal, "--stream", ms[0].name, "--rows", "2000",
			"--seed", "97", "--batch-rows", "50", "--segment-mb", "0.05", "--rate", "50", "--json")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		var w walgenResult
		if err == nil {
			err = json.Unmarshal(out, &w)
		}
		if err != nil {
			t.Errorf("walgen trickle: %v: %s", err, stderr.String())
		}
		trickle <- w
	}()
	checkCompleteThrough(t, s, ms, start)
	want.Merge(sealedSum(trickle, 1))
	drained(t, ms, 90*time.Second)
	var grouped, direct, batches, commits, owner float64
	for _, m := range ms {
		mm, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		grouped += mm.sum("siglake_group_commit_requests_total", `outcome="committed"`) +
			mm.sum("siglake_group_commit_requests_total", `outcome="already_committed"`)
		direct += mm.sum("siglake_group_commit_requests_total", `outcome="direct"`)
		batches += mm.sum("siglake_drain_commits_total", `outcome="committed"`)
		c := mm.sum("siglake_group_commit_commits_total", `outcome="committed"`)
		commits += c
		if c > 0 {
			owner++
		}
		r, err := status(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if r.GroupCommit == nil || !r.GroupCommit.Enabled {
			t.Errorf("%s: group commit not on in /debug/status: %+v", m.name, r.GroupCommit)
		}
	}
	checkGroupStatus(t, ms)
	stopAll(ms)
	snaps := s.snapshots("events")
	t.Logf("%v batches: %v through a committer, %v direct; %v group commits by %v committer(s); %d snapshots", batches, grouped, direct, commits, owner, snaps)
	if grouped == 0 || commits == 0 {
		t.Fatalf("no batch went through a committer (%v grouped, %v group commits)", grouped, commits)
	}
	if float64(snaps) >= batches {
		t.Fatalf("%d snapshots for %v batches: group commit did not batch the pods' commits", snaps, batches)
	}
	exactlyOnce(t, s, want)
}

// checkGroupStatus checks what the members show of group commit: the owner of events lists it
// among the tables it commits, with a last commit; a pod's `siglake status` prints the GROUP COMMIT
// block naming that owner as the table's committer.
func checkGroupStatus(t *testing.T, ms []*member) {
	t.Helper()
	var owner *member
	for _, m := range ms {
		r, err := status(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if r.GroupCommit == nil || r.GroupCommit.Committer == nil {
			continue
		}
		for _, ct := range r.GroupCommit.Committer.Tables {
			if ct.Table == "events" {
				if ct.LastCommit == nil || ct.LastCommit.Requests == 0 {
					t.Fatalf("%s commits events but shows no last commit: %+v", m.name, ct)
				}
				owner = m
			}
		}
	}
	if owner == nil {
		t.Fatal("no member lists events under group_commit.committer.tables in /debug/status")
	}
	for _, m := range ms {
		if m == owner {
			continue
		}
		out, err := exec.Command(bin, "status", "--addr", m.httpAddr).CombinedOutput()
		if err != nil {
			t.Fatalf("siglake status of %s: %v\n%s", m.name, err, out)
		}
		text := string(out)
		if !strings.Contains(text, "GROUP COMMIT  on") || !regexp.MustCompile(`(?m)^events +`+owner.name+` `).MatchString(text) {
			t.Fatalf("siglake status of %s lacks the GROUP COMMIT block naming %s the committer of events:\n%s", m.name, owner.name, text)
		}
		return
	}
}

// checkCompleteThrough checks the complete-through watermark end to end: the committer of events
// published siglake.complete-through over the pods' streams, at a seal time of this run, and its
// gauge says the same time.
func checkCompleteThrough(t *testing.T, s *site, ms []*member, start time.Time) {
	t.Helper()
	// Read as docs/format/table-properties.md documents it, not through the committer's codec.
	var ct struct {
		Version int    `json:"version"`
		TMs     int64  `json:"t_ms"`
		Streams int    `json:"streams"`
		By      string `json:"by"`
	}
	l, err := lake.Open(context.Background(), s.lakeConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	waitUntil(t, "the committer to publish siglake.complete-through", 90*time.Second, func() (bool, string) {
		tbl, err := l.LoadTable(context.Background(), "events")
		if err != nil {
			return false, err.Error()
		}
		raw, ok := tbl.Properties()[tableprops.CompleteThrough]
		if err := json.Unmarshal([]byte(raw), &ct); !ok || err != nil || ct.Version != 1 {
			return false, fmt.Sprintf("siglake.complete-through %q: %v", raw, err)
		}
		return true, ""
	})
	at := time.UnixMilli(ct.TMs)
	if ct.Streams < 1 || at.Before(start.Add(-time.Minute)) || at.After(time.Now()) {
		t.Fatalf("siglake.complete-through %+v (%v): want over the pods' streams, at a time of this run (started %v)", ct, at, start)
	}
	var gauge float64
	for _, m := range ms {
		mm, err := scrapeMember(m.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if m.name == ct.By {
			gauge = mm.sum("siglake_table_complete_through_timestamp_seconds", `table="events"`)
		}
	}
	// The gauge is the committer's watermark at its last round, the property that of its last
	// commit (and never moved back): close to each other, not equal.
	if math.Abs(gauge-float64(ct.TMs)/1000) > 60 || gauge > float64(time.Now().Unix()+1) {
		t.Fatalf("%s's siglake_table_complete_through_timestamp_seconds{table=\"events\"} = %v, the property says %v", ct.By, gauge, at)
	}
}

// TestGroupCommitCommitterSIGKILL: the committer is killed with SIGKILL while the pods keep
// handing batches to it; they fall back or move to the new owner, and every row lands once.
func TestGroupCommitCommitterSIGKILL(t *testing.T) {
	s := newSite(t)
	ms, sealed := groupCluster(t, s, 3, 600, 14)
	victim := committer(t, ms, 60*time.Second)
	var rest []*member
	for _, m := range ms {
		if m != victim {
			rest = append(rest, m)
		}
	}
	before := rewritesCommitted(t, rest)
	_ = victim.cmd.Process.Signal(syscall.SIGKILL)
	_ = victim.cmd.Wait()
	want := sealedSum(sealed, len(ms))
	drained(t, rest, 120*time.Second)
	rewroteThrough(t, rest, before) // the new owner maintains the table it now commits
	stopAll(rest)
	// The killed member's WAL holds what it had not committed: drain it now.
	(&site{t: t, wal: victim.wal, catalog: s.catalog, warehouse: s.warehouse}).drainOnce()
	exactlyOnce(t, s, want)
}

// TestGroupCommitCommitterSIGSTOP: the committer is frozen with SIGSTOP while the pods keep
// handing batches to it (memberlist's streams wait in its socket buffers), until the others see it
// dead and the table's lease moves; the pods fall back or hand off to the new owner. Then SIGCONT:
// the old committer wakes with those requests and its own pod's hand-offs in flight, still
// believing it owns the table, so two committers hold batches of the same streams. Woken past the
// hand-off age bound (orphans.HandoffMaxAge: 6 x --commit-timeout), it refuses them as expired;
// woken before it, it commits them and the marks answer already_committed or mark_ahead. Nothing
// lands twice either way, and maintenance rewrites the table through it.
func TestGroupCommitCommitterSIGSTOP(t *testing.T) {
	t.Run("woken past the hand-off age", func(t *testing.T) { stopCommitter(t, 2*time.Second, true) })
	t.Run("woken before it", func(t *testing.T) { stopCommitter(t, 8*time.Second, false) })
}

func stopCommitter(t *testing.T, commitTimeout time.Duration, pastAge bool) {
	s := newSite(t)
	handoffMaxAge := orphans.HandoffMaxAge(commitTimeout)
	ms, sealed := groupCluster(t, s, 3, 600, 16, "--commit-timeout", commitTimeout.String(), "--group-commit-fallback-after", "4s",
		"--group-commit-max-wait", "0") // a pod's answer timeout (2.6 s at 200 ms) stays below the 4 s fallback bound
	victim := committer(t, ms, 60*time.Second)
	var rest []*member
	before := map[*member]groupMetrics{}
	for _, m := range ms {
		before[m] = scrapeGroup(t, m)
		if m != victim {
			rest = append(rest, m)
		}
	}
	rewritesBefore := rewritesCommitted(t, ms)
	_ = victim.cmd.Process.Signal(syscall.SIGSTOP)
	stopped := time.Now()
	t.Cleanup(func() { _ = victim.cmd.Process.Signal(syscall.SIGCONT) })
	moved := waitUntil(t, "the others to move events' lease off the stopped committer", 30*time.Second, func() (bool, string) {
		o := owners(rest, "events")
		for _, m := range rest {
			if o[m.name] == "" || o[m.name] == victim.name {
				return false, fmt.Sprint(o)
			}
		}
		return true, ""
	})
	// The pods must not wait for the frozen committer: each falls back or hands off to the new owner.
	waitUntil(t, "a pod to fall back or the new owner to commit a group", 30*time.Second, func() (bool, string) {
		for _, m := range rest {
			g := scrapeGroup(t, m)
			if g.fallbacks > before[m].fallbacks || g.commits > before[m].commits {
				return true, ""
			}
		}
		return false, "no fallback, no group commit by another member"
	})
	if pastAge {
		time.Sleep(time.Until(stopped.Add(handoffMaxAge + time.Second)))
	} else {
		// Long enough for the pods to give up on what the frozen committer holds (an answer
		// timeout, then a resend to the new owner or a fallback after 4 s), young enough to commit.
		time.Sleep(time.Until(stopped.Add(10 * time.Second)))
	}
	if slept := time.Since(stopped); !pastAge && slept > handoffMaxAge-10*time.Second {
		t.Fatalf("the committer slept %s, too close to the hand-off age bound %s for the requests it holds to be committed", slept, handoffMaxAge)
	}
	atWake := map[*member]groupMetrics{}
	for _, m := range rest {
		atWake[m] = scrapeGroup(t, m)
	}
	_ = victim.cmd.Process.Signal(syscall.SIGCONT)
	t.Logf("committer %s stopped for %s; lease moved in %s", victim.name, time.Since(stopped).Round(time.Millisecond), moved)
	want := sealedSum(sealed, len(ms))
	drained(t, ms, 90*time.Second)
	rewroteThrough(t, ms, rewritesBefore)
	committers := 0
	var fallbacks, redirected float64
	for _, m := range ms {
		g := scrapeGroup(t, m)
		if g.commits > 0 {
			committers++
		}
		if m != victim {
			fallbacks += atWake[m].fallbacks - before[m].fallbacks
			redirected += atWake[m].commits - before[m].commits
		}
		t.Logf("%s: %v group commits (%v conflict, %v unknown), %v batches grouped (%v found by their marks), %v direct, %v fallbacks (%v expired), refused %v not_owner %v expired; answered %v already committed by another writer",
			m.name, g.commits, g.conflicts, g.unknown, g.grouped, g.already, g.direct, g.fallbacks, g.fallbacksExpired, g.refusedNotOwner, g.refusedExpired, g.answeredSecond)
	}
	woke := scrapeGroup(t, victim)
	t.Logf("while %s slept: %v fallbacks, %v group commits by the others; after it woke it committed %v more groups; %d members committed groups",
		victim.name, fallbacks, redirected, woke.commits-before[victim].commits, committers)
	if fallbacks+redirected == 0 {
		t.Fatal("no pod fell back and no other member committed a group while the committer was stopped")
	}
	if pastAge {
		// What reached the frozen committer before the lease moved, and its own pod's hand-off in
		// flight, are past the hand-off age when it wakes: refused or given up as expired.
		if woke.refusedExpired+woke.fallbacksExpired == 0 {
			t.Fatalf("%s woke after %s with nothing expired: it held no request older than a committer takes", victim.name, handoffMaxAge)
		}
	} else if woke.answeredSecond == before[victim].answeredSecond {
		// Young enough to commit, the requests it held were committed meanwhile by their pods or
		// the new owner: the woken committer must have met their marks.
		t.Fatalf("%s woke and found no batch already committed by another writer: it held none of the batches the others committed", victim.name)
	}
	stopAll(ms)
	exactlyOnce(t, s, want)
}

// TestGroupCommitDoubleOwner: two gossip clusters with the same key that never join each other
// (as a partition would leave them) share one catalog; each elects its own owner of events, so two
// committers commit groups of their own pods onto one table at once. Every row lands once.
func TestGroupCommitDoubleOwner(t *testing.T) {
	s := newSite(t)
	var islands [][]*member
	var all []*member
	for c := 0; c < 2; c++ {
		var ms []*member
		for i := 0; i < 2; i++ {
			ms = append(ms, newMember(t, s, fmt.Sprintf("island%d-%d", c, i), 2*c+i))
		}
		startGroup(t, s, ms, gossipKey(7))
		islands, all = append(islands, ms), append(all, ms...)
	}
	sealed := feed(t, all, 500, 14, 80)
	var cs []*member
	for _, ms := range islands {
		cs = append(cs, committer(t, ms, 60*time.Second))
	}
	rewritesBefore := rewritesCommitted(t, all)
	// Both commit again after both have committed: the two committers overlap in time.
	seen := []float64{scrapeGroup(t, cs[0]).commits, scrapeGroup(t, cs[1]).commits}
	waitUntil(t, "both committers to commit again", 30*time.Second, func() (bool, string) {
		a, b := scrapeGroup(t, cs[0]).commits, scrapeGroup(t, cs[1]).commits
		return a > seen[0] && b > seen[1], fmt.Sprintf("%s %v, %s %v group commits", cs[0].name, a, cs[1].name, b)
	})
	want := sealedSum(sealed, len(all))
	drained(t, all, 90*time.Second)
	rewroteThrough(t, all, rewritesBefore) // two owners maintain too: their replaces conflict, never lose rows
	for c, ms := range islands {
		var commits float64
		for _, m := range ms {
			g := scrapeGroup(t, m)
			commits += g.commits
			t.Logf("%s: %v group commits (%v conflict, %v unknown), %v batches grouped, %v direct, %v fallbacks",
				m.name, g.commits, g.conflicts, g.unknown, g.grouped, g.direct, g.fallbacks)
		}
		if commits == 0 {
			t.Fatalf("island %d committed no group", c)
		}
	}
	t.Logf("committers %s and %s", cs[0].name, cs[1].name)
	stopAll(all)
	exactlyOnce(t, s, want)
}

// TestGroupCommitRESTFaults: a keyed three-member cluster with group commit on the REST catalog
// (S3 warehouse); once a committer commits groups, the server answers commits of events with
// faults: one of each first (applied then 503, applied then cut, 409, 429), then a fault on about
// a quarter of them. Committers and pods learn lost answers from the marks; every row lands once.
func TestGroupCommitRESTFaults(t *testing.T) {
	s, srv := newRESTSite(t)
	// A commit every interval (200 ms): many group commits for the faults to meet.
	ms, sealed := groupCluster(t, s, 3, 400, 14, "--group-commit-max-wait", "0")
	committer(t, ms, 60*time.Second)
	rewritesBefore := rewritesCommitted(t, ms)
	srv.SetFaults(restcat.Faults{Tables: []string{"events"}, RetryAfter: time.Second, Seed: uint64(time.Now().UnixNano()),
		Rates: map[restcat.Fault]float64{restcat.ApplyThen503: 0.08, restcat.ApplyThenCut: 0.08, restcat.Conflict409: 0.06, restcat.Throttle429: 0.03}})
	for _, f := range restcat.AllFaults {
		srv.Inject(f, 1)
	}
	want := sealedSum(sealed, len(ms))
	drained(t, ms, 120*time.Second)
	// Maintenance runs through the faults too: its rewrites share the table with the group commits.
	rewroteThrough(t, ms, rewritesBefore)
	fired := srv.Fired()
	srv.SetFaults(restcat.Faults{})
	var commits, already, grouped float64
	for _, m := range ms {
		g := scrapeGroup(t, m)
		commits, already, grouped = commits+g.commits, already+g.already, grouped+g.grouped
		t.Logf("%s: %v group commits (%v conflict, %v unknown), %v batches grouped (%v found by their marks), %v direct, %v fallbacks",
			m.name, g.commits, g.conflicts, g.unknown, g.grouped, g.already, g.direct, g.fallbacks)
	}
	stopAll(ms)
	t.Logf("faults fired %v; REST requests %v", fired, srv.Requests())
	for _, f := range restcat.AllFaults {
		if fired[f] == 0 {
			t.Fatalf("%s never fired (fired %v, %d still queued)", f, fired, srv.Queued())
		}
	}
	// A lost answer to a group commit is resolved by the committer's next attempt, which finds the
	// marks already moved: its pods hear already_committed. Group commits (every 200 ms) far
	// outnumber rewrites, so of the lost answers (one of each injected, ~16% of the rest) some meet one.
	if commits == 0 || already == 0 {
		t.Fatalf("%v group commits, %v batches found committed by their marks: no lost answer met a committer", commits, already)
	}
	exactlyOnce(t, s, want)
}

// TestGroupCommitKilledMidCommit: on the REST catalog, the committer of events is killed with
// SIGKILL while its commit is held at the catalog: first after the commit was applied (no pod
// hears of it; the marks tell the next owner and the pods it is in), then, on the next committer,
// before it was applied (nothing lands; the pods resend to the member left). The member left
// drains, the killed members' WALs are drained after, and every row is in the table once.
func TestGroupCommitKilledMidCommit(t *testing.T) {
	s, srv := newRESTSite(t)
	ms, sealed := groupCluster(t, s, 3, 400, 40, "--group-commit-max-wait", "0")
	alive, killed := ms, []*member{}
	committer(t, ms, 60*time.Second) // every member serves /metrics by now
	rewritesBefore := rewritesCommitted(t, ms)
	for _, fault := range []restcat.Fault{restcat.ApplyThenHold, restcat.HoldBeforeApply} {
		committer(t, alive, 60*time.Second)
		srv.SetFaults(restcat.Faults{Tables: []string{"events"}})
		// Hold commits of events until the one held is a group commit (its snapshot summary counts
		// the requests it answered): the owner's rewrites and expiry commit there too.
		for tries := 0; ; tries++ {
			srv.Inject(fault, 1)
			waitUntil(t, "a commit of events held at the catalog ("+string(fault)+")", 30*time.Second, func() (bool, string) {
				return srv.Holding() == 1, fmt.Sprintf("%d held, %d injected waiting", srv.Holding(), srv.Queued())
			})
			if held := srv.Held(); len(held) == 1 && strings.Contains(held[0], tableprops.SumGroupRequests) {
				break
			}
			if tries == 10 {
				srv.Release()
				t.Fatalf("no group commit among 10 held commits of events")
			}
			srv.Release()
			waitUntil(t, "the held commit released", 10*time.Second, func() (bool, string) { return srv.Holding() == 0, "" })
		}
		// Every commit of events comes from its owner: the committer's group commits and its
		// maintainer's rewrites (pods commit directly only after the fallback bound).
		var victim *member
		o := owners(alive, "events")
		for _, m := range alive {
			if o[m.name] == m.name {
				victim = m
			}
		}
		if victim == nil {
			srv.Release()
			t.Fatalf("no member owns events: %v", o)
		}
		_ = victim.cmd.Process.Signal(syscall.SIGKILL)
		_ = victim.cmd.Wait()
		waitUntil(t, "the held commit's client to go away with "+victim.name, 10*time.Second, func() (bool, string) {
			return srv.Holding() == 0, "still held: the holder was not the owner"
		})
		t.Logf("%s killed with its commit of events held (%s)", victim.name, fault)
		killed = append(killed, victim)
		alive = slices.DeleteFunc(slices.Clone(alive), func(m *member) bool { return m == victim })
	}
	if f := srv.Fired(); f[restcat.ApplyThenHold] < 1 || f[restcat.HoldBeforeApply] < 1 {
		t.Fatalf("faults fired %v, want a hold of each kind", f)
	}
	want := sealedSum(sealed, len(ms))
	drained(t, alive, 120*time.Second)
	rewroteThrough(t, alive, rewritesBefore) // the member left owns events now: it maintains it too
	stopAll(alive)
	for _, m := range killed {
		(&site{t: t, wal: m.wal, catalog: s.catalog, warehouse: s.warehouse, extraEnv: s.extraEnv}).drainOnce()
	}
	exactlyOnce(t, s, want)
}
