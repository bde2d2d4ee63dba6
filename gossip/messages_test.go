package gossip

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/siglake/siglake/gossip/internal/nodemeta"
	"github.com/siglake/siglake/gossip/usermsg"
)

type received struct{ to, from, msg string }

// collect registers a handler for kind on each member that records what it
// gets; the handler never blocks (a full channel fails the test later).
func collect(kind byte, ms ...*Cluster) chan received {
	ch := make(chan received, 64)
	for _, m := range ms {
		m.Handle(kind, func(from string, msg []byte) {
			select {
			case ch <- received{m.Name(), from, string(msg)}:
			default:
			}
		})
	}
	return ch
}

func waitMsg(t *testing.T, ch chan received) received {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(raceSlowdown * 5 * time.Second):
		t.Fatal("no message arrived")
		return received{}
	}
}

// rawSend sends wire to target's gossip address from o's memberlist,
// whether or not o is a member of target's cluster.
func rawSend(t *testing.T, o, target *Cluster, wire []byte) {
	t.Helper()
	host, port, err := net.SplitHostPort(target.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	_ = o.ml.SendReliable(&memberlist.Node{Name: target.Name(), Addr: net.ParseIP(host), Port: uint16(p)}, wire)
}

// TestMessagesBothWays: two keyed members exchange messages both ways and to
// themselves; each handler sees its kind, the payload and the sender; a kind
// nobody handles is dropped and counted; a member that is not alive is a
// clear error at once.
func TestMessagesBothWays(t *testing.T) {
	tc := startCluster(t, 2, securedConfig([][]byte{testKey(7, 32)}, "prod"))
	tc.waitConverged(tableNames(5), raceSlowdown*20*time.Second)
	a, b := tc.members[0], tc.members[1]
	if !a.Authenticated() || !b.Authenticated() {
		t.Fatal("keyed members are not Authenticated")
	}
	ch := collect('G', a, b)
	other := collect('H', a, b)
	for _, x := range []struct{ from, to *Cluster }{{a, b}, {b, a}, {a, a}} {
		msg := "G" + x.from.Name() + "->" + x.to.Name()
		if err := x.from.Send(x.to.Name(), []byte(msg)); err != nil {
			t.Fatalf("send %s: %v", msg, err)
		}
		if r := waitMsg(t, ch); r != (received{x.to.Name(), x.from.Name(), msg}) {
			t.Fatalf("got %+v for %q", r, msg)
		}
	}
	if err := a.Send(b.Name(), []byte("Hsecond kind")); err != nil {
		t.Fatal(err)
	}
	if r := waitMsg(t, other); r != (received{b.Name(), a.Name(), "Hsecond kind"}) {
		t.Fatalf("kind H: got %+v", r)
	}

	if err := a.Send(b.Name(), []byte("Zno handler")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unknown kind to be counted", func() bool { return b.Stats().Messages.UnknownKind == 1 })
	if s := b.Stats().Messages; s.Received != 2 || s.Malformed != 0 || len(ch)+len(other) != 0 {
		t.Fatalf("b's message stats %+v, %d messages queued", s, len(ch)+len(other))
	}

	if err := a.Send("nobody", []byte("Gx")); !errors.Is(err, usermsg.ErrNoMember) {
		t.Fatalf("send to an unknown member: %v", err)
	}
	if err := a.Send(b.Name(), nil); err == nil {
		t.Fatal("empty message sent")
	}
	if err := b.Leave(time.Second); err != nil {
		t.Fatal(err)
	}
	_ = b.Shutdown()
	waitFor(t, "a to refuse sending to the departed member", func() bool {
		err := a.Send(b.Name(), []byte("Glate"))
		return errors.Is(err, usermsg.ErrNoMember) && strings.Contains(err.Error(), "gone")
	})
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(raceSlowdown * 10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOutsiderCannotSendMessage: a process without the cluster's key, or
// with another key, streams a well-formed message straight to a keyed
// member's gossip port: the member refuses the stream and the handler never
// runs. The same message from a member is delivered (the test can fail).
func TestOutsiderCannotSendMessage(t *testing.T) {
	key, other := testKey(7, 32), testKey(8, 32)
	tc := startCluster(t, 2, securedConfig([][]byte{key}, "prod"))
	tc.waitConverged(tableNames(5), raceSlowdown*20*time.Second)
	a, b := tc.members[0], tc.members[1]
	ch := collect('G', a)
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"no key", securedConfig(nil, "prod")("rogue")},
		{"other key", securedConfig([][]byte{other}, "prod")("rogue")},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := startOutsider(t, tc, c.cfg)
			refused := a.Stats().RefusedKey
			wire, err := usermsg.Encode(b.Name(), []byte("Gforged"))
			if err != nil {
				t.Fatal(err)
			}
			rawSend(t, o, a, wire)
			waitFor(t, "a to refuse the outsider's stream", func() bool { return a.Stats().RefusedKey > refused })
			time.Sleep(raceSlowdown * 200 * time.Millisecond)
			if len(ch) != 0 || a.Stats().Messages != (usermsg.Stats{}) {
				t.Fatalf("the outsider's message reached a: %d handled, stats %+v", len(ch), a.Stats().Messages)
			}
		})
	}
	wire, _ := usermsg.Encode(b.Name(), []byte("Gfrom a member"))
	rawSend(t, b, a, wire)
	if r := waitMsg(t, ch); r.from != b.Name() || r.msg != "Gfrom a member" {
		t.Fatalf("member's message: %+v", r)
	}
}

