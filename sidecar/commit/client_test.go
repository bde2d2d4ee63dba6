package commit

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// TestSlowDownLapses: the batch age a committer asks for holds until it is not renewed for twice
// itself plus an answer timeout; then it is 0 again, and the observer is told.
func TestSlowDownLapses(t *testing.T) {
	hub := peermsg.NewLocalHub()
	var clock atomic.Int64
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	clock.Store(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC).UnixNano())
	obs := newRecorder()
	c := NewClient(ClientConfig{Interval: time.Second, Observer: obs, Now: now}, hub.Member("pod-0"), newView("owner"))
	a := Answer{V: Version, ID: newID(), Table: "events", Stream: "pod-0", Kind: KindBusy, SlowMs: 4000}
	msg, err := a.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Member("owner").Send("pod-0", msg); err != nil {
		t.Fatal(err)
	}
	hub.Wait()
	if d := c.SlowDown("events"); d != 4*time.Second || obs.count("slowdown") != 1 {
		t.Fatalf("slow-down %v (observed %d), want 4s", d, obs.count("slowdown"))
	}
	clock.Add(int64(2*4*time.Second + c.answerTimeout()))
	if d := c.SlowDown("events"); d != 4*time.Second {
		t.Fatalf("slow-down %v at its bound, want 4s still", d)
	}
	clock.Add(int64(time.Millisecond))
	if d := c.SlowDown("events"); d != 0 || c.SlowDown("other") != 0 || obs.count("slowdown:0") != 1 {
		t.Fatalf("slow-down %v after it lapsed (observed %d), want 0 once", d, obs.count("slowdown:0"))
	}
}

// TestDirectAttemptsLeft: a fallback after a long hand-off makes only the attempts that still
// land inside orphan gc's floor for files written that long ago; none once it is spent.
func TestDirectAttemptsLeft(t *testing.T) {
	d, wait := 2*time.Minute, 5*time.Second
	floor := orphans.FloorMin(d)
	for _, c := range []struct {
		age  time.Duration
		want int
	}{
		{0, int((floor - d) / (d + wait))},
		{orphans.HandoffMaxAge(d), int((floor - orphans.HandoffMaxAge(d) - d) / (d + wait))},
		{floor - d - time.Second, 0},
		{floor, 0},
	} {
		got := directAttemptsLeft(d, wait, c.age)
		if got != c.want {
			t.Errorf("age %v: %d attempts, want %d", c.age, got, c.want)
		}
		if got > 0 && c.age+time.Duration(got)*(d+wait)+d > floor {
			t.Errorf("age %v: %d attempts can land past the floor %v", c.age, got, floor)
		}
	}
}
