package marks_test

import (
	"testing"

	"github.com/siglake/siglake/sidecar/lake/marks"
)

// TestCheckMark: the mark rules of every append, at the edges of first..last.
func TestCheckMark(t *testing.T) {
	m := func(inc, seq uint64) marks.Mark { return marks.Mark{Incarnation: inc, Seq: seq} }
	first, last := m(2, 5), m(2, 8)
	for _, c := range []struct {
		cur  marks.Mark
		has  bool
		want marks.MarkCheck
	}{
		{marks.Mark{}, false, marks.MarkBelow},
		{m(2, 4), true, marks.MarkBelow},
		{m(1, 99), true, marks.MarkBelow}, // an older incarnation is below every seq of a newer one
		{m(2, 5), true, marks.MarkInside},
		{m(2, 7), true, marks.MarkInside},
		{m(2, 8), true, marks.MarkCovers},
		{m(2, 9), true, marks.MarkCovers},
		{m(3, 0), true, marks.MarkCovers},
	} {
		if got := marks.CheckMark(c.cur, c.has, first, last); got != c.want {
			t.Errorf("CheckMark(%s, %v, %s, %s) = %d, want %d", c.cur, c.has, first, last, got, c.want)
		}
	}
	if got := marks.CheckMark(m(1, 1), true, m(1, 1), m(1, 1)); got != marks.MarkCovers {
		t.Errorf("a one-segment batch at the mark: %d, want covers", got)
	}
}

// TestMarkGolden: today's stored form reads and re-encodes to the same bytes.
func TestMarkGolden(t *testing.T) {
	const stored = "7:123456"
	m, err := marks.ParseMark(stored)
	if err != nil || m != (marks.Mark{Incarnation: 7, Seq: 123456}) || m.String() != stored {
		t.Fatalf("mark %q read as %+v, %v; re-encoded %q", stored, m, err, m.String())
	}
}
