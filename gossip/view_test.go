package gossip

import (
	"fmt"
	"testing"
	"time"

	"github.com/siglake/siglake/gossip/lease"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func both() []string { return []string{RoleDrain, RoleMaintenance} }

func alive(name string, roles ...string) Member {
	return Member{Name: name, Addr: name + ":7946", State: StateAlive, Roles: roles}
}

// tableOwnedBy returns a table that Owner gives to want among members.
func tableOwnedBy(t *testing.T, want string, members []string) string {
	t.Helper()
	for _, tb := range tableNames(1000) {
		if lease.Owner(tb, members) == want {
			return tb
		}
	}
	t.Fatalf("no table owned by %s", want)
	return ""
}

func TestViewStandaloneOwnsEverythingAtOnce(t *testing.T) {
	v := newView(alive("a", both()...), 5*time.Second, true, false, t0)
	for _, tb := range tableNames(50) {
		if !v.owns(t0, tb) {
			t.Fatalf("standalone member does not own %s at once", tb)
		}
	}
	// A peer joining a standalone member ends the exemption for new leases.
	changes := v.observe(t0.Add(time.Minute), alive("b", both()...))
	tb := tableOwnedBy(t, "b", []string{"a", "b"})
	if v.owns(t0.Add(time.Minute), tb) {
		t.Fatalf("a still owns %s after b joined", tb)
	}
	if len(changes) == 0 {
		t.Fatalf("b joined and no lease moved")
	}
	for _, ch := range changes {
		if ch.From != "a" || ch.To != "b" {
			t.Fatalf("unexpected change %+v", ch)
		}
	}
	// b leaves: a gets the table back but waits the settle period now.
	v.observe(t0.Add(2*time.Minute), Member{Name: "b", State: StateDead, Roles: both()})
	if v.owns(t0.Add(2*time.Minute), tb) {
		t.Fatalf("a owns %s without settling after it saw a peer", tb)
	}
	if !v.owns(t0.Add(2*time.Minute+5*time.Second), tb) {
		t.Fatalf("a does not own %s after the settle period", tb)
	}
}

func TestViewSettleAndHandover(t *testing.T) {
	settle := 5 * time.Second
	a := newView(alive("a", both()...), settle, false, false, t0)
	tb := tableOwnedBy(t, "a", []string{"a", "b"})
	tbB := tableOwnedBy(t, "b", []string{"a", "b"})

	// Peers configured: not even a lone member acts before settling.
	if a.owns(t0, tb) || !a.owns(t0.Add(settle), tb) {
		t.Fatalf("settle period not applied to a member with peers configured")
	}
	if !a.owns(t0.Add(settle), tbB) {
		t.Fatalf("alone, a should own %s", tbB)
	}
	// b joins at t0+10s: a stops owning b's table the same instant, and
	// keeps its own table without any pause.
	at := t0.Add(10 * time.Second)
	a.observe(at, alive("b", both()...))
	if a.owns(at, tbB) {
		t.Fatalf("a still owns %s after b joined", tbB)
	}
	if !a.owns(at, tb) {
		t.Fatalf("a paused %s although its owner did not change", tb)
	}
	l := a.lease(at, tbB)
	if l.Owner != "b" || !l.Since.Equal(at) || !l.ActiveFrom.Equal(at.Add(settle)) || l.Local {
		t.Fatalf("lease of %s = %+v", tbB, l)
	}
	if a.transitions != 1 {
		t.Fatalf("transitions = %d", a.transitions)
	}
}

func TestViewDrainOnlyNeverOwns(t *testing.T) {
	v := newView(alive("d", RoleDrain), 0, true, false, t0)
	tb := "logs.events"
	if v.owns(t0, tb) {
		t.Fatalf("drain-only member owns a table")
	}
	if l := v.lease(t0, tb); l.Owner != "" || l.Active {
		t.Fatalf("lease with no maintenance member: %+v", l)
	}
	v.observe(t0, alive("m", RoleMaintenance))
	if l := v.lease(t0, tb); l.Owner != "m" {
		t.Fatalf("owner = %q, want the only maintenance member", l.Owner)
	}
	// A member whose metadata could not be read has no roles.
	v.observe(t0, Member{Name: "x", State: StateAlive})
	for _, tb := range tableNames(200) {
		if o := v.lease(t0, tb).Owner; o != "m" {
			t.Fatalf("%s owned by %q, want m", tb, o)
		}
	}
}

func TestViewLeavingStopsAtOnce(t *testing.T) {
	v := newView(alive("a", both()...), 0, true, false, t0)
	if !v.owns(t0, "t") {
		t.Fatal("want owner")
	}
	v.leaving = true
	if v.owns(t0, "t") {
		t.Fatal("leaving member still owns")
	}
}

func TestViewSameStateKeepsSinceAndCountsTransitions(t *testing.T) {
	v := newView(alive("a", both()...), time.Second, false, false, t0)
	tables := tableNames(300)
	for _, tb := range tables {
		v.track(tb)
	}
	v.observe(t0.Add(time.Second), alive("b", both()...))
	first := v.transitions
	if first == 0 {
		t.Fatal("join moved nothing")
	}
	// A metadata update that changes nothing about roles moves nothing.
	v.observe(t0.Add(2*time.Second), Member{Name: "b", Addr: "b:1", State: StateAlive, Roles: both(), Version: "v2"})
	if v.transitions != first {
		t.Fatalf("metadata update moved leases: %d -> %d", first, v.transitions)
	}
	if got := v.members["b"].Since; !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("member since changed on update: %v", got)
	}
	// Dropping the maintenance role moves b's tables back, same count.
	v.observe(t0.Add(3*time.Second), alive("b", RoleDrain))
	if v.transitions != 2*first {
		t.Fatalf("transitions %d, want %d", v.transitions, 2*first)
	}
}

