package gossip

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/siglake/siglake/gossip/joinlist"
	"github.com/siglake/siglake/gossip/lease"
)

// fastConfig has timings for tests: failures are detected in about a second
// instead of several. The settle period is short for the same reason.
func fastConfig(name string, join ...string) Config {
	c := DefaultConfig()
	c.NodeName = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.Join = join
	c.ProbeInterval = raceSlowdown * 200 * time.Millisecond
	c.ProbeTimeout = raceSlowdown * 100 * time.Millisecond
	c.SuspicionMult = 3
	c.GossipInterval = raceSlowdown * 50 * time.Millisecond
	c.PushPullInterval = raceSlowdown * 2 * time.Second
	c.TCPTimeout = raceSlowdown * time.Second
	c.RejoinInterval = raceSlowdown * time.Second
	c.SettlePeriod = raceSlowdown * 300 * time.Millisecond
	c.DeadNodeReclaimTime = raceSlowdown * time.Second
	return c
}

type testCluster struct {
	t       *testing.T
	members []*Cluster
	dead    map[string]bool
	// extra are members running in child processes (see procs_test.go).
	extra []string
}

func testLogger(t *testing.T) *zap.Logger {
	if os.Getenv("SIGLAKE_GOSSIP_TEST_LOG") != "" {
		return zaptest.NewLogger(t)
	}
	return zap.NewNop()
}

// startCluster starts n members; member 0 is the seed the others join.
func startCluster(t *testing.T, n int, mk func(name string, join ...string) Config) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, dead: map[string]bool{}}
	for i := range n {
		tc.add(mk, i)
	}
	t.Cleanup(func() {
		for _, m := range tc.members {
			_ = m.Shutdown()
		}
	})
	return tc
}

func (tc *testCluster) seedAddr() string {
	return tc.members[0].Addr()
}

func (tc *testCluster) add(mk func(name string, join ...string) Config, i int) *Cluster {
	tc.t.Helper()
	name := fmt.Sprintf("node-%02d", i)
	var cfg Config
	if len(tc.members) == 0 {
		cfg = mk(name)
	} else {
		cfg = mk(name, tc.seedAddr())
	}
	c, err := Start(cfg, testLogger(tc.t).With(zap.String("test_node", name)))
	if err != nil {
		tc.t.Fatalf("start %s: %v", name, err)
	}
	tc.members = append(tc.members, c)
	return c
}

func (tc *testCluster) live() []*Cluster {
	var out []*Cluster
	for _, m := range tc.members {
		if !tc.dead[m.Name()] {
			out = append(out, m)
		}
	}
	return out
}

// kill stops a member without a leave message: peers see a crash.
func (tc *testCluster) kill(c *Cluster) {
	tc.dead[c.Name()] = true
	if err := c.Shutdown(); err != nil {
		tc.t.Fatalf("shutdown %s: %v", c.Name(), err)
	}
}

func (tc *testCluster) names() []string {
	out := append([]string(nil), tc.extra...)
	for _, m := range tc.live() {
		if hasRole(m.cfg.Roles, RoleMaintenance) {
			out = append(out, m.Name())
		}
	}
	return out
}

// converged reports whether every live member sees exactly the live members
// alive and agrees with the lease math for every table. It returns a reason
// when not.
func (tc *testCluster) converged(tables []string) (bool, string) {
	want := tc.names()
	sort.Strings(want)
	addrs := map[string]string{}
	for _, m := range tc.live() {
		addrs[m.Name()] = m.Addr()
	}
	for _, m := range tc.live() {
		var aliveNames []string
		for _, mm := range m.Members() {
			if mm.State == StateAlive {
				aliveNames = append(aliveNames, mm.Name)
				if a, ok := addrs[mm.Name]; ok && a != mm.Addr {
					return false, fmt.Sprintf("%s sees %s at %s, it is at %s", m.Name(), mm.Name, mm.Addr, a)
				}
			}
		}
		if want := len(tc.live()) + len(tc.extra); len(aliveNames) != want {
			return false, fmt.Sprintf("%s sees %d alive, want %d", m.Name(), len(aliveNames), want)
		}
		for _, tb := range tables {
			o, _ := m.Owner(tb)
			if w := lease.Owner(tb, want); o != w {
				return false, fmt.Sprintf("%s: owner of %s is %s, want %s", m.Name(), tb, o, w)
			}
		}
	}
	return true, ""
}

