package gossip

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip/keys"
)

func testKey(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func TestValidateKeysAndLabel(t *testing.T) {
	c := fastConfig("a")
	c.Keys = [][]byte{testKey(1, 16), testKey(1, 15)}
	c.Label = strings.Repeat("x", 256)
	err := c.Validate()
	for _, want := range []string{"gossip key 2 is 15 bytes (SIGLAKE_GOSSIP_KEY_FILE)", "cluster label is 256 bytes (SIGLAKE_GOSSIP_CLUSTER_LABEL): accepted: at most 255"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("Validate: %v, want %q", err, want)
		}
	}
}

// securedConfig is fastConfig with a key and a label, and a short name
// conflict hold (suspicion cap 1, push/pull every second) so the tests can
// wait for members to be established.
func securedConfig(keys [][]byte, label string) func(name string, join ...string) Config {
	return func(name string, join ...string) Config {
		c := fastConfig(name, join...)
		c.Keys = keys
		c.Label = label
		c.SuspicionMaxTimeoutMult = 1
		c.PushPullInterval = raceSlowdown * time.Second
		return c
	}
}

// holdsOut runs for d and fails the test if any keyed member sees more or
// fewer alive members than the keyed ones, if a table does not have exactly
// one owner among them, or if any lease moves.
func holdsOut(t *testing.T, tc *testCluster, tables []string, d time.Duration) {
	t.Helper()
	before := map[string]uint64{}
	for _, m := range tc.live() {
		before[m.Name()] = m.Stats().LeaseTransitions
	}
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if ok, why := tc.converged(tables); !ok {
			t.Fatalf("keyed members disturbed: %s", why)
		}
		tc.assertOneOwnerEach(tables)
		for _, m := range tc.live() {
			if n := m.Stats().LeaseTransitions; n != before[m.Name()] {
				t.Fatalf("%s: %d lease transitions, had %d: a lease moved", m.Name(), n, before[m.Name()])
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startOutsider starts a member that is not part of tc's cluster and keeps
// trying to join every member of it.
func startOutsider(t *testing.T, tc *testCluster, cfg Config) *Cluster {
	t.Helper()
	for _, m := range tc.live() {
		cfg.Join = append(cfg.Join, m.Addr())
	}
	o, err := Start(cfg, testLogger(t).With(zap.String("test_node", "outsider")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Shutdown() })
	return o
}

// assertOutside checks that the outsider saw no member and owns nothing, and
// that the cluster refused its traffic for the given reason.
func assertOutside(t *testing.T, tc *testCluster, o *Cluster, tables []string, reason string) {
	t.Helper()
	if !o.Status().Refused {
		t.Fatal("outsider does not report that its peers refuse it")
	}
	for _, m := range o.Members() {
		if !m.Self {
			t.Fatalf("outsider sees member %s (%s)", m.Name, m.State)
		}
	}
	for _, tb := range tables {
		if o.Owns(tb) {
			t.Fatalf("outsider owns %s", tb)
		}
	}
	var refused uint64
	for _, m := range tc.live() {
		s := m.Stats()
		if reason == "label" {
			refused += s.RefusedLabel
		} else {
			refused += s.RefusedKey
		}
	}
	if refused == 0 {
		t.Fatalf("the members counted no packet refused for its %s", reason)
	}
}

// TestOutsiderCannotJoin: a process without the cluster's key, with another
// key, or with another cluster label, joins nothing and moves no lease, while
// it keeps trying to join every member.
func TestOutsiderCannotJoin(t *testing.T) {
	tables := tableNames(100)
	key, other := testKey(7, 32), testKey(8, 32)
	cases := []struct {
		name, reason string
		outsider     Config
	}{
		{"no key", "key", securedConfig(nil, "prod")("rogue")},
		{"no key, no label", "label", fastConfig("rogue")},
		{"other key", "key", securedConfig([][]byte{other}, "prod")("rogue")},
		{"other label", "label", securedConfig([][]byte{key}, "staging")("rogue")},
		{"no label", "label", securedConfig([][]byte{key}, "")("rogue")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc := startCluster(t, 3, securedConfig([][]byte{key}, "prod"))
			tc.waitConverged(tables, raceSlowdown*20*time.Second)
			time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
			tc.assertOneOwnerEach(tables)
			o := startOutsider(t, tc, c.outsider)
			o.Track(tables...)
			holdsOut(t, tc, tables, raceSlowdown*3*time.Second)
			assertOutside(t, tc, o, tables, c.reason)
			if st := o.Stats(); st.JoinFailures == 0 {
				t.Fatalf("outsider's joins did not fail: %+v", st)
			}
		})
	}
}

// TestLabelWithoutKeySeparatesClusters: two keyless clusters with different
// labels on one network stay apart.
func TestLabelWithoutKeySeparatesClusters(t *testing.T) {
	tables := tableNames(50)
	tc := startCluster(t, 2, securedConfig(nil, "blue"))
	tc.waitConverged(tables, raceSlowdown*20*time.Second)
	time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
	o := startOutsider(t, tc, securedConfig(nil, "green")("green-0"))
	holdsOut(t, tc, tables, raceSlowdown*3*time.Second)
	assertOutside(t, tc, o, tables, "label")
}

// waitEstablished waits until every live member has been with peers for a
// whole name conflict hold, so a later claim of its name cannot hold it.
func waitEstablished(t *testing.T, tc *testCluster) {
	t.Helper()
	for _, m := range tc.live() {
		m.mu.Lock()
		hold := conflictHold(m.cfg, m.v.aliveCount())
		at := m.v.peerSince.Add(hold)
		m.mu.Unlock()
		if d := time.Until(at); d > 0 {
			time.Sleep(d + 50*time.Millisecond)
		}
	}
}

// TestSameNameImpostorTakesNothing: a process that holds the key but joins
// under a member's name (a copied pod spec, or a stolen key) is refused by
// the peers, which keep the member they know, and owns nothing; the member
// it impersonates is not held by its claims for a hold window (claims that go
// on longer hold it: TestViewEstablishedHoldsOnLastingSelfConflict).
func TestSameNameImpostorTakesNothing(t *testing.T) {
	tables := tableNames(100)
	mk := securedConfig([][]byte{testKey(9, 16)}, "prod")
	tc := startCluster(t, 3, mk)
	tc.waitConverged(tables, raceSlowdown*20*time.Second)
	waitEstablished(t, tc)
	tc.assertOneOwnerEach(tables)
	victim := tc.members[1]
	o := startOutsider(t, tc, mk(victim.Name()))
	o.Track(tables...)
	holdsOut(t, tc, tables, conflictHold(mk("x"), 3)*3/4)
	if victim.Stats().NameConflicts == 0 {
		t.Fatal("the victim saw no claim of its name: the impostor never reached it")
	}
	if st := victim.Status(); st.HeldUntil.After(time.Now()) {
		t.Fatalf("victim held until %s by the impostor", st.HeldUntil)
	}
	for _, tb := range tables {
		if o.Owns(tb) {
			t.Fatalf("impostor owns %s", tb)
		}
	}
	for _, m := range tc.live() {
		for _, mm := range m.Members() {
			if mm.Name == victim.Name() && mm.Addr != victim.Addr() {
				t.Fatalf("%s knows %s at the impostor's address %s", m.Name(), mm.Name, mm.Addr)
			}
		}
	}
}

// TestKeylessImpostorCannotHold: without the key, claiming a member's name
// does not reach it even while it is new (when a conflict would still hold
// it), so it owns its tables as soon as it settles.
func TestKeylessImpostorCannotHold(t *testing.T) {
	tables := tableNames(100)
	mk := securedConfig([][]byte{testKey(10, 24)}, "prod")
	tc := startCluster(t, 3, mk)
	tc.waitConverged(tables, raceSlowdown*20*time.Second)
	victim := tc.members[2]
	o := startOutsider(t, tc, securedConfig(nil, "prod")(victim.Name()))
	time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
	holdsOut(t, tc, tables, raceSlowdown*3*time.Second)
	if n := victim.Stats().NameConflicts; n != 0 {
		t.Fatalf("victim saw %d name conflicts from a process without the key", n)
	}
	assertOutside(t, tc, o, tables, "key")
}

// TestKeyRotationKeepsLeases rotates the key under a running cluster in the
// documented order (add the new key second everywhere, make it first
// everywhere, remove the old one) and checks that no member is lost from any
// view and no lease moves at any step; afterwards a member with only the new
// key joins and one with only the old key cannot.
func TestKeyRotationKeepsLeases(t *testing.T) {
	tables := tableNames(100)
	oldKey, newKey := testKey(11, 32), testKey(12, 16)
	tc := startCluster(t, 3, securedConfig([][]byte{oldKey}, "prod"))
	tc.waitConverged(tables, raceSlowdown*20*time.Second)
	time.Sleep(fastConfig("x").SettlePeriod + 100*time.Millisecond)
	tc.assertOneOwnerEach(tables)
	for _, step := range [][][]byte{{oldKey, newKey}, {newKey, oldKey}, {newKey}} {
		for _, m := range tc.live() {
			changed, err := m.SetKeys(step)
			if err != nil || !changed {
				t.Fatalf("%s: SetKeys: changed %v, %v", m.Name(), changed, err)
			}
			// Members pick the change up one by one, as pods do.
			holdsOut(t, tc, tables, raceSlowdown*500*time.Millisecond)
		}
		if changed, err := tc.members[0].SetKeys(step); err != nil || changed {
			t.Fatalf("SetKeys again: changed %v, %v", changed, err)
		}
	}
	holdsOut(t, tc, tables, raceSlowdown*2*time.Second)
	want := keys.State{Keys: 1, Primary: keys.Fingerprint(newKey)}
	for _, m := range tc.live() {
		if got := m.Keys(); got != want {
			t.Fatalf("%s keyring %+v, want %+v", m.Name(), got, want)
		}
	}
	stale := startOutsider(t, tc, securedConfig([][]byte{oldKey}, "prod")("stale"))
	holdsOut(t, tc, tables, raceSlowdown*2*time.Second)
	assertOutside(t, tc, stale, tables, "key")
	tc.add(securedConfig([][]byte{newKey}, "prod"), 3)
	tc.waitConverged(tables, raceSlowdown*20*time.Second)
}

func TestSetKeysNeedsAKeyring(t *testing.T) {
	c, err := Start(fastConfig("plain"), testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Shutdown()
	if _, err := c.SetKeys([][]byte{testKey(1, 16)}); err != keys.ErrNoKeyring {
		t.Fatalf("SetKeys on a plaintext member: %v, want ErrNoKeyring", err)
	}
	if c.Keys() != (keys.State{}) || c.Stats().Keys != 0 {
		t.Fatalf("plaintext member reports keys %+v", c.Keys())
	}
}
