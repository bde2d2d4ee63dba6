package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// Group commit without gossip (docs/group-commit.md, "Without gossip: a claim-elected
// committer"): three `siglake compactor` processes with gossip off and catalog claims on share one
// WAL root; a committer claim elects the committer of events, the others hand it their batches
// over the signed HTTP transport, and after the committer is SIGKILLed another process takes its
// claims over. Every row lands once (iceberg-go and DuckDB).

// TestGroupCommitByClaimsSIGKILL runs it on the embedded catalog.
func TestGroupCommitByClaimsSIGKILL(t *testing.T) { groupCommitByClaims(t, newSite(t)) }

// TestBackendsGroupCommitByClaims runs it on PostgreSQL + S3.
func TestBackendsGroupCommitByClaims(t *testing.T) {
	groupCommitByClaims(t, newBackendSite(t, "", ""))
}

func groupCommitByClaims(t *testing.T, s *site) {
	const ttl = 3 * time.Second
	const streams = 3
	var want rowsum.Sum
	feed := podFeed(t, s, &want, 40)
	for i := 0; i < streams; i++ {
		feed(i, 2000)
	}
	keys := filepath.Join(t.TempDir(), "keys")
	writeKeys(t, keys, gossipKey(9))
	cs := *s
	cs.extraEnv = append(append([]string(nil), s.extraEnv...), "SIGLAKE_CATALOG_CLAIM=true", "SIGLAKE_CATALOG_CLAIM_TTL="+ttl.String(),
		"SIGLAKE_GOSSIP_KEY_FILE="+keys, "POD_IP=127.0.0.1")
	procs := map[string]*running{}
	logs := map[string]chan string{}
	for i := 0; i < 3; i++ {
		name := fmt.Sprintf("node-%d", i)
		logs[name] = make(chan string, 100000)
		procs[name] = cs.start(logs[name], "--node-name", name, "--group-commit-interval", "200ms", "--recluster-interval-secs", "1")
	}
	t.Cleanup(func() { // runs before the processes are killed: a failure explains itself
		if t.Failed() {
			logClaimsRun(t, procs, logs)
		}
	})

	l, err := lake.Open(context.Background(), s.lakeConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	committer := func() (claim.Claim, bool) {
		tbl, ok, err := l.LoadClaimsTable(context.Background())
		if err != nil || !ok {
			return claim.Claim{}, false
		}
		st, err := claim.ParseCommitters(tbl.Properties())
		if err != nil {
			t.Fatal(err)
		}
		c, ok := st.Claims["events"]
		return c, ok && time.Now().Before(c.Expires)
	}
	var first claim.Claim
	waitFor(t, 60*time.Second, "a committer claim on events", func() bool {
		var ok bool
		first, ok = committer()
		return ok
	})
	holder := procs[first.Holder]
	if holder == nil || first.Addr != holder.addr {
		t.Fatalf("committer claim %+v: want one of the processes at its HTTP address", first)
	}
	// More batches from every stream go through the holder, once the others have read its claim.
	var others []string
	for name := range procs {
		if name != first.Holder {
			others = append(others, name)
		}
	}
	claimRead(t, procs, others, first.Holder, 10*ttl)
	for i := 0; i < streams; i++ {
		feed(i, 2000)
	}
	// ... the other processes' batches too: they reach it over HTTP.
	waitFor(t, 60*time.Second, "the holder's group commits of the other pods' batches", func() bool {
		handed := 0.0
		for name, p := range procs {
			if name != first.Holder {
				handed += p.scrape().sum("siglake_group_commit_requests_total", `outcome="committed"`)
			}
		}
		return handed > 0 && holder.scrape().sum("siglake_group_commit_commits_total", `outcome="committed"`) > 0
	})
	r, err := status(holder.addr)
	if err != nil {
		t.Fatal(err)
	}
	if r.GroupCommit == nil || !r.GroupCommit.Enabled || r.GroupCommit.Election != "catalog_claim" {
		t.Fatalf("holder's /debug/status group_commit: %+v", r.GroupCommit)
	}

	// SIGKILL the holder while the streams are fed; another process takes the committer claim.
	kill := time.AfterFunc(300*time.Millisecond, func() { _ = holder.cmd.Process.Signal(syscall.SIGKILL) })
	for i := 0; i < streams; i++ {
		feed(i, 2000)
	}
	kill.Stop()
	_ = holder.cmd.Process.Signal(syscall.SIGKILL)
	_ = holder.cmd.Wait()
	var next claim.Claim
	waitFor(t, 10*ttl, "another process to take events' committer claim", func() bool {
		c, ok := committer()
		next = c
		return ok && c.Holder != first.Holder
	})
	if next.Epoch <= first.Epoch {
		t.Fatalf("the committer claim changed hands without a new epoch: %+v then %+v", first, next)
	}
	// The third process's batches from its next claim read on go to the new holder, over HTTP.
	var other string
	for name := range procs {
		if name != first.Holder && name != next.Holder {
			other = name
		}
	}
	claimRead(t, procs, []string{other}, next.Holder, 10*ttl)
	grouped := func() float64 {
		return procs[other].scrape().sum("siglake_group_commit_requests_total", `outcome="committed"`)
	}
	groupedAtTakeover := grouped()
	for i := 0; i < streams; i++ {
		feed(i, 1000)
	}
	waitFor(t, 3*time.Minute, "every stream to drain", func() bool {
		for i := 0; i < streams; i++ {
			segs, err := localwal.Scan(filepath.Join(s.wal, fmt.Sprintf("pod-%d", i)))
			if err != nil || len(segs) > 0 {
				return false
			}
		}
		return true
	})
	if n := procs[next.Holder].scrape().sum("siglake_group_commit_commits_total", `outcome="committed"`); n == 0 {
		t.Fatalf("the new holder %s made no group commit", next.Holder)
	}
	if grouped() == groupedAtTakeover {
		t.Fatalf("%s's batches after the takeover never reached the new holder %s (all committed directly)", other, next.Holder)
	}
	var refused float64
	for name, p := range procs {
		if name != first.Holder {
			refused += p.scrape().sum("siglake_peer_messages_refused_total", `reason="bad_signature"`)
			p.stop()
		}
	}
	if refused != 0 {
		t.Fatalf("%v messages refused as badly signed between processes of one key", refused)
	}
	if c, ok := committer(); ok {
		t.Fatalf("a committer claim left after SIGTERM of the survivors: %+v", c)
	}
	got := s.tableSum("events")
	if got != want {
		t.Fatalf("table holds %d rows (sum %d); walgen sealed %d rows (sum %d)", got.Rows, got.Sum, want.Rows, want.Sum)
	}
	s.checkDuckDB("events")
	t.Logf("committer %s (epoch %d) killed, %s took over (epoch %d); %d rows exactly once", first.Holder, first.Epoch, next.Holder, next.Epoch, want.Rows)
}

// claimRead waits until each of the processes names has read holder's committer claim on events
// and one of them holds a stream. A process learns of a new committer at its own next claim read
// (every third of the TTL), not when the catalog shows the claim (docs/group-commit.md, "Without
// gossip"); until then it commits its batches directly, as while no live claim named a committer.
func claimRead(t *testing.T, procs map[string]*running, names []string, holder string, timeout time.Duration) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("%v to read %s's committer claim while one of them holds a stream", names, holder), timeout, func() (bool, string) {
		read, streams, seen := true, 0, map[string]string{}
		for _, name := range names {
			r, err := status(procs[name].addr)
			if err != nil || r.Claims == nil || r.CommitterClaims == nil {
				return false, fmt.Sprintf("%s: %v", name, err)
			}
			seen[name] = r.CommitterClaims.Others["events"]
			read = read && seen[name] == holder
			streams += len(r.Claims.Held)
		}
		return read && streams > 0, fmt.Sprintf("events' committer as each sees it %v, streams held %d", seen, streams)
	})
}

