package buffer

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/buffer/segments"
)

// TestDrainRetiresWithTheChain: with the hook set, the real drain moves each committed batch
// into retention named with the mark below each segment, so the names chain from the mark a
// commit replaced to the one it recorded; the drain's scan and the stream listing ignore them.
func TestDrainRetiresWithTheChain(t *testing.T) {
	h := newHarness(t, nil)
	now := time.Now()
	ret := &segments.Retention{Keep: time.Minute, Now: func() time.Time { return now }}
	h.e.Drain.Retire = ret.Retire
	h.e.Seal("events", gen(t, 31, 2, 50, t0)...)
	h.e.DrainAll()
	h.e.Seal("events", gen(t, 32, 3, 50, t0)...)
	h.e.DrainAll()
	if segs, _ := localwal.Scan(h.e.WAL); len(segs) != 0 {
		t.Fatalf("the WAL dir still lists %v", segs)
	}
	rs, err := segments.ListRetained(h.e.WAL, "events")
	if err != nil {
		t.Fatal(err)
	}
	var chain [][2]uint64
	for _, r := range rs {
		chain = append(chain, [2]uint64{r.Prev.Seq, r.Mark.Seq})
		if fi, _ := os.Stat(r.Path); !fi.ModTime().Equal(now.Truncate(time.Nanosecond)) && fi.ModTime().Sub(now).Abs() > time.Second {
			t.Fatalf("retained %s has time %v, want its retirement %v", r.Path, fi.ModTime(), now)
		}
	}
	if want := [][2]uint64{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}}; !reflect.DeepEqual(chain, want) {
		t.Fatalf("chain %v, want %v", chain, want)
	}
	if dirs, err := segments.Dirs(h.e.WAL, true); err != nil || len(dirs) != 0 {
		t.Fatalf("a WAL root under claims sees stream dirs %v (%v): the retention dir must not be one", dirs, err)
	}
	// The lake holds all five; a reader at the first commit's mark gets the second commit's rows
	// from retention.
	got, ans, err := h.read(reader.Query{After: reader.Marks{"pod-0": rs[1].Mark}})
	if err != nil || got.Rows != 150 || len(ans.Segments) != 3 {
		t.Fatalf("reader at the first commit: %+v %+v %v", got, ans, err)
	}
	// Swept after Keep; Cleanup removes the rest.
	now = now.Add(2 * time.Minute)
	if n, _, err := ret.Sweep([]string{h.e.WAL}); err != nil || n != 0 {
		t.Fatalf("after the retention: %d kept, %v", n, err)
	}
	if _, _, err := h.read(reader.Query{After: reader.Marks{"pod-0": rs[1].Mark}}); err == nil {
		t.Fatal("a reader at the first commit's mark is answered after retention ended")
	}
	h.e.Seal("events", gen(t, 33, 1, 50, t0)...)
	h.e.DrainAll()
	if err := Cleanup(h.e.WAL, false); err != nil {
		t.Fatal(err)
	}
	if rs, _ := segments.ListRetained(h.e.WAL, ""); len(rs) != 0 {
		t.Fatalf("Cleanup left %v", rs)
	}
}