func TestViewPrunesDepartedMembers(t *testing.T) {
	v := newView(alive("a", both()...), 0, false, false, t0)
	for i := range 3 * maxDeparted {
		name := fmt.Sprintf("p-%d", i)
		at := t0.Add(time.Duration(i) * time.Second)
		v.observe(at, alive(name, both()...))
		v.observe(at, Member{Name: name, State: StateDead})
	}
	if got := len(v.members); got != maxDeparted+1 {
		t.Fatalf("remembered %d members, want %d", got, maxDeparted+1)
	}
	if v.peerCount() != 0 {
		t.Fatalf("peer count %d", v.peerCount())
	}
}

func TestViewJoinPendingAndHold(t *testing.T) {
	settle := 5 * time.Second
	v := newView(alive("a", both()...), settle, false, true, t0)
	tb := "logs.events"
	// Until the first join attempt ends, nothing is owned however long.
	if v.owns(t0.Add(time.Hour), tb) {
		t.Fatal("owns before the first join attempt finished")
	}
	// The attempt ends at t0+20s (it reached nobody): settle from then.
	v.joinDone(t0.Add(20 * time.Second))
	if v.owns(t0.Add(24*time.Second), tb) || !v.owns(t0.Add(25*time.Second), tb) {
		t.Fatal("settle does not count from the end of the first join attempt")
	}
	if l := v.lease(t0.Add(25*time.Second), tb); !l.Active || !l.Local {
		t.Fatalf("lease %+v", l)
	}
	// Peers know another process under this name: hold.
	v.hold(t0.Add(40 * time.Second))
	v.hold(t0.Add(30 * time.Second)) // an earlier hold does not shorten it
	if v.owns(t0.Add(39*time.Second), tb) || v.lease(t0.Add(39*time.Second), tb).Active {
		t.Fatal("owns while held")
	}
	if !v.owns(t0.Add(40*time.Second), tb) {
		t.Fatal("hold does not end")
	}
}

func inCatalog(m Member, catalog string) Member { m.Catalog = catalog; return m }

// TestViewLeasesPerCatalog: members compete for a table only when they share its catalog. Three
// pods with private embedded catalogs each own all their tables; two pods on one shared catalog
// split them, and the member of the private catalog is no candidate for theirs.
func TestViewLeasesPerCatalog(t *testing.T) {
	tables := tableNames(200)
	private := func(self string) *view {
		v := newView(inCatalog(alive(self, both()...), "cat-"+self), 0, false, false, t0)
		for _, p := range []string{"a", "b", "c"} {
			if p != self {
				v.observe(t0, inCatalog(alive(p, both()...), "cat-"+p))
			}
		}
		return v
	}
	for _, self := range []string{"a", "b", "c"} {
		v := private(self)
		for _, tb := range tables {
			if !v.owns(t0, tb) {
				t.Fatalf("%s has a private catalog but does not own %s (owner %q)", self, tb, v.lease(t0, tb).Owner)
			}
		}
		if l := v.lease(t0, tables[0]); len(l.Candidates) != 1 || l.Candidates[0] != self {
			t.Fatalf("%s: candidates %v, want only itself", self, l.Candidates)
		}
	}

	// a and b share a catalog; c has its own.
	shared := func(self string) *view {
		cat := map[string]string{"a": "shared", "b": "shared", "c": "own"}
		v := newView(inCatalog(alive(self, both()...), cat[self]), 0, false, false, t0)
		for p, c := range cat {
			if p != self {
				v.observe(t0, inCatalog(alive(p, both()...), c))
			}
		}
		return v
	}
	va, vb := shared("a"), shared("b")
	owned := map[string]int{}
	for _, tb := range tables {
		oa, ob := va.lease(t0, tb).Owner, vb.lease(t0, tb).Owner
		if oa != ob || (oa != "a" && oa != "b") {
			t.Fatalf("%s: a says owner %q, b says %q; want one of a, b", tb, oa, ob)
		}
		owned[oa]++
	}
	if owned["a"] == 0 || owned["b"] == 0 {
		t.Fatalf("shared catalog not split between a and b: %v", owned)
	}
	if c := va.lease(t0, tables[0]).Candidates; len(c) != 2 || c[0] != "a" || c[1] != "b" {
		t.Fatalf("candidates on the shared catalog %v, want [a b]", c)
	}
}

