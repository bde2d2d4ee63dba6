package drain

import (
	"context"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake"
)

func TestDrainCommitsEveryRowOnce(t *testing.T) {
	e := newEnv(t, nil)
	// Start just before midnight so rows span two day partitions.
	start := time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC)
	want := e.writeSegments("events", 6, 20000, 1, start)

	res, err := e.drain.Cycle(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments != 6 || res.Pending != 0 {
		t.Fatalf("cycle: %+v, want 6 segments drained and none pending", res)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table rows %+v, want %+v", got, want)
	}
	// A second cycle finds nothing and changes nothing.
	if res, err := e.drain.Cycle(context.Background(), true); err != nil || res.Batches != 0 {
		t.Fatalf("second cycle: %+v %v", res, err)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("after second cycle %+v, want %+v", got, want)
	}
	tbl, _ := e.lake.LoadTable(context.Background(), "events")
	m, ok, err := lake.ReadMark(tbl, "pod-0")
	if err != nil || !ok || m.Seq != 6 {
		t.Fatalf("mark %v %v %v, want seq 6", m, ok, err)
	}
}

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
	got := planBatches(segs, base, 20, 10*time.Second, false)
	// a: 1+2 reach 25 >= 20 and close; 3 is young and waits. b is old: due. c is young: waits.
	if len(got) != 2 || got[0].table != "a" || len(got[0].segs) != 2 || got[0].segs[0].Seq != 1 || got[1].table != "b" {
		t.Fatalf("batches %+v", got)
	}
	if got := planBatches(segs, base, 0, time.Hour, false); len(got) != 5 {
		t.Fatalf("targetMb 0 must commit each segment alone, got %d batches", len(got))
	}
	if got := planBatches(segs, base, 1<<30, time.Hour, true); len(got) != 3 {
		t.Fatalf("flush must commit every table's remainder, got %d batches", len(got))
	}
}
