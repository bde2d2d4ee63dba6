package claim

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const ttl = 30 * time.Second

func stateOf(claims map[string]Claim, claimers ...string) State {
	st := State{Claims: claims, Claimers: map[string]Heartbeat{}}
	if st.Claims == nil {
		st.Claims = map[string]Claim{}
	}
	for _, c := range claimers {
		st.Claimers[c] = Heartbeat{Expires: t0.Add(ttl)}
	}
	return st
}

func TestDecide(t *testing.T) {
	streams := []string{"a", "b", "c", "d"}
	for _, tc := range []struct {
		name      string
		st        State
		busy      map[string]bool
		now       time.Time
		hold      []string
		taken     []string
		release   []string
		wantShare int
	}{
		{name: "alone takes everything", st: stateOf(nil), now: t0,
			hold: streams, taken: streams, wantShare: 4},
		{name: "two live claimers: half each", st: stateOf(map[string]Claim{"a": {Holder: "p2", Expires: t0.Add(ttl)}}, "p2"), now: t0,
			// Which two of b, c, d is the rendezvous preference of "me": fixed by the hash.
			hold: []string{"c", "d"}, taken: []string{"c", "d"}, wantShare: 2},
		{name: "a live holder's claim is never taken", st: stateOf(map[string]Claim{
			"a": {Holder: "p2", Expires: t0.Add(time.Second)}, "b": {Holder: "p2", Expires: t0.Add(time.Second)},
			"c": {Holder: "p2", Expires: t0.Add(time.Second)}, "d": {Holder: "p2", Expires: t0.Add(time.Second)}}, "p2"), now: t0,
			hold: nil, taken: nil, wantShare: 2},
		{name: "expired claims are taken (dead holder's heartbeat expired too)", st: stateOf(map[string]Claim{
			"a": {Holder: "p2", Epoch: 3, Expires: t0.Add(-time.Millisecond)}}), now: t0,
			hold: streams, taken: streams, wantShare: 4},
		{name: "over the share: release, but never a busy stream", st: stateOf(map[string]Claim{
			"a": {Holder: "me", Expires: t0.Add(ttl)}, "b": {Holder: "me", Expires: t0.Add(ttl)},
			"c": {Holder: "me", Expires: t0.Add(ttl)}, "d": {Holder: "me", Expires: t0.Add(ttl)}}, "p2", "p3", "p4"),
			busy: map[string]bool{"a": true, "b": true}, now: t0,
			hold: []string{"a", "b"}, release: []string{"c", "d"}, wantShare: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(tc.st, "me", streams, tc.busy, tc.now, ttl)
			eq(t, "hold", p.Hold, tc.hold)
			eq(t, "taken", p.Taken, tc.taken)
			eq(t, "release", p.Release, tc.release)
			eq(t, "share", p.Share, tc.wantShare)
			for _, s := range p.Hold {
				st, err := Parse(map[string]string{StreamKeyPrefix + s: p.Set[StreamKeyPrefix+s]})
				if err != nil {
					t.Fatal(err)
				}
				c := st.Claims[s]
				prev := tc.st.Claims[s]
				wantEpoch := prev.Epoch
				if prev.Holder != "me" {
					wantEpoch++
				}
				if c.Holder != "me" || c.Epoch != wantEpoch || !c.Expires.Equal(tc.now.Add(ttl)) {
					t.Errorf("claim of %s = %+v, want holder me, epoch %d, expiry now+ttl", s, c, wantEpoch)
				}
			}
		})
	}
}

// TestDecideSpreads: three claimers ticking in turn over six streams end with two each and no
// stream held twice.
func TestDecideSpreads(t *testing.T) {
	streams := []string{"s1", "s2", "s3", "s4", "s5", "s6"}
	props := map[string]string{}
	now := t0
	for round := 0; round < 4; round++ {
		for _, me := range []string{"p1", "p2", "p3"} {
			st, err := Parse(props)
			if err != nil {
				t.Fatal(err)
			}
			p := Decide(st, me, streams, nil, now, ttl)
			for k, v := range p.Set {
				props[k] = v
			}
			for _, k := range p.Remove {
				delete(props, k)
			}
			now = now.Add(time.Second)
		}
	}
	st, _ := Parse(props)
	count := map[string]int{}
	for _, s := range streams {
		c, ok := st.Claims[s]
		if !ok {
			t.Fatalf("stream %s unclaimed: %v", s, props)
		}
		count[c.Holder]++
	}
	if !reflect.DeepEqual(count, map[string]int{"p1": 2, "p2": 2, "p3": 2}) {
		t.Fatalf("claims per holder %v, want 2 each", count)
	}
}

func TestParseRejectsForeignRecords(t *testing.T) {
	_, err := Parse(map[string]string{StreamKeyPrefix + "a": "pod-1 until noon"})
	if err == nil {
		t.Fatal("a record siglake did not write parsed")
	}
	if want := StreamKeyPrefix + "a"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not name the property %s", err, want)
	}
}

func TestReleaseAll(t *testing.T) {
	st := stateOf(map[string]Claim{"a": {Holder: "me"}, "b": {Holder: "p2"}}, "me", "p2")
	eq(t, "remove", ReleaseAll(st, "me"), []string{StreamKeyPrefix + "a", ClaimerKeyPrefix + "me"})
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
