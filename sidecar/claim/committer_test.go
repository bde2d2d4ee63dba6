package claim

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// apply writes plan p into props, as its compare-and-swap commit does.
func apply(props map[string]string, p Plan) {
	for k, v := range p.Set {
		props[k] = v
	}
	for _, k := range p.Remove {
		delete(props, k)
	}
}

func committersOf(t *testing.T, props map[string]string) State {
	t.Helper()
	st, err := ParseCommitters(props)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDecideCommitters: the committer claims' decisions step by step: a lone claimer takes every
// table with its address and epoch 1; a renewal keeps the epoch and moves the expiry (and the
// address, after a restart on another IP); a second claimer takes only what expired, with the
// next epoch; a claimer over the share releases; ReleaseAllCommitters frees exactly its own.
func TestDecideCommitters(t *testing.T) {
	tables := []string{"t1", "t2", "t3", "t4"}
	props := map[string]string{}

	// take: alone, everything, epoch 1, its address.
	p := DecideCommitters(committersOf(t, props), "a", "10.0.0.1:8080", tables, t0, ttl)
	eq(t, "taken", p.Taken, tables)
	apply(props, p)
	st := committersOf(t, props)
	for _, tb := range tables {
		if c := st.Claims[tb]; c != (Claim{Holder: "a", Addr: "10.0.0.1:8080", Epoch: 1, Expires: t0.Add(ttl)}) {
			t.Fatalf("claim of %s after the take: %+v", tb, c)
		}
	}

	// renew: same epoch, later expiry, the address it has now.
	p = DecideCommitters(st, "a", "10.0.0.9:8080", tables, t0.Add(RenewEvery(ttl)), ttl)
	eq(t, "taken on renewal", p.Taken, []string(nil))
	apply(props, p)
	st = committersOf(t, props)
	if c := st.Claims["t1"]; c.Epoch != 1 || c.Addr != "10.0.0.9:8080" || !c.Expires.Equal(t0.Add(RenewEvery(ttl)+ttl)) {
		t.Fatalf("renewed claim: %+v", c)
	}

	// a live holder's claims are never taken, even by a claimer below its share.
	p = DecideCommitters(st, "b", "10.0.0.2:8080", tables, t0.Add(time.Second), ttl)
	eq(t, "b takes from a live a", p.Taken, []string(nil))
	eq(t, "b sees a's claims", len(p.Others), 4)
	apply(props, p) // b's heartbeat only

	// spread: a, renewing with b live, keeps its share and releases the rest.
	p = DecideCommitters(committersOf(t, props), "a", "10.0.0.9:8080", tables, t0.Add(2*time.Second), ttl)
	eq(t, "a's share with b live", p.Share, 2)
	eq(t, "a releases", len(p.Release), 2)
	apply(props, p)
	p = DecideCommitters(committersOf(t, props), "b", "10.0.0.2:8080", tables, t0.Add(3*time.Second), ttl)
	eq(t, "b takes the released", p.Taken, committersOf(t, props).free(tables))
	apply(props, p)
	st = committersOf(t, props)
	byHolder := map[string]int{}
	for _, tb := range tables {
		byHolder[st.Claims[tb].Holder]++
	}
	eq(t, "tables per holder", byHolder, map[string]int{"a": 2, "b": 2})

	// expire: a stops renewing; past its claims' expiry b takes them, with the next epoch.
	late := st.Claims[firstHeldBy(st, "a", tables)].Expires
	p = DecideCommitters(st, "b", "10.0.0.2:8080", tables, late.Add(-time.Millisecond), ttl)
	eq(t, "b takes before a's expiry", p.Taken, []string(nil))
	p = DecideCommitters(st, "b", "10.0.0.2:8080", tables, late, ttl)
	eq(t, "b takes after a's expiry", len(p.Taken), 2)
	apply(props, p)
	for _, tb := range p.Taken {
		if c := committersOf(t, props).Claims[tb]; c.Holder != "b" || c.Epoch != 2 || c.Addr != "10.0.0.2:8080" {
			t.Fatalf("taken-over claim of %s: %+v, want b at epoch 2", tb, c)
		}
	}

	// release: b's shutdown removes its claims and heartbeat, nothing else.
	props[CommitterClaimerKeyPrefix+"c"] = `{"expires":"2030-01-01T00:00:00Z"}`
	rm := ReleaseAllCommitters(committersOf(t, props), "b")
	want := []string{CommitterClaimerKeyPrefix + "b", CommitterKeyPrefix + "t1", CommitterKeyPrefix + "t2", CommitterKeyPrefix + "t3", CommitterKeyPrefix + "t4"}
	eq(t, "released", rm, want)
}

// free lists the tables without a live claim in st at t0's horizon (after a release).
func (st State) free(tables []string) []string {
	var out []string
	for _, tb := range tables {
		if _, ok := st.Claims[tb]; !ok {
			out = append(out, tb)
		}
	}
	return out
}

func firstHeldBy(st State, holder string, tables []string) string {
	for _, tb := range tables {
		if st.Claims[tb].Holder == holder {
			return tb
		}
	}
	return ""
}

// TestCommitterClaimsApart: stream claims and committer claims share the claims table without
// reading each other's records, and a committer claim without an address is refused with its key.
func TestCommitterClaimsApart(t *testing.T) {
	props := map[string]string{}
	apply(props, Decide(stateOf(nil), "a", []string{"s1"}, nil, t0, ttl))
	apply(props, DecideCommitters(State{}, "a", "10.0.0.1:8080", []string{"t1"}, t0, ttl))
	st, err := Parse(props)
	if err != nil {
		t.Fatal(err)
	}
	cs := committersOf(t, props)
	if !reflect.DeepEqual(keys(st.Claims), []string{"s1"}) || !reflect.DeepEqual(keys(cs.Claims), []string{"t1"}) || len(st.Claimers) != 1 || len(cs.Claimers) != 1 {
		t.Fatalf("streams %v / %v, committers %v / %v", st.Claims, st.Claimers, cs.Claims, cs.Claimers)
	}
	if st.Claims["s1"].Addr != "" {
		t.Fatalf("a stream claim carries an address: %+v", st.Claims["s1"])
	}
	_, err = ParseCommitters(map[string]string{CommitterKeyPrefix + "t1": `{"holder":"a","epoch":1,"expires":"2026-11-29T12:00:30Z"}`})
	if err == nil || !contains(err.Error(), CommitterKeyPrefix+"t1") {
		t.Fatalf("a committer claim without an address: %v", err)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestCommitterManagerFailover: two committer managers on one catalog split the tables; a
// read-only manager (a drain-only pod) names each table's holder by address; the holder that
// stops renewing stops owning two thirds into its TTL, before anyone may take over; after the
// expiry the other takes its tables, and the paused one, resuming, sees it lost them.
func TestCommitterManagerFailover(t *testing.T) {
	s := newSite(t)
	tables := []string{"t1", "t2", "t3", "t4"}
	mk := func(holder, addr string, readOnly bool) *Manager {
		m := s.manager(holder, 0, tables...)
		m.Addr, m.ReadOnly = addr, readOnly
		return m
	}
	a, b, pod := mk("a", "10.0.0.1:8080", false), mk("b", "10.0.0.2:8080", false), mk("pod", "", true)
	tick(t, a, b, a, b, a, pod) // a's last tick reads b's takes
	owners := map[string]string{}
	for _, tb := range tables {
		oa, ob := a.Owns(tb), b.Owns(tb)
		if oa == ob {
			t.Fatalf("%s: a owns %v, b owns %v: want exactly one", tb, oa, ob)
		}
		owners[tb] = map[bool]string{true: "10.0.0.1:8080", false: "10.0.0.2:8080"}[oa]
		for _, m := range []*Manager{a, b, pod} {
			if got, ok := m.Committer(tb); !ok || got != owners[tb] {
				t.Fatalf("%s's view of %s's committer: %q %v, want %s", m.Holder, tb, got, ok, owners[tb])
			}
		}
	}
	if len(a.Held()) != 2 {
		t.Fatalf("a holds %v, want 2 of 4", a.Held())
	}

	// a pauses (no tick). Inside the fence it still owns; past it, not, while its claims live on.
	s.clock.Add(Fence(ttl) - time.Millisecond)
	tick(t, b)
	if len(a.Held()) != 2 || b.Owns(a.Held()[0]) {
		t.Fatal("a lost its tables inside its fence")
	}
	s.clock.Add(2 * time.Millisecond)
	for _, tb := range tables {
		if a.Owns(tb) {
			t.Fatalf("a owns %s past its fence", tb)
		}
		if got, ok := a.Committer(tb); ok && got == "10.0.0.1:8080" {
			t.Fatalf("a names itself committer of %s past its fence", tb)
		}
	}
	// Past the expiry b takes over, with the next epoch.
	s.clock.Add(ttl - Fence(ttl))
	tick(t, b, pod)
	for _, tb := range tables {
		if !b.Owns(tb) {
			t.Fatalf("b does not own %s after a's claims expired", tb)
		}
		if got, ok := pod.Committer(tb); !ok || got != "10.0.0.2:8080" {
			t.Fatalf("pod's committer of %s after the takeover: %q %v", tb, got, ok)
		}
	}
	if counts(b).takeoversNow() != 2 {
		t.Fatalf("b took over %d tables, want 2", counts(b).takeoversNow())
	}
	// a resumes: it reads b's claims and does not take them back.
	tick(t, a)
	for _, tb := range tables {
		if a.Owns(tb) {
			t.Fatalf("a owns %s again after resuming", tb)
		}
	}
	// b stops: its release frees the tables for a's next tick, with no wait for the TTL.
	if err := b.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	tick(t, a)
	if len(a.Held()) != 4 {
		t.Fatalf("after b's release a holds %v, want all 4", a.Held())
	}
}
