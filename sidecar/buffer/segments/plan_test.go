package segments

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

func mk(inc, seq uint64) marks.Mark { return marks.Mark{Incarnation: inc, Seq: seq} }

func liveSeg(stream string, seq uint64) Segment {
	return Segment{Name: fmt.Sprintf("t.%020d.%020d.wal", 1, seq), Stream: stream, Mark: mk(1, seq), Size: 100}
}

func retSeg(stream string, seq, prev uint64) Segment {
	s := liveSeg(stream, seq)
	s.Retained, s.Prev = true, mk(1, prev)
	if prev == 0 {
		s.Prev = marks.Mark{}
	}
	return s
}

func seqs(p Plan) []uint64 {
	var out []uint64
	for _, s := range p.Serve {
		out = append(out, s.Mark.Seq)
	}
	return out
}

func TestDecide(t *testing.T) {
	a := "pod-a"
	cases := []struct {
		name     string
		req      Request
		want     []uint64
		refuse   string // reason
		through  reader.Marks
		complete bool
	}{
		{name: "nothing committed since the reader's snapshot: the live segments above its mark",
			req:  Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 2)}, Live: []Segment{liveSeg(a, 3), liveSeg(a, 4)}},
			want: []uint64{3, 4}, through: reader.Marks{a: mk(1, 4)}, complete: true},
		{name: "a live segment at or below the mark is committed (its removal pending): not served",
			req:  Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 3)}, Current: reader.Marks{a: mk(1, 3)}, Live: []Segment{liveSeg(a, 3), liveSeg(a, 4)}},
			want: []uint64{4}, through: reader.Marks{a: mk(1, 4)}, complete: true},
		{name: "without after: above the table's current marks",
			req:  Request{Streams: []string{a}, Current: reader.Marks{a: mk(1, 3)}, Live: []Segment{liveSeg(a, 3), liveSeg(a, 4)}},
			want: []uint64{4}, through: reader.Marks{a: mk(1, 4)}, complete: true},
		{name: "a stream never committed: every live segment",
			req:  Request{Streams: []string{a}, After: reader.Marks{}, Current: reader.Marks{}, Live: []Segment{liveSeg(a, 1), liveSeg(a, 2)}},
			want: []uint64{1, 2}, through: reader.Marks{a: mk(1, 2)}, complete: true},
		{name: "commits since the snapshot, chain retained: the chain, then the live segments",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 5)},
				Retained: []Segment{retSeg(a, 1, 0), retSeg(a, 2, 1), retSeg(a, 3, 2), retSeg(a, 4, 3), retSeg(a, 5, 4)},
				Live:     []Segment{liveSeg(a, 6)}},
			want: []uint64{3, 4, 5, 6}, through: reader.Marks{a: mk(1, 6)}, complete: true},
		{name: "the chain has a seq gap (a crash wasted a number): the links, not the numbers, prove it whole",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 7)},
				Retained: []Segment{retSeg(a, 4, 2), retSeg(a, 7, 4)}},
			want: []uint64{4, 7}, through: reader.Marks{a: mk(1, 7)}, complete: true},
		{name: "a committed segment swept from retention: refused, not a gap",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 5)},
				Retained: []Segment{retSeg(a, 3, 2), retSeg(a, 5, 4)}, Live: []Segment{liveSeg(a, 6)}},
			refuse: "drained"},
		{name: "the same with a seq gap that looks contiguous: the prev link decides",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 4)},
				Retained: []Segment{retSeg(a, 4, 3)}},
			refuse: "drained"},
		{name: "retention off: any commit since the snapshot refuses",
			req:    Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 3)}, Live: []Segment{liveSeg(a, 4)}},
			refuse: "drained"},
		{name: "committed, not yet moved into retention: refused as draining",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 4)},
				Retained: []Segment{retSeg(a, 3, 2)}, Live: []Segment{liveSeg(a, 4), liveSeg(a, 5)}},
			refuse: "draining"},
		{name: "a reader whose snapshot omits a committed stream is refused unless its whole chain is kept",
			req:    Request{Streams: []string{a}, After: reader.Marks{}, Current: reader.Marks{a: mk(1, 1)}, Live: []Segment{liveSeg(a, 2)}},
			refuse: "drained"},
		{name: "a stream of another pod is neither served nor judged; its mark passes through",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 1), "pod-b": mk(9, 1)}, Current: reader.Marks{a: mk(1, 1), "pod-b": mk(9, 7)},
				Live: []Segment{liveSeg(a, 2)}},
			want: []uint64{2}, through: reader.Marks{a: mk(1, 2), "pod-b": mk(9, 1)}, complete: true},
		{name: "a segment seen in the WAL dir and then in retention (moved between the listings) is served once",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 2)}, Current: reader.Marks{a: mk(1, 3)},
				Retained: []Segment{retSeg(a, 3, 2)}, Live: []Segment{liveSeg(a, 3), liveSeg(a, 4)}},
			want: []uint64{3, 4}, through: reader.Marks{a: mk(1, 4)}, complete: true},
		{name: "the reader's snapshot is newer than the catalog read: above the reader's mark",
			req:  Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 4)}, Current: reader.Marks{a: mk(1, 3)}, Live: []Segment{liveSeg(a, 4), liveSeg(a, 5)}},
			want: []uint64{5}, through: reader.Marks{a: mk(1, 5)}, complete: true},
		{name: "unverified: the live segments above after, marks unknown",
			req:  Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 1)}, Unverified: true, Live: []Segment{liveSeg(a, 1), liveSeg(a, 2)}},
			want: []uint64{2}, through: reader.Marks{a: mk(1, 2)}, complete: true},
		{name: "the segment limit cuts the answer at a boundary; through says where the next page starts",
			req: Request{Streams: []string{a}, After: reader.Marks{a: mk(1, 0)}, Current: reader.Marks{}, MaxSegments: 2,
				Live: []Segment{liveSeg(a, 1), liveSeg(a, 2), liveSeg(a, 3)}},
			want: []uint64{1, 2}, through: reader.Marks{a: mk(1, 2)}, complete: false},
		{name: "the byte limit serves at least one segment",
			req: Request{Streams: []string{a}, Current: reader.Marks{}, MaxBytes: 50,
				Live: []Segment{liveSeg(a, 1), liveSeg(a, 2)}},
			want: []uint64{1}, through: reader.Marks{a: mk(1, 1)}, complete: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, ref := Decide(c.req)
			if c.refuse != "" {
				if ref == nil || ref.Reason != c.refuse {
					t.Fatalf("want a refusal (%s), got %v %v", c.refuse, seqs(p), ref)
				}
				if ref.Error() == "" || ref.Stream != "pod-a" {
					t.Fatalf("refusal %+v", ref)
				}
				return
			}
			if ref != nil {
				t.Fatalf("refused: %v", ref)
			}
			if got := seqs(p); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("served %v, want %v", got, c.want)
			}
			if !reflect.DeepEqual(p.Through, c.through) || p.Complete != c.complete {
				t.Fatalf("through %v complete %v, want %v %v", p.Through, p.Complete, c.through, c.complete)
			}
		})
	}
}

