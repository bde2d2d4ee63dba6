package handoff

import (
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
)

// TestScheduleDue steps a schedule: a pair heartbeats only when it had no batch, once per age,
// with its oldest pending segment, and is forgotten an hour after its last hand-off.
func TestScheduleDue(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	age := func(string) time.Duration { return 10 * time.Second }
	var s Schedule
	if got := s.Due(nil, nil, t0, nil, age); len(got) != 0 {
		t.Fatalf("nothing handed off yet, beats %+v", got)
	}
	s.HandedOff("wal", "events", "pod-0", t0)
	s.HandedOff("wal", "logs", "pod-0", t0)
	pending := []localwal.SegmentInfo{
		{Path: "wal/b", Table: "events", ModTime: t0.Add(3 * time.Second)},
		{Path: "wal/a", Table: "events", ModTime: t0.Add(2 * time.Second)},
		{Path: "other/c", Table: "events", ModTime: t0.Add(time.Second)}, // another dir
	}
	dirOf := map[string]string{"wal/b": "wal", "wal/a": "wal", "other/c": "other"}
	ran := map[string]bool{Key("wal", "logs"): true}
	got := s.Due(pending, dirOf, t0.Add(5*time.Second), ran, age)
	if len(got) != 1 || got[0] != (Beat{Table: "events", Stream: "pod-0", PendingSince: t0.Add(2 * time.Second)}) {
		t.Fatalf("beats %+v, want events only (logs had a batch), pending since its oldest segment in its dir", got)
	}
	if got := s.Due(nil, nil, t0.Add(10*time.Second), nil, age); len(got) != 1 || got[0].Table != "logs" {
		t.Fatalf("beats %+v, want logs only (events beat 5 s ago)", got)
	}
	if got := s.Due(nil, nil, t0.Add(16*time.Second), nil, age); len(got) != 1 || got[0].Table != "events" || !got[0].PendingSince.IsZero() {
		t.Fatalf("beats %+v, want events with nothing pending", got)
	}
	if got := s.Due(nil, nil, t0.Add(Forget+time.Second), nil, age); len(got) != 0 || len(s.grouped) != 0 {
		t.Fatalf("beats %+v, %d pairs kept: an hour after the last hand-off a pair is forgotten", got, len(s.grouped))
	}
}
