package batches

import (
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
)

func TestBatchingByTargetAndAge(t *testing.T) {
	base := time.Unix(1000, 0)
	seg := func(table string, seq uint64, size int64, age time.Duration) localwal.SegmentInfo {
		return localwal.SegmentInfo{Table: table, Seq: seq, Size: size, ModTime: base.Add(-age)}
	}
	segs := []localwal.SegmentInfo{
		seg("a", 3, 10, time.Second), seg("a", 1, 10, 2*time.Second), seg("a", 2, 15, time.Second),
		seg("b", 4, 5, 20*time.Second),
		seg("c", 5, 5, time.Second),
	}
	got := Plan(segs, base, 20, 10*time.Second, false)
	// a: 1+2 reach 25 >= 20 and close; 3 is young and waits. b is old: due. c is young: waits.
	if len(got) != 2 || got[0].Table != "a" || len(got[0].Segs) != 2 || got[0].Segs[0].Seq != 1 || got[1].Table != "b" {
		t.Fatalf("batches %+v", got)
	}
	if got := Plan(segs, base, 0, time.Hour, false); len(got) != 5 {
		t.Fatalf("targetMb 0 must commit each segment alone, got %d batches", len(got))
	}
	if got := Plan(segs, base, 1<<30, time.Hour, true); len(got) != 3 {
		t.Fatalf("flush must commit every table's remainder, got %d batches", len(got))
	}
}

// TestPlanAgesPerTable: each table's remainder waits for its own age (a slowed-down table's
// committer is behind); a full batch closes at the target size whatever the age.
func TestPlanAgesPerTable(t *testing.T) {
	base := time.Unix(1000, 0)
	segs := []localwal.SegmentInfo{
		{Table: "slow", Seq: 1, Size: 5, ModTime: base.Add(-30 * time.Second)},
		{Table: "fast", Seq: 2, Size: 5, ModTime: base.Add(-30 * time.Second)},
		{Table: "full", Seq: 3, Size: 50, ModTime: base},
	}
	age := func(table string) time.Duration {
		if table == "fast" {
			return 10 * time.Second
		}
		return time.Minute
	}
	got := PlanAges(segs, base, 20, age, false)
	if len(got) != 2 || got[0].Table != "fast" || got[1].Table != "full" {
		t.Fatalf("batches %+v, want fast (old enough) and full (at its target size)", got)
	}
	if got := PlanAges(segs, base.Add(30*time.Second), 20, age, false); len(got) != 3 {
		t.Fatalf("at a minute old the slowed table is due too; got %+v", got)
	}
}