// TestDecideExactlyOnceModel replays random histories of one stream (seals, batched commits
// that retire or remove their segments, sweeps of retention, quarantines) and a reader whose
// snapshot is some commits old. Whatever Decide serves must be exactly the sealed segments above
// the reader's mark up to the highest it serves, minus quarantined ones: the rows the reader's
// snapshot lacks, none it has. This is the property promise 12 rests on; dropping the chain check
// (serving the live segments above the reader's mark whenever retention is incomplete) fails it.
func TestDecideExactlyOnceModel(t *testing.T) {
	const stream = "pod-0"
	refused, chained := 0, 0
	for run := 0; run < 3000; run++ {
		rng := rand.New(rand.NewPCG(uint64(run), 7))
		type seg struct {
			seq         uint64
			committed   bool
			quarantined bool
			gone        bool // removed from the WAL dir (committed or quarantined)
			retained    bool
			prev        marks.Mark
		}
		var segs []*seg
		var mark marks.Mark // the table's mark
		var tblMarks []marks.Mark
		tblMarks = append(tblMarks, mark)
		next := uint64(1)
		steps := 5 + rng.IntN(30)
		for i := 0; i < steps; i++ {
			switch rng.IntN(4) {
			case 0, 1: // seal (sometimes wasting a seq number)
				next += uint64(rng.IntN(2))
				segs = append(segs, &seg{seq: next})
				next++
			case 2: // a drain batch: the oldest uncommitted segments, possibly quarantining one
				prev := mark
				n := 1 + rng.IntN(3)
				var batch []*seg
				for _, s := range segs {
					if !s.committed && !s.quarantined && len(batch) < n {
						batch = append(batch, s)
					}
				}
				if len(batch) == 0 {
					continue
				}
				retire := rng.IntN(4) > 0
				pending := rng.IntN(6) == 0 // committed, not yet out of the WAL dir (the drain's next step)
				var kept []*seg
				for _, s := range batch {
					if rng.IntN(10) == 0 {
						s.quarantined, s.gone = true, true
						continue
					}
					kept = append(kept, s)
				}
				for _, s := range kept {
					s.committed, s.gone = true, !pending
					if retire && !pending {
						s.retained, s.prev = true, prev
					}
					prev = mk(1, s.seq)
				}
				if len(kept) > 0 {
					mark = mk(1, kept[len(kept)-1].seq)
					tblMarks = append(tblMarks, mark)
				}
			case 3: // sweep a random retained segment
				for _, s := range segs {
					if s.retained && rng.IntN(3) == 0 {
						s.retained = false
						break
					}
				}
			}
		}
		after := tblMarks[rng.IntN(len(tblMarks))] // the reader's snapshot, some commits old
		req := Request{Streams: []string{stream}, After: reader.Marks{stream: after}, Current: reader.Marks{stream: mark}}
		if after == (marks.Mark{}) && rng.IntN(2) == 0 {
			req.After = reader.Marks{} // a reader of a table without this stream's mark yet
		}
		for _, s := range segs {
			switch {
			case s.retained:
				req.Retained = append(req.Retained, Segment{Name: fmt.Sprint(s.seq), Stream: stream, Mark: mk(1, s.seq), Retained: true, Prev: s.prev})
			case !s.gone:
				req.Live = append(req.Live, Segment{Name: fmt.Sprint(s.seq), Stream: stream, Mark: mk(1, s.seq)})
			}
		}
		p, ref := Decide(req)
		if ref != nil {
			refused++
			continue
		}
		var got, want []uint64
		for _, s := range p.Serve {
			got = append(got, s.Mark.Seq)
			if s.Retained {
				chained++
			}
		}
		top := p.Through[stream]
		for _, s := range segs {
			if after.Less(mk(1, s.seq)) && !top.Less(mk(1, s.seq)) && !s.quarantined {
				want = append(want, s.seq)
			}
		}
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("run %d: reader at %v, table at %v: served %v, want %v (segments %+v)", run, after, mark, got, want, segs)
		}
		// Nothing sealed above the answer was left out either.
		for _, s := range req.Live {
			if top.Less(s.Mark) && after.Less(s.Mark) {
				t.Fatalf("run %d: live segment %v above through %v not served", run, s.Mark, top)
			}
		}
	}
	if refused == 0 || chained == 0 {
		t.Fatalf("the model never refused (%d) or never served a retained chain (%d): it tests nothing", refused, chained)
	}
	t.Logf("3000 histories: %d refused, %d retained segments served", refused, chained)
}