// logClaimsRun prints, for each process, its hand-off counters and its claims as it sees them
// (while it runs), then its log lines about claims, hand-offs and drained batches: which process
// drained which stream when, and where its batches went.
func logClaimsRun(t *testing.T, procs map[string]*running, logs map[string]chan string) {
	for name, p := range procs {
		if code, body := p.get("/metrics"); code == http.StatusOK { // not scrape: no Fatal in a cleanup
			m := metrics(body)
			t.Logf("%s: requests committed %v, already_committed %v, direct %v; fallbacks no_committer %v, timeout %v, refused %v; group commits %v",
				name, m.sum("siglake_group_commit_requests_total", `outcome="committed"`),
				m.sum("siglake_group_commit_requests_total", `outcome="already_committed"`),
				m.sum("siglake_group_commit_requests_total", `outcome="direct"`),
				m.sum("siglake_group_commit_fallbacks_total", `reason="no_committer"`),
				m.sum("siglake_group_commit_fallbacks_total", `reason="timeout"`),
				m.sum("siglake_group_commit_fallbacks_total", `reason="refused"`),
				m.sum("siglake_group_commit_commits_total", `outcome="committed"`))
			if r, err := status(p.addr); err == nil {
				t.Logf("%s: stream claims %+v; committer claims %+v", name, r.Claims, r.CommitterClaims)
			}
		}
		var out []string
		for len(logs[name]) > 0 {
			l := <-logs[name]
			for _, sub := range []string{"claim", "group commit", "drained batch", "fallback"} {
				if strings.Contains(l, sub) {
					out = append(out, l)
					break
				}
			}
		}
		t.Logf("%s's log about claims, hand-offs and batches (last 120 lines):\n%s", name, strings.Join(out[max(len(out)-120, 0):], "\n"))
	}
}