// TestAuthenticated: false without gossip, without a key and at both steps
// of a key migration, where a keyless process's plaintext message is indeed
// delivered; true with a key alone.
func TestAuthenticated(t *testing.T) {
	key := [][]byte{testKey(5, 32)}
	start := func(name string, keys [][]byte, migration string) *Cluster {
		cfg := securedConfig(keys, "")(name)
		cfg.KeyMigration = migration
		c, err := Start(cfg, testLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Shutdown() })
		return c
	}
	disabled := fastConfig("off")
	disabled.Disabled = true
	off, err := Start(disabled, nil)
	if err != nil {
		t.Fatal(err)
	}
	plain := start("plain", nil, "")
	for _, c := range []struct {
		c    *Cluster
		want bool
	}{{off, false}, {plain, false}, {start("keyed", key, ""), true}} {
		if got := c.c.Authenticated(); got != c.want {
			t.Errorf("%s: Authenticated %v, want %v", c.c.Name(), got, c.want)
		}
	}
	for _, step := range []string{KeyMigrationAccept, KeyMigrationSend} {
		m := start("migrating-"+step, key, step)
		if m.Authenticated() {
			t.Errorf("Authenticated during key migration step %q", step)
		}
		ch := collect('G', m)
		wire, _ := usermsg.Encode("anyone", []byte("Gplaintext"))
		rawSend(t, plain, m, wire)
		if r := waitMsg(t, ch); r.from != "anyone" {
			t.Fatalf("%s: %+v", step, r)
		}
	}
}

// TestGroupCommitMeta: "gc" in the metadata round-trips to Member.GroupCommit
// on peers and self; metadata of a version without it, or of another group
// commit protocol, reads as false.
func TestGroupCommitMeta(t *testing.T) {
	tc := startCluster(t, 2, func(name string, join ...string) Config {
		c := fastConfig(name, join...)
		c.GroupCommit = len(join) == 0 // the seed runs a committer
		return c
	})
	tc.waitConverged(tableNames(5), raceSlowdown*20*time.Second)
	a, b := tc.members[0], tc.members[1]
	gc := func(view *Cluster) map[string]bool {
		out := map[string]bool{}
		for _, m := range view.Members() {
			out[m.Name] = m.GroupCommit
		}
		return out
	}
	for _, view := range []*Cluster{a, b} {
		if g := gc(view); !g[a.Name()] || g[b.Name()] {
			t.Fatalf("%s sees group commit %v, want only %s", view.Name(), g, a.Name())
		}
	}
	for meta, want := range map[string]bool{
		`{"v":1,"roles":["drain","maintenance"],"version":"0.1.0"}`: false,
		`{"v":1,"roles":["maintenance"],"gc":1}`:                    true,
		`{"v":1,"roles":["maintenance"],"gc":2}`:                    false,
		`{"v":2,"roles":["maintenance"],"gc":1,"zone":"eu"}`:        true,
	} {
		m := a.member(&memberlist.Node{Name: "old", Meta: []byte(meta)}, StateAlive)
		if m.GroupCommit != want || len(m.Roles) == 0 {
			t.Errorf("%s: %+v, want GroupCommit %v", meta, m, want)
		}
	}
	if nodemeta.GroupCommitVersion != 1 {
		t.Fatal(`the group commit version changed: peers of the previous version read "gc" as not theirs`)
	}
}

// TestBinLeaseMeta: "wk" and "wo" in the metadata round-trip to Member.BinWorker and
// Member.BinOffers on peers; SetBinOffers reaches peers both ways; offers of a member that takes
// no bins of this protocol read as none; a member without Config.BinWorker never offers.
func TestBinLeaseMeta(t *testing.T) {
	tc := startCluster(t, 2, func(name string, join ...string) Config {
		c := fastConfig(name, join...)
		c.BinWorker = len(join) == 0 // only the seed takes bins
		return c
	})
	tc.waitConverged(tableNames(5), raceSlowdown*20*time.Second)
	a, b := tc.members[0], tc.members[1]
	seen := func(view *Cluster, name string) Member {
		for _, m := range view.Members() {
			if m.Name == name {
				return m
			}
		}
		return Member{}
	}
	if m := seen(b, a.Name()); !m.BinWorker || m.BinOffers {
		t.Fatalf("%s sees %+v, want a worker without offers", b.Name(), m)
	}
	if m := seen(a, b.Name()); m.BinWorker {
		t.Fatalf("%s sees %+v, want no worker", a.Name(), m)
	}
	for _, on := range []bool{true, false} {
		if err := a.SetBinOffers(on, time.Second); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("%s to see offers %v", b.Name(), on), func() bool { return seen(b, a.Name()).BinOffers == on })
	}
	if err := b.SetBinOffers(true, time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(raceSlowdown * time.Second)
	if seen(a, b.Name()).BinOffers {
		t.Fatalf("%s offers bins without taking part in bin leases", b.Name())
	}
	for meta, want := range map[string][2]bool{
		`{"v":1,"roles":["maintenance"],"gc":1}`:                 {false, false},
		`{"v":1,"roles":["maintenance"],"wk":1}`:                 {true, false},
		`{"v":1,"roles":["maintenance"],"wk":1,"wo":true}`:       {true, true},
		`{"v":1,"roles":["maintenance"],"wk":2,"wo":true}`:       {false, false},
		`{"v":1,"roles":["maintenance"],"wo":true}`:              {false, false},
		`{"v":2,"roles":["maintenance"],"wk":1,"wo":true,"z":1}`: {true, true},
	} {
		m := a.member(&memberlist.Node{Name: "old", Meta: []byte(meta)}, StateAlive)
		if got := [2]bool{m.BinWorker, m.BinOffers}; got != want || len(m.Roles) == 0 {
			t.Errorf("%s: %+v, want BinWorker, BinOffers %v", meta, m, want)
		}
	}
	if nodemeta.BinLeaseVersion != 1 {
		t.Fatal(`the bin-lease version changed: peers of the previous version read "wk" as not theirs`)
	}
}