func (tc *testCluster) waitConverged(tables []string, timeout time.Duration) time.Duration {
	tc.t.Helper()
	start := time.Now()
	for {
		ok, why := tc.converged(tables)
		if ok {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			tc.t.Fatalf("not converged after %s: %s", timeout, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownersNow returns, per table, the live members whose Owns is true.
func (tc *testCluster) ownersNow(tables []string) map[string][]string {
	out := map[string][]string{}
	for _, m := range tc.live() {
		for _, tb := range tables {
			if m.Owns(tb) {
				out[tb] = append(out[tb], m.Name())
			}
		}
	}
	return out
}

func (tc *testCluster) assertOneOwnerEach(tables []string) {
	tc.t.Helper()
	owners := tc.ownersNow(tables)
	for _, tb := range tables {
		if len(owners[tb]) != 1 {
			tc.t.Fatalf("table %s has owners %v, want exactly one", tb, owners[tb])
		}
	}
}

func TestClusterConvergesToOneOwnerPerTable(t *testing.T) {
	tables := tableNames(200)
	for _, n := range []int{3, 10} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			tc := startCluster(t, n, fastConfig)
			took := tc.waitConverged(tables, 20*time.Second)
			time.Sleep(fastConfig("x").SettlePeriod + 50*time.Millisecond)
			tc.assertOneOwnerEach(tables)
			// Every member's share is what the lease math gives.
			perOwner := map[string]int{}
			for tb, os := range tc.ownersNow(tables) {
				perOwner[os[0]]++
				_ = tb
			}
			t.Logf("%d members converged in %s; tables per owner %v", n, took.Round(time.Millisecond), perOwner)
			for _, m := range tc.members {
				st := m.Stats()
				if st.Members[StateAlive] != n || st.TrackedTables != len(tables) {
					t.Fatalf("%s stats %+v", m.Name(), st)
				}
				if st.OwnedTables != perOwner[m.Name()] {
					t.Fatalf("%s: stats say %d owned, Owns says %d", m.Name(), st.OwnedTables, perOwner[m.Name()])
				}
				if st.SentBytes == 0 || st.ReceivedBytes == 0 {
					t.Fatalf("%s: no gossip bytes counted: %+v", m.Name(), st)
				}
			}
		})
	}
}

// failover kills the owner of tables[0] and returns how long it took until
// (a) every survivor saw a new owner for all the victim's tables and (b)
// each of those tables had exactly one survivor whose Owns is true.
func failover(t *testing.T, tc *testCluster, tables []string, graceful bool) (detect, acting time.Duration) {
	t.Helper()
	victimName := lease.Owner(tables[0], tc.names())
	var victim *Cluster
	for _, m := range tc.live() {
		if m.Name() == victimName {
			victim = m
		}
	}
	var moved []string
	for _, tb := range tables {
		if lease.Owner(tb, tc.names()) == victimName {
			moved = append(moved, tb)
		}
	}
	// For a graceful leave the clock starts when Leave is called: peers
	// move the leases on its first announcement, while Leave still runs.
	start := time.Now()
	if graceful {
		if err := victim.Leave(2 * time.Second); err != nil {
			t.Fatalf("leave: %v", err)
		}
	}
	tc.kill(victim)
	deadline := start.Add(60 * time.Second)
	for detect == 0 || acting == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no failover within 60s (detect %s acting %s)", detect, acting)
		}
		if detect == 0 {
			seen := true
			for _, m := range tc.live() {
				for _, tb := range moved {
					if o, _ := m.Owner(tb); o == victimName {
						seen = false
					}
				}
			}
			if seen {
				detect = time.Since(start)
			}
		}
		if detect != 0 {
			owners := tc.ownersNow(moved)
			all := true
			for _, tb := range moved {
				if len(owners[tb]) != 1 {
					all = false
				}
			}
			if all {
				acting = time.Since(start)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	return detect, acting
}

// With the fast test timings (probe 200 ms, suspicion multiplier 3, settle
// 300 ms) a crashed owner's tables are taken over well within 5 s, and
// within 1.5 s after a graceful leave. docs/gossip.md has the bound for
// production timings and the measurements.
func TestClusterFailover(t *testing.T) {
	tables := tableNames(100)
	for _, n := range []int{3, 10} {
		for _, graceful := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/graceful=%v", n, graceful), func(t *testing.T) {
				tc := startCluster(t, n, fastConfig)
				tc.waitConverged(tables, 20*time.Second)
				time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
				tc.assertOneOwnerEach(tables)
				detect, acting := failover(t, tc, tables, graceful)
				t.Logf("n=%d graceful=%v: new owner seen by all after %s, acting after %s",
					n, graceful, detect.Round(time.Millisecond), acting.Round(time.Millisecond))
				bound := raceSlowdown * 5 * time.Second
				if graceful {
					bound = raceSlowdown * 1500 * time.Millisecond
				}
				if acting > bound {
					t.Fatalf("failover took %s, bound %s", acting, bound)
				}
				tc.waitConverged(tables, 10*time.Second)
				tc.assertOneOwnerEach(tables)
				// A leave is reported "left" by a survivor that got the
				// leaver's "leaving" metadata before its leave message;
				// gossip does not order the two, so require most, not all.
				sawLeft := 0
				for _, m := range tc.live() {
					st := m.Stats()
					if st.LeaseTransitions == 0 {
						t.Fatalf("%s counted no lease transition", m.Name())
					}
					if st.Members[StateLeft]+st.Members[StateDead] != 1 {
						t.Fatalf("%s: members by state %v, want one departed", m.Name(), st.Members)
					}
					if !graceful && st.Members[StateDead] != 1 {
						t.Fatalf("%s: members by state %v, want one dead", m.Name(), st.Members)
					}
					sawLeft += st.Members[StateLeft]
				}
				if graceful && 2*sawLeft < len(tc.live()) {
					t.Fatalf("only %d of %d survivors report the leaver as left", sawLeft, len(tc.live()))
				}
			})
		}
	}
}

