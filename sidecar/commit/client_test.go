package commit

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestSlowDownLapses: the batch age a committer asks for holds until it is not renewed for twice
// itself plus an answer timeout; then it is 0 again, and the observer is told.
func TestSlowDownLapses(t *testing.T) {
	hub := NewLocalHub()
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
