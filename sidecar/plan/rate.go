package plan

import (
	"math"
	"time"
)

// RewriteRate measures a rewriter's speed for Input.Rewriter: a line fitted
// to its recent rewrites, time = fixed + bytes x per-byte, because a bin's
// fixed costs (opening inputs, the commit, the catalog round trips) weigh as
// much as its bytes when bins are small (docs/compaction.md, "The pass's time
// limit"). Each older rewrite weighs rateDecay times less than the next,
// so the fit follows a change of machine or of bin mix within tens of bins.
// The zero value knows no speed.
type RewriteRate struct {
	n, x, y, xx, xy float64 // decayed sums over rewrites of 1, MB, s, MB², MB·s
}

const rateDecay = 0.9

// Add records one rewrite of bytes input bytes that took d.
func (r *RewriteRate) Add(bytes int64, d time.Duration) {
	if bytes <= 0 || d <= 0 {
		return
	}
	x, y := float64(bytes)/1e6, d.Seconds()
	r.n = r.n*rateDecay + 1
	r.x = r.x*rateDecay + x
	r.y = r.y*rateDecay + y
	r.xx = r.xx*rateDecay + x*x
	r.xy = r.xy*rateDecay + x*y
}

// Known reports whether a rewrite was recorded.
func (r RewriteRate) Known() bool { return r.n > 0 }

// Estimate is how long a rewrite of bytes input bytes is expected to take, 0
// when no speed is known. Where the rewrites seen do not determine a line
// (all of one size) or the fit has no positive per-byte cost, it is their
// mean time per byte with no fixed part.
func (r RewriteRate) Estimate(bytes int64) time.Duration {
	if !r.Known() {
		return 0
	}
	perMB, fixed := r.y/r.x, 0.0
	if den := r.n*r.xx - r.x*r.x; den > 1e-9*r.n*r.xx {
		if b := (r.n*r.xy - r.x*r.y) / den; b > 0 {
			perMB, fixed = b, max((r.y-b*r.x)/r.n, 0)
		}
	}
	s := fixed + perMB*float64(bytes)/1e6
	if math.IsNaN(s) || s < 0 {
		return 0
	}
	return time.Duration(min(s, 1e9) * float64(time.Second))
}

// BusyShare measures the share of wall time a rewriter spends rewriting,
// for Input.RewriterBusy, over about the last busyWindow: each interval
// added weighs less the longer ago it ended.
type BusyShare struct {
	busy, wall float64 // decayed seconds
}

// busyWindow is BusyShare's time constant: long enough to span a table's
// hourly L2 sweep and its quiet minutes, short enough to see a stall end.
const busyWindow = 10 * time.Minute

// Add records an interval of wall time of which busy was spent rewriting.
func (s *BusyShare) Add(busy, wall time.Duration) {
	if wall <= 0 {
		return
	}
	busy = min(max(busy, 0), wall)
	k := math.Exp(-wall.Seconds() / busyWindow.Seconds())
	s.busy = s.busy*k + busy.Seconds()
	s.wall = s.wall*k + wall.Seconds()
}

// Share is the measured share, 0 before any interval.
func (s BusyShare) Share() float64 {
	if s.wall <= 0 {
		return 0
	}
	return s.busy / s.wall
}