// Adding a member moves only the tables it wins, and no table changes owner
// between members that were already there.
func TestClusterJoinMovesOnlyWonTables(t *testing.T) {
	tables := tableNames(300)
	tc := startCluster(t, 4, fastConfig)
	tc.waitConverged(tables, 20*time.Second)
	before := map[string]string{}
	for _, tb := range tables {
		before[tb], _ = tc.members[1].Owner(tb)
	}
	trBefore := map[string]uint64{}
	for _, m := range tc.members {
		trBefore[m.Name()] = m.Stats().LeaseTransitions
	}
	joiner := tc.add(fastConfig, 4)
	tc.waitConverged(tables, 20*time.Second)
	moved := 0
	for _, tb := range tables {
		after, _ := tc.members[1].Owner(tb)
		if after != before[tb] {
			moved++
			if after != joiner.Name() {
				t.Fatalf("table %s moved from %s to %s, not to the joiner", tb, before[tb], after)
			}
		}
	}
	if moved == 0 {
		t.Fatal("joiner won no table")
	}
	for _, m := range tc.members[:4] {
		if got := m.Stats().LeaseTransitions - trBefore[m.Name()]; got != uint64(moved) {
			t.Fatalf("%s counted %d transitions, %d tables moved", m.Name(), got, moved)
		}
	}
	t.Logf("joiner won %d of %d tables (fair share %d)", moved, len(tables), len(tables)/5)
	time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
	tc.assertOneOwnerEach(tables)
}

// Over a stable period no table changes owner in any member's view. The
// issue asks for a minute: SIGLAKE_LONG=1 runs 60 s, otherwise 10 s. It uses
// the production timings, which is what "stable" must hold for.
func TestClusterStableMembershipMovesNothing(t *testing.T) {
	period := 10 * time.Second
	if os.Getenv("SIGLAKE_LONG") == "1" {
		period = time.Minute
	}
	prod := func(name string, join ...string) Config {
		c := DefaultConfig()
		c.NodeName, c.BindAddr, c.BindPort, c.Join = name, "127.0.0.1", 0, join
		return c
	}
	tables := tableNames(500)
	tc := startCluster(t, 5, prod)
	tc.waitConverged(tables, 30*time.Second)
	time.Sleep(DefaultConfig().SettlePeriod)
	start := map[string]uint64{}
	for _, m := range tc.members {
		start[m.Name()] = m.Stats().LeaseTransitions
	}
	owners := tc.ownersNow(tables)
	tc.assertOneOwnerEach(tables)
	end := time.Now().Add(period)
	for time.Now().Before(end) {
		time.Sleep(500 * time.Millisecond)
		for _, m := range tc.members {
			if got := m.Stats().LeaseTransitions; got != start[m.Name()] {
				t.Fatalf("%s: %d lease transitions during a stable period", m.Name(), got-start[m.Name()])
			}
		}
	}
	after := tc.ownersNow(tables)
	for _, tb := range tables {
		if fmt.Sprint(after[tb]) != fmt.Sprint(owners[tb]) {
			t.Fatalf("table %s: owners %v -> %v", tb, owners[tb], after[tb])
		}
	}
	t.Logf("no ownership change over %s with 5 members and %d tables", period, len(tables))
}

