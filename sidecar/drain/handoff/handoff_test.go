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

// TestProgressOf: a batch reports the oldest segment of its own (dir, table) that it leaves for
// later, ignoring other tables, other dirs and its own segments; none left: zero (Scan counts).
func TestProgressOf(t *testing.T) {
	t0 := time.Unix(2_000_000, 0)
	seg := func(path, table string, at int) localwal.SegmentInfo {
		return localwal.SegmentInfo{Path: path, Table: table, ModTime: t0.Add(time.Duration(at) * time.Second)}
	}
	batch := []localwal.SegmentInfo{seg("wal/1", "events", 1), seg("wal/2", "events", 2)}
	segs := append([]localwal.SegmentInfo{
		seg("wal/4", "events", 4), seg("wal/3", "events", 3), // left for later: 3 is the oldest
		seg("wal/0", "logs", 0),     // another table
		seg("other/0", "events", 0), // another dir
	}, batch...)
	dirOf := map[string]string{"wal/1": "wal", "wal/2": "wal", "wal/3": "wal", "wal/4": "wal", "wal/0": "wal", "other/0": "other"}
	scan := t0.Add(10 * time.Second)
	got := ProgressOf("wal", "events", batch, segs, dirOf, scan)
	if !got.Scan.Equal(scan) || !got.PendingSince.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("progress %+v, want scan %v and pending since %v", got, scan, t0.Add(3*time.Second))
	}
	if got := ProgressOf("wal", "events", batch, batch, dirOf, scan); !got.PendingSince.IsZero() {
		t.Fatalf("nothing left for later, pending since %v", got.PendingSince)
	}
}