// TestViewSetCatalogMovesLeases: a process that learns its catalog stops competing with members of
// other (or no) catalogs and starts competing with those of its own.
func TestViewSetCatalogMovesLeases(t *testing.T) {
	v := newView(alive("a", both()...), 0, false, false, t0)
	v.observe(t0, inCatalog(alive("b", both()...), "x"))
	v.observe(t0, alive("c", both()...)) // advertises no catalog yet
	tb := tableOwnedBy(t, "c", []string{"a", "c"})
	if o := v.lease(t0, tb).Owner; o != "c" {
		t.Fatalf("before a knows its catalog, owner %q, want c (both advertise none)", o)
	}
	changes := v.setCatalog(t0.Add(time.Second), "x")
	if len(changes) == 0 {
		t.Fatalf("learning the catalog moved no lease")
	}
	for _, tb := range tableNames(100) {
		if o := v.lease(t0, tb).Owner; o != "a" && o != "b" {
			t.Fatalf("%s owned by %q after a joined catalog x; want a or b", tb, o)
		}
	}
	// Gossip echoing a's older metadata (no catalog) does not undo it.
	v.observe(t0.Add(2*time.Second), alive("a", both()...))
	if c := v.lease(t0, tb).Candidates; len(c) != 2 || c[0] != "a" || c[1] != "b" {
		t.Fatalf("candidates %v after a stale self update, want [a b]", c)
	}
}

// TestViewEstablishedHoldsOnLastingSelfConflict: an established process
// ignores a passing claim of its name from another address, but when the
// claims go on for longer than a hold window (it was frozen, declared dead
// and replaced at a new address, then resumed) it stops owning, rather than
// act beside the replacement; once the claims stop it owns again.
func TestViewEstablishedHoldsOnLastingSelfConflict(t *testing.T) {
	const window = 30 * time.Second
	v := newView(alive("a", both()...), 0, false, true, t0)
	v.joinDone(t0)
	v.observe(t0, alive("b", both()...))
	var tb string
	for _, c := range tableNames(50) {
		if v.track(c).Owner == "a" {
			tb = c
			break
		}
	}
	start := t0.Add(window + time.Second)
	if !v.owns(start, tb) {
		t.Fatal("established process does not own its table")
	}
	// A passing claim (a newer process that peers refuse): no hold.
	if held, est := v.selfConflict(start, window); held || !est {
		t.Fatalf("a passing claim: held %v established %v", held, est)
	}
	if !v.owns(start.Add(time.Second), tb) {
		t.Fatal("a passing claim holds an established process")
	}
	// Claims every 5 s from start+2*window on (a new run, after a gap of
	// more than a window), for longer than a window.
	run := start.Add(2 * window)
	var at time.Time
	for i := 0; ; i++ {
		at = run.Add(time.Duration(i) * 5 * time.Second)
		held, _ := v.selfConflict(at, window)
		if at.Sub(run) <= window {
			if held || !v.owns(at, tb) {
				t.Fatalf("held %s into the claims, within a window", at.Sub(run))
			}
			continue
		}
		if !held || v.owns(at, tb) {
			t.Fatalf("claims for %s (longer than the %s window) and still owning", at.Sub(run), window)
		}
		break
	}
	// The claims stop: the hold ends a window after the last.
	if v.owns(at.Add(window-time.Second), tb) || !v.owns(at.Add(window), tb) {
		t.Fatal("hold does not end a window after the last claim")
	}
}

// tableNames are n table names for the lease tests.
func tableNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("logs.tenant_%04d", i)
	}
	return out
}