// A member that crashes and comes back under the same name from the same
// address (a container restart in the same pod) is accepted at once; from a
// new address (a rescheduled pod) peers accept it only after the old one is
// declared dead and DeadNodeReclaimTime has passed. Meanwhile the new
// process sees the name conflict and owns nothing, so no table has two
// owners at any sampled instant.
func TestClusterRestartUnderSameName(t *testing.T) {
	for _, samePort := range []bool{true, false} {
		t.Run(fmt.Sprintf("samePort=%v", samePort), func(t *testing.T) {
			tables := tableNames(100)
			tc := startCluster(t, 3, fastConfig)
			tc.waitConverged(tables, 20*time.Second)
			old := tc.members[2]
			_, port, err := joinlist.ParseHostPort(old.Addr(), 0)
			if err != nil {
				t.Fatal(err)
			}
			tc.kill(old)
			cfg := fastConfig(old.Name(), tc.seedAddr())
			if samePort {
				cfg.BindPort = port
			}
			c, err := Start(cfg, testLogger(t).With(zap.String("test_node", "restarted")))
			if err != nil {
				t.Fatal(err)
			}
			tc.members[2] = c
			delete(tc.dead, c.Name())
			start := time.Now()
			for {
				if ok, _ := tc.converged(tables); ok {
					break
				}
				if time.Since(start) > raceSlowdown*30*time.Second {
					_, why := tc.converged(tables)
					t.Fatalf("restarted member not accepted after 30s: %s", why)
				}
				for tb, os := range tc.ownersNow(tables) {
					if len(os) > 1 {
						st := c.Status()
						t.Fatalf("table %s has owners %v while the restart settles (now %s, held until %s, join pending %v, lease %+v)",
							tb, os, time.Now().Format("15:04:05.000"), st.HeldUntil.Format("15:04:05.000"), st.JoinPending, c.Leases(tb))
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			took := time.Since(start)
			// The new process resumes its tables when its hold ends.
			deadline := time.Now().Add(conflictHold(cfg, 3) + 2*cfg.SettlePeriod)
			for {
				for tb, os := range tc.ownersNow(tables) {
					if len(os) > 1 {
						t.Fatalf("table %s has owners %v after the restart", tb, os)
					}
				}
				owners := tc.ownersNow(tables)
				ok := true
				for _, tb := range tables {
					if len(owners[tb]) != 1 {
						ok = false
					}
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					tc.assertOneOwnerEach(tables)
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("restart samePort=%v: accepted by all after %s, one owner per table after %s; name conflicts seen by the new process: %d",
				samePort, took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), c.Stats().NameConflicts)
			if !samePort && c.Stats().NameConflicts == 0 {
				t.Fatal("restart from a new address saw no name conflict")
			}
		})
	}
}

func TestClusterDrainOnlyMemberNeverOwns(t *testing.T) {
	tables := tableNames(200)
	tc := startCluster(t, 3, func(name string, join ...string) Config {
		c := fastConfig(name, join...)
		if name == "node-01" {
			c.Roles = []string{RoleDrain}
		}
		return c
	})
	tc.waitConverged(tables, 20*time.Second)
	time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
	tc.assertOneOwnerEach(tables)
	if st := tc.members[1].Stats(); st.OwnedTables != 0 || st.SettlingTables != 0 {
		t.Fatalf("drain-only member owns tables: %+v", st)
	}
	var roles []string
	for _, m := range tc.members[0].Members() {
		if m.Name == "node-01" {
			roles = m.Roles
		}
	}
	if fmt.Sprint(roles) != "[drain]" {
		t.Fatalf("drain member's roles as seen by a peer: %v", roles)
	}
}

// freePort reserves a loopback port number and releases it.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A member that starts before its peer (join target down) runs alone,
// counts join failures, and finds the peer by itself once it comes up. The
// join entry is a DNS name ("localhost"), resolved to all its addresses.
func TestClusterRejoinFindsLatePeer(t *testing.T) {
	port := freePort(t)
	cfgB := fastConfig("late-b", net.JoinHostPort("localhost", strconv.Itoa(port)))
	b, err := Start(cfgB, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for b.Stats().JoinFailures == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no join failure counted while the peer was down")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// b is alone but has peers configured: it owns only after settling.
	time.Sleep(cfgB.SettlePeriod)
	if !b.Owns("logs.events") {
		t.Fatal("a lone member with peers configured does not own after settling")
	}

	cfgA := fastConfig("early-a")
	cfgA.BindPort = port
	a, err := Start(cfgA, testLogger(t))
	if err != nil {
		t.Fatalf("start a on reserved port: %v", err)
	}
	defer a.Shutdown()
	deadline = time.Now().Add(15 * time.Second)
	for {
		st := a.Stats()
		if st.Members[StateAlive] == 2 && b.Stats().Members[StateAlive] == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("late peer not found: a %+v b %+v", st, b.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("b stats after rejoin: %+v", b.Stats())
}

func TestClusterDisabledOwnsEverything(t *testing.T) {
	cfg := DefaultConfig()
	cfg.NodeName = "solo"
	cfg.Disabled = true
	c, err := Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	for _, tb := range tableNames(20) {
		if !c.Owns(tb) {
			t.Fatalf("disabled gossip: does not own %s", tb)
		}
	}
	if err := c.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	if c.Owns("x") {
		t.Fatal("owns after Leave")
	}
}

func TestClusterNoPeersOwnsAtOnce(t *testing.T) {
	c, err := Start(fastConfig("alone"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if !c.Owns("logs.events") {
		t.Fatal("member with no peers configured does not own at once")
	}
	st := c.Status()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["self"] != "alone" || len(st.Leases) != 1 || !st.Leases[0].Active || !st.Leases[0].Local || len(st.Members) != 1 {
		t.Fatalf("status: %s", b)
	}
	if st.Members[0].Addr == "" || !st.Members[0].Self {
		t.Fatalf("self member: %+v", st.Members[0])
	}
}

func TestStartRejectsBadConfig(t *testing.T) {
	cfg := fastConfig("")
	if _, err := Start(cfg, nil); err == nil {
		t.Fatal("empty node name accepted")
	}
	cfg = fastConfig("x")
	cfg.Version = string(make([]byte, 600))
	if _, err := Start(cfg, nil); err == nil {
		t.Fatal("oversized metadata accepted")
	}
	// Two members on one port: the second fails with the address.
	a, err := Start(fastConfig("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown()
	cfg = fastConfig("b")
	_, port, err := joinlist.ParseHostPort(a.Addr(), 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BindPort = port
	if _, err := Start(cfg, nil); err == nil {
		t.Fatal("second bind of the same port succeeded")
	}
}

// Leave after Shutdown is an error, not memberlist's panic; Shutdown twice
// is fine; Leave and Shutdown may race.
func TestClusterLifecycleOrder(t *testing.T) {
	c, err := Start(fastConfig("life"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(time.Second); err == nil {
		t.Fatal("leave after shutdown succeeded")
	}
	for range 5 {
		c, err := Start(fastConfig("race"), nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { _ = c.Leave(time.Second); close(done) }()
		_ = c.Shutdown()
		<-done
		if c.Owns("t") {
			t.Fatal("owns after leave and shutdown")
		}
	}
}

// TestClusterCatalogIdentityGossiped: SetCatalog reaches the peers through memberlist's metadata
// updates. Two members with different catalogs each own every table; once both advertise the
// same catalog they split the tables between them.
func TestClusterCatalogIdentityGossiped(t *testing.T) {
	tc := startCluster(t, 2, fastConfig)
	tables := tableNames(40)
	a, b := tc.members[0], tc.members[1]
	deadline := time.Now().Add(raceSlowdown * 20 * time.Second)
	wait := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; a: %+v, b: %+v", what, a.Leases(tables[0]), b.Leases(tables[0]))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	ownsAll := func(c *Cluster) bool {
		for _, tb := range tables {
			if !c.Owns(tb) {
				return false
			}
		}
		return true
	}
	if err := a.SetCatalog("cat-a", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCatalog("cat-b", time.Second); err != nil {
		t.Fatal(err)
	}
	wait("each member to own all tables of its own catalog", func() bool { return ownsAll(a) && ownsAll(b) })
	if m := a.Members(); len(m) != 2 || m[1].Catalog != "cat-b" {
		t.Fatalf("a does not see b's catalog: %+v", m)
	}
	if err := b.SetCatalog("cat-a", time.Second); err != nil {
		t.Fatal(err)
	}
	wait("the shared catalog's tables to be split", func() bool {
		na, nb := 0, 0
		for _, tb := range tables {
			oa, _ := a.Owner(tb)
			ob, _ := b.Owner(tb)
			if oa != ob {
				return false
			}
			if oa == a.Name() {
				na++
			} else {
				nb++
			}
		}
		return na > 0 && nb > 0 && len(a.Leases(tables[0])[0].Candidates) == 2
	})
}
