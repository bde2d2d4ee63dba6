package sidecar

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/orphans"
)

// startMember starts a gossip member on 127.0.0.1 with fast timings, joining join if given.
func startMember(t *testing.T, name string, keys [][]byte, migration string, groupCommit bool, join ...string) *gossip.Cluster {
	t.Helper()
	cfg := gossip.DefaultConfig()
	cfg.NodeName, cfg.BindAddr, cfg.BindPort, cfg.Join = name, "127.0.0.1", 0, join
	cfg.Keys, cfg.KeyMigration, cfg.Label, cfg.GroupCommit = keys, migration, "gc-test", groupCommit
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.GossipInterval = 200*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
	cfg.PushPullInterval, cfg.TCPTimeout, cfg.RejoinInterval = time.Second, 2*time.Second, time.Second
	cfg.SettlePeriod, cfg.DeadNodeReclaimTime, cfg.SuspicionMult = 300*time.Millisecond, time.Second, 3
	c, err := gossip.Start(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Shutdown() })
	if err := c.SetCatalog("cat-1", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestGroupClusterOverGossip: on a real keyed two-member cluster, the adapter names as a table's
// committer its lease owner when that owner advertises group commit, and none when it does not;
// Owns agrees with the leases of the namespace; messages go both ways with the sender's name.
func TestGroupClusterOverGossip(t *testing.T) {
	key := [][]byte{bytes.Repeat([]byte{7}, 32)}
	a := startMember(t, "node-a", key, "", true)
	b := startMember(t, "node-b", key, "", false, a.Addr())
	ga, gb := groupCluster{a, "logs"}, groupCluster{b, "logs"}

	// Tables until each member owns one, and every table has exactly one settled owner.
	byOwner := map[string]string{}
	waitUntil(t, "a settled owner of one table per member", func() bool {
		byOwner = map[string]string{}
		for i := range 32 {
			table := fmt.Sprintf("t%d", i)
			switch oa, ob := ga.Owns(table), gb.Owns(table); {
			case oa && ob:
				return false
			case oa:
				byOwner["node-a"] = table
			case ob:
				byOwner["node-b"] = table
			}
		}
		return len(byOwner) == 2
	})
	onA, onB := byOwner["node-a"], byOwner["node-b"]
	for _, g := range []groupCluster{ga, gb} {
		if m, ok := g.Committer(onA); !ok || m != "node-a" {
			t.Errorf("%s: committer of %s (owned by node-a, which runs group commit) = %q %v", g.Name(), onA, m, ok)
		}
		if m, ok := g.Committer(onB); ok {
			t.Errorf("%s: committer of %s (owned by node-b, which does not run group commit) = %q, want none", g.Name(), onB, m)
		}
	}
	if ga.Owns(onB) || gb.Owns(onA) || !ga.Owns(onA) || !gb.Owns(onB) {
		t.Fatalf("Owns disagrees with the leases: a owns %s, b owns %s", onA, onB)
	}
	if ga.Catalog() != "cat-1" || !ga.Authenticated() || !gb.Authenticated() {
		t.Fatalf("catalog %q, authenticated %v %v", ga.Catalog(), ga.Authenticated(), gb.Authenticated())
	}

	got := make(chan string, 4)
	ga.Handle('G', func(from string, msg []byte) { got <- from + ":" + string(msg) })
	if err := gb.Send(ga.Name(), []byte("Grequest")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-got:
		if m != "node-b:Grequest" {
			t.Fatalf("received %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the message did not arrive")
	}
	if on, why := groupCommitEnabled(config.Config{GroupCommit: true}, a); !on {
		t.Fatalf("keyed cluster: off (%s)", why)
	}
}

// TestGroupCommitEnabledReasons: each reason group commit is off, on real members.
func TestGroupCommitEnabledReasons(t *testing.T) {
	key := [][]byte{bytes.Repeat([]byte{9}, 16)}
	keyed := startMember(t, "keyed", key, "", true)
	keyless := startMember(t, "keyless", nil, "", true)
	migrating := startMember(t, "migrating", key, gossip.KeyMigrationAccept, true)
	on := config.Config{GroupCommit: true}
	for _, tc := range []struct {
		cfg  config.Config
		c    *gossip.Cluster
		want string
	}{
		{config.Config{}, keyed, groupCommitOff},
		{on, nil, groupCommitNoGossip},
		{on, keyless, groupCommitNoKey},
		{on, migrating, groupCommitKeyMigration},
		{on, keyed, ""},
	} {
		got, why := groupCommitEnabled(tc.cfg, tc.c)
		if got != (tc.want == "") || why != tc.want {
			t.Errorf("%+v: %v %q, want %q", tc.cfg, got, why, tc.want)
		}
	}
}

// TestGroupCommitReport: /debug/status says whether group commit is on and why not, and carries
// the pod's and the committer's status once they run.
func TestGroupCommitReport(t *testing.T) {
	cfg := config.Config{GroupCommit: true, GroupCommitInterval: 1500 * time.Millisecond}
	p := &Process{Cfg: cfg, Status: NewStatus("node-a", config.RoleAll, "v", time.Now())}
	report := func() *GroupCommitReport {
		p.publishGroupCommit()
		return p.Status.Snapshot(time.Now()).GroupCommit
	}
	if r := report(); r.Enabled || r.DisabledReason != groupCommitNoGossip || r.IntervalSeconds != 1.5 || r.Pod != nil || r.Committer != nil {
		t.Fatalf("without gossip: %+v", r)
	}
	p.cluster = startMember(t, "node-a", [][]byte{bytes.Repeat([]byte{3}, 32)}, "", true)
	if r := report(); r.Enabled || r.DisabledReason != groupCommitNotRunning {
		t.Fatalf("keyed, nothing started: %+v", r)
	}
	g := groupCluster{p.cluster, "logs"}
	p.groupClient = commit.NewClient(commit.ClientConfig{Observer: commit.NopObserver{}}, g, g)
	p.committer = commit.NewCommitter(commit.CommitterConfig{Observer: commit.NopObserver{}}, g, g)
	r := report()
	if !r.Enabled || r.DisabledReason != "" || r.Pod == nil || r.Committer == nil {
		t.Fatalf("running: %+v", r)
	}
	js, err := json.Marshal(p.Status.Snapshot(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), `"group_commit":{"enabled":true,"election":"gossip","interval_seconds":1.5,"pod":{`) || !strings.Contains(string(js), `"committer":{"tables":`) {
		t.Fatalf("/debug/status: %s", js)
	}
}

// TestMarkPruneAfterOutlivesRequests: a --mark-prune-after shorter than twice gc's floor under
// --commit-timeout is raised to it (a mark outlives every request a committer may hold); 0 stays
// 0 (never) and a longer one stays.
func TestMarkPruneAfterOutlivesRequests(t *testing.T) {
	for _, c := range []struct{ after, timeout, want time.Duration }{
		{7 * 24 * time.Hour, 24 * time.Hour, 2 * orphans.FloorMin(24*time.Hour)},
		{0, 24 * time.Hour, 0},
		{7 * 24 * time.Hour, 2 * time.Minute, 7 * 24 * time.Hour},
	} {
		p := &Process{Cfg: config.Config{MarkPruneAfter: c.after, CommitTimeout: c.timeout}, Log: zap.NewNop()}
		if got := p.markPruneAfter(); got != c.want {
			t.Errorf("prune after %v, commit timeout %v: %v, want %v", c.after, c.timeout, got, c.want)
		}
	}
}

// pruneCount is an observer counting the marks it is told were pruned.
type pruneCount struct {
	commit.NopObserver
	n int
}

func (p *pruneCount) MarksPruned(_ string, n int) { p.n += n }

// TestGroupCommitMarkPruneRetried: the committer's hourly prune is spent only by a group commit
// that landed. A commit that failed carried a prune; the next commit prunes again, and once one
// landed the next hour's commits do not.
func TestGroupCommitMarkPruneRetried(t *testing.T) {
	env := testlake.New(t)
	env.SealRows("events", 1, 100, 1, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	env.DrainAll()
	now := time.Now()
	stale := strconv.FormatInt(now.Add(-30*24*time.Hour).Unix(), 10)
	for k, v := range map[string]string{marks.PropertyPrefix + "gone": "1:1", marks.SeenPrefix + "gone": stale} {
		if err := env.Lake.SetProperty(context.Background(), "events", k, v, false); err != nil {
			t.Fatal(err)
		}
	}
	tb := env.Table("events")
	obs := &pruneCount{}
	var cfg commit.CommitterConfig
	newMarkPruner(7*24*time.Hour, obs).install(&cfg)
	prunes := func(at time.Time) bool {
		_, remove := cfg.Props(tb, nil, at)
		return slices.Contains(remove, marks.PropertyPrefix+"gone")
	}
	if !prunes(now) {
		t.Fatal("the first commit does not prune the stale mark")
	}
	// That commit failed: Landed is not called.
	if !prunes(now.Add(time.Minute)) {
		t.Fatal("the commit after a failed one does not prune: the failed commit spent the hourly tick")
	}
	if obs.n != 0 {
		t.Fatalf("%d marks counted pruned before a commit landed", obs.n)
	}
	cfg.Landed("events")
	if obs.n != 1 {
		t.Fatalf("%d marks counted pruned after the commit landed, want 1", obs.n)
	}
	if prunes(now.Add(2 * time.Minute)) {
		t.Fatal("a commit within the hour after a landed prune prunes again")
	}
	if !prunes(now.Add(time.Minute + time.Hour)) {
		t.Fatal("no prune an hour after the landed one")
	}
}

// TestGroupCommitByClaims: without gossip, with catalog claims, group commit runs only with a
// key and an address to advertise, and says which is missing; once it runs, maintenance follows
// the committer claims: a process maintains a table only while it holds the table's claim.
func TestGroupCommitByClaims(t *testing.T) {
	env := testlake.New(t)
	env.SealRows("events", 1, 10, 1, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	env.DrainAll()
	t.Setenv("POD_IP", "")
	cfg := config.Config{GroupCommit: true, CatalogClaim: true, CatalogClaimTTL: 30 * time.Second, NodeName: "node-a", Role: config.RoleAll}
	p := &Process{Cfg: cfg, Log: zap.NewNop(), Metrics: NewMetrics(), Status: NewStatus("node-a", config.RoleAll, "v", time.Now()), httpAddr: "127.0.0.1:8080"}
	start := func() string {
		t.Helper()
		p.startGroupCommit(env.Lake, false)
		return p.groupCommitReport().DisabledReason
	}
	if on, why := groupCommitEnabled(cfg, nil); !on {
		t.Fatalf("claims without gossip: off (%s)", why)
	}
	if why := start(); why != groupCommitClaimsNoKey {
		t.Fatalf("without a key: %q", why)
	}
	p.Cfg.GossipKeyFile = filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(p.Cfg.GossipKeyFile, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{4}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if why := start(); !strings.Contains(why, "--peer-advertise") {
		t.Fatalf("without an address: %q", why)
	}
	if p.owns("events") != true {
		t.Fatal("claims not running: the process does not maintain every table, as without gossip before")
	}
	t.Setenv("POD_IP", "127.0.0.1")
	p.peerWhy = ""
	if why := start(); why != "" || p.peer == nil || p.committer == nil || p.groupClient == nil || p.peer.tr.Name() != "127.0.0.1:8080" {
		t.Fatalf("key and POD_IP: %q, peer %v", why, p.peer)
	}
	if r := p.groupCommitReport(); !r.Enabled || r.Election != "catalog_claim" {
		t.Fatalf("report %+v", r)
	}
	if p.owns("events") {
		t.Fatal("maintains events before holding its committer claim")
	}
	if err := p.peer.claims.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !p.owns("events") {
		t.Fatal("does not maintain events while holding its committer claim")
	}
	if m, ok := p.peer.members.Committer("events"); !ok || m != "127.0.0.1:8080" {
		t.Fatalf("committer of events: %q %v", m, ok)
	}
}
