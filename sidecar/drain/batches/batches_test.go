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
