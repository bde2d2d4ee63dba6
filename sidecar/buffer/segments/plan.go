// Package segments decides which WAL segments an answer of the buffer holds: Decide, the pure
// rule that picks the segments above a reader's marks or refuses (promise 12, docs/wal-buffer.md),
// and Retention, which keeps committed segments a short while with the chain of marks in their
// names.
package segments

import (
	"fmt"
	"sort"

	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// Segment is a sealed segment of the requested table that the buffer could serve: one waiting in
// a WAL dir (live), or one a drain committed and the buffer keeps for a while (retained).
type Segment struct {
	// Name is the segment's file name in its WAL dir (for a retained one too).
	Name string
	// Path is where the file is now.
	Path string
	// Stream is the stream of the WAL dir the segment is in (one dir is one stream).
	Stream string
	// Mark is the segment's (incarnation, seq).
	Mark marks.Mark
	// Size is the file's size in bytes.
	Size int64
	// Retained says the segment's rows are committed; Prev is then the stream's mark just below
	// it as its drain commit recorded it: the previous segment of the same commit, or the mark
	// the commit replaced. A chain of Prev links from a reader's mark up to the table's mark
	// proves that no committed segment between them is missing.
	Retained bool
	Prev     marks.Mark
}

// Request is what Decide needs to know, read in this order (the order is what the proof in
// docs/wal-buffer.md relies on): the WAL dirs' listings, then the retained segments, then the
// table's marks from the catalog.
type Request struct {
	// Streams are the streams this buffer answers for (its WAL dirs). A stream it does not hold
	// is another pod's: this buffer neither serves nor judges it.
	Streams []string
	// After are the marks of the snapshot the reader read (after=); nil when the request named
	// none, which means the table's current marks.
	After reader.Marks
	// Current are the table's marks, read after the listings. Ignored when Unverified.
	Current reader.Marks
	// Unverified answers without the table's marks (the catalog is down): the live segments
	// above After, with no proof against a gap or an overlap with the lake.
	Unverified bool
	// Live and Retained are the table's segments found in the WAL dirs and in retention.
	Live, Retained []Segment
	// MaxSegments and MaxBytes cut the answer at a segment boundary (at least one segment is
	// always served); the reader asks again from Plan.Through.
	MaxSegments int
	MaxBytes    int64
}

// Plan is what an answer serves.
type Plan struct {
	// Serve are the segments, by stream, oldest first within a stream.
	Serve []Segment
	// After are the marks the answer's rows are above: the request's, or the table's current ones.
	After reader.Marks
	// Through are After advanced past every served segment: the after= of a next request that
	// wants only rows sealed since (a later page, or the next poll of a follower).
	Through reader.Marks
	// Complete is false when the limits cut the answer; the rest follows from Through.
	Complete bool
}

// Refusal is a request the buffer cannot answer without a gap: segments of Stream above the
// reader's mark were committed (the table's mark is Current) and are no longer all here. The
// reader reloads the table and asks again with its new marks (HTTP 409).
type Refusal struct {
	Stream  string
	After   marks.Mark // the reader's mark of the stream
	Current marks.Mark // the table's mark of the stream
	// Reason is "drained" (the committed segments above After are gone: removed, or past
	// SIGLAKE_BUFFER_RETAIN_AFTER_DRAIN) or "draining" (a commit just landed and its segments are
	// being moved into retention; retrying right away usually succeeds).
	Reason string
	// At is the mark from which no retained segment continues the chain.
	At marks.Mark
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("stream %s: the snapshot read has mark %s, the table is at %s, and the committed segments after %s are %s: reload the table and ask again with its marks",
		r.Stream, r.After, r.Current, r.At, map[string]string{"drained": "no longer kept", "draining": "being moved into retention"}[r.Reason])
}

// Decide picks the segments an answer serves, or refuses. Pure: every input is an argument.
//
// For a stream s with reader mark a and table mark c (both read as described at Request):
//   - c <= a: no segment above a was committed before the listing (a segment is removed only
//     after the commit that moves the mark past it), so the live segments above a are every
//     sealed segment above a. They are served.
//   - a < c: the segments in (a, c] are committed after the reader's snapshot. They are served
//     only if retention holds an unbroken chain of them from a to c; then the live segments
//     above c follow. Otherwise the request is refused.
func Decide(req Request) (Plan, *Refusal) {
	p := Plan{Complete: true}
	switch {
	case req.After != nil:
		p.After = req.After.Clone()
	case req.Unverified:
		p.After = reader.Marks{}
	default:
		p.After = req.Current.Clone()
	}
	live := map[string][]Segment{}
	retainedNames := map[string]bool{}
	byPrev := map[string]map[marks.Mark]Segment{}
	for _, s := range req.Retained {
		retainedNames[s.Name] = true
		if byPrev[s.Stream] == nil {
			byPrev[s.Stream] = map[marks.Mark]Segment{}
		}
		if o, dup := byPrev[s.Stream][s.Prev]; !dup || s.Mark.Less(o.Mark) {
			byPrev[s.Stream][s.Prev] = s
		}
	}
	for _, s := range req.Live {
		if !retainedNames[s.Name] { // moved into retention between the two listings
			live[s.Stream] = append(live[s.Stream], s)
		}
	}
	streams := append([]string(nil), req.Streams...)
	sort.Strings(streams)
	var serve []Segment
	for _, stream := range streams {
		a := p.After.Get(stream)
		from := a // live segments above this are served
		if !req.Unverified {
			c := req.Current.Get(stream)
			if a.Less(c) {
				cur := a
				for cur.Less(c) {
					next, ok := byPrev[stream][cur]
					if !ok || !cur.Less(next.Mark) || c.Less(next.Mark) {
						reason := "drained"
						if hasBetween(live[stream], cur, c) {
							reason = "draining"
						}
						return Plan{}, &Refusal{Stream: stream, After: a, Current: c, Reason: reason, At: cur}
					}
					serve = append(serve, next)
					cur = next.Mark
				}
				from = c
			}
		}
		ls := live[stream]
		sort.Slice(ls, func(i, j int) bool { return ls[i].Mark.Less(ls[j].Mark) })
		for _, s := range ls {
			if from.Less(s.Mark) {
				serve = append(serve, s)
			}
		}
	}
	p.Through = p.After.Clone()
	var bytes int64
	for i, s := range serve {
		bytes += s.Size
		if i > 0 && (req.MaxSegments > 0 && i >= req.MaxSegments || req.MaxBytes > 0 && bytes > req.MaxBytes) {
			p.Complete = false
			break
		}
		p.Serve = append(p.Serve, s)
		p.Through[s.Stream] = s.Mark
	}
	return p, nil
}

// hasBetween reports whether a live segment lies in (lo, hi]: committed, not yet moved into
// retention.
func hasBetween(segs []Segment, lo, hi marks.Mark) bool {
	for _, s := range segs {
		if lo.Less(s.Mark) && !hi.Less(s.Mark) {
			return true
		}
	}
	return false
}

// Cut ends p before segment g (and everything after it): the limits stop the answer there.
func (p Plan) Cut(g Segment) Plan {
	out := Plan{After: p.After, Through: p.After.Clone(), Complete: false}
	for _, s := range p.Serve {
		if s.Name == g.Name && s.Stream == g.Stream {
			break
		}
		out.Serve = append(out.Serve, s)
		out.Through[s.Stream] = s.Mark
	}
	return out
}
