package buffer

import (
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
)

// TestDrainRetiresWithTheChain: with the hook set, the real drain moves each committed batch
// into retention named with the mark below each segment, so the names chain from the mark a
// commit replaced to the one it recorded; the drain's scan and the stream listing ignore them.
func TestDrainRetiresWithTheChain(t *testing.T) {
	h := newHarness(t, nil)
	now := time.Now()
	ret := &Retention{Keep: time.Minute, Now: func() time.Time { return now }}
	h.e.Drain.Retire = ret.Retire
	h.e.Seal("events", gen(t, 31, 2, 50, t0)...)
	h.e.DrainAll()
	h.e.Seal("events", gen(t, 32, 3, 50, t0)...)
	h.e.DrainAll()
	if segs, _ := localwal.Scan(h.e.WAL); len(segs) != 0 {
		t.Fatalf("the WAL dir still lists %v", segs)
	}
	rs, err := listRetained(h.e.WAL, "events")
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
	if dirs, err := Dirs(h.e.WAL, true); err != nil || len(dirs) != 0 {
		t.Fatalf("a WAL root under claims sees stream dirs %v (%v): the retention dir must not be one", dirs, err)
	}
	// The lake holds all five; a reader at the first commit's mark gets the second commit's rows
	// from retention.
	got, ans, err := h.read(Query{After: Marks{"pod-0": rs[1].Mark}})
	if err != nil || got.Rows != 150 || len(ans.Segments) != 3 {
		t.Fatalf("reader at the first commit: %+v %+v %v", got, ans, err)
	}
	// Swept after Keep; Cleanup removes the rest.
	now = now.Add(2 * time.Minute)
	if n, _, err := ret.Sweep([]string{h.e.WAL}); err != nil || n != 0 {
		t.Fatalf("after the retention: %d kept, %v", n, err)
	}
	if _, _, err := h.read(Query{After: Marks{"pod-0": rs[1].Mark}}); err == nil {
		t.Fatal("a reader at the first commit's mark is answered after retention ended")
	}
	h.e.Seal("events", gen(t, 33, 1, 50, t0)...)
	h.e.DrainAll()
	if err := Cleanup(h.e.WAL, false); err != nil {
		t.Fatal(err)
	}
	if rs, _ := listRetained(h.e.WAL, ""); len(rs) != 0 {
		t.Fatalf("Cleanup left %v", rs)
	}
}

func TestRetainedNames(t *testing.T) {
	s := localwal.SegmentInfo{Table: "events", Incarnation: 17, Seq: 42}
	name := retainedName(s, lake.Mark{Incarnation: 17, Seq: 40})
	wal, mark, prev, ok := parseRetained(name)
	if !ok || wal != localwal.SegmentName("events", 17, 42) || mark != (lake.Mark{Incarnation: 17, Seq: 42}) || prev != (lake.Mark{Incarnation: 17, Seq: 40}) {
		t.Fatalf("%s: %s %v %v %v", name, wal, mark, prev, ok)
	}
	for _, bad := range []string{"events.wal", localwal.SegmentName("events", 1, 2), "x.1.2.3.4.wal", strings.TrimSuffix(name, ".wal")} {
		if _, _, _, ok := parseRetained(bad); ok {
			t.Errorf("%q parses as a retained segment", bad)
		}
	}
	// Retiring a segment that is gone already is no error; one that cannot be moved is removed.
	dir := t.TempDir()
	r := &Retention{Keep: time.Minute}
	if err := r.Retire(dir, lake.Mark{}, []localwal.SegmentInfo{{Path: filepath.Join(dir, "gone.wal"), Table: "events", Seq: 1}}); err != nil {
		t.Fatal(err)
	}
}

func TestMarksAndQueryRoundTrip(t *testing.T) {
	m, err := ParseMarks("pod-1:5:9, pod-0:1772366400000000000:42")
	if err != nil {
		t.Fatal(err)
	}
	if s := m.String(); s != "pod-0:1772366400000000000:42,pod-1:5:9" {
		t.Fatalf("%s", s)
	}
	if m, err := ParseMarks(""); err != nil || len(m) != 0 {
		t.Fatalf("%v %v", m, err)
	}
	m2 := Marks{"pod-0": {Incarnation: 1772366400000000000, Seq: 50}, "pod-2": {Incarnation: 1, Seq: 1}}
	m.Advance(m2)
	if m.String() != "pod-0:1772366400000000000:50,pod-1:5:9,pod-2:1:1" {
		t.Fatalf("advance: %s", m)
	}
	q := Query{Filter: rows.Filter{From: "2026-11-30", To: "2026-12-01T00:00:00Z",
		Where: []rows.Condition{{Column: "service", Values: []string{"billing"}}, {Column: "severity", Values: []string{"error", "fatal"}}}},
		Columns: []string{"timestamp", "raw"}, After: m2, Unverified: true}
	back, err := ParseQuery(url.Values(q.Values()))
	if err != nil || !reflect.DeepEqual(back, q) {
		t.Fatalf("round trip %+v %v, want %+v", back, err, q)
	}
	if back, err := ParseQuery(url.Values{}); err != nil || back.After != nil {
		t.Fatalf("no after: %+v %v", back, err)
	}
	if back, err := ParseQuery(url.Values{"after": {""}}); err != nil || back.After == nil || len(back.After) != 0 {
		t.Fatalf("after= (no marks): %+v %v", back, err)
	}
}
