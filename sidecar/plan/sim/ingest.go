package sim

import (
	"math"
	"math/rand/v2"
)

// piece is a time range [lo, hi] (microseconds, inclusive) holding bytes
// spread evenly. A simulated file is a few pieces, so a late tail of a few
// rows weighs little when a rewrite decides where to cut its outputs.
type piece struct {
	lo, hi int64
	bytes  float64
}

// ingest models one pod's commit of one batch: rows that arrived in
// [ws, we] (microseconds), batchBytes in total. It returns one file's pieces
// per partition the batch touches, keyed by partition index.
type ingest struct {
	r        *rand.Rand
	delay    float64 // on-time arrival delay, µs
	lateFrac float64
	lateMean float64 // µs
	width    float64 // partition width µs; 0 = one partition
	rowBytes float64
}

func (g *ingest) partOf(t float64) int64 {
	if g.width <= 0 {
		return 0
	}
	return int64(math.Floor(t / g.width))
}

// bounds returns partition j's [start, end) in µs.
func (g *ingest) bounds(j int64) (float64, float64) {
	if g.width <= 0 {
		return math.Inf(-1), math.Inf(1)
	}
	return float64(j) * g.width, float64(j+1) * g.width
}

// stochRound rounds x up with probability frac(x), keeping the mean.
func (g *ingest) stochRound(x float64) float64 {
	f := math.Floor(x)
	if g.r.Float64() < x-f {
		f++
	}
	return f
}

func (g *ingest) batch(ws, we int64, batchBytes float64) map[int64][]piece {
	out := map[int64][]piece{}
	rows := batchBytes / g.rowBytes
	late := 0.0
	if g.lateMean > 0 {
		late = g.stochRound(rows * g.lateFrac)
	}
	onBytes := batchBytes - late*g.rowBytes

	// On-time rows: event times evenly over [ws - delay, we].
	lo, hi := float64(ws)-g.delay, float64(we)
	if onBytes > 0 {
		for j := g.partOf(lo); j <= g.partOf(hi); j++ {
			ps, pe := g.bounds(j)
			a, b := math.Max(lo, ps), math.Min(hi, pe-1)
			if b < a {
				continue
			}
			share := onBytes * (b - a + 1) / (hi - lo + 1)
			out[j] = append(out[j], piece{int64(a), int64(b), share})
		}
	}
	if late == 0 {
		return out
	}
	// Late rows: event time ref - X, X exponential with mean lateMean,
	// ref the end of on-time arrival (window end minus the delay).
	ref := float64(we) - g.delay
	cdf := func(x float64) float64 { return 1 - math.Exp(-x/g.lateMean) }
	inv := func(p float64) float64 { return -g.lateMean * math.Log1p(-p) }
	for j := g.partOf(ref); ; j-- {
		ps, pe := g.bounds(j)
		a := math.Max(0, ref-(pe-1)) // X range mapping into partition j
		b := ref - ps
		pa, pb := cdf(a), 1.0
		if !math.IsInf(b, 1) {
			pb = cdf(b)
		}
		mass := late * (pb - pa)
		if mass < 1e-4 || j < g.partOf(ref)-10000 {
			break
		}
		m := g.stochRound(mass)
		if m < 1 {
			continue
		}
		// Extremes of m draws from the exponential truncated to [a, b],
		// drawn jointly in quantile space: the largest first, then the
		// smallest of the other m-1 below it.
		qMax := math.Pow(g.r.Float64(), 1/m)
		qMin := qMax
		if m > 1 {
			qMin = qMax * (1 - math.Pow(1-g.r.Float64(), 1/(m-1)))
		}
		maxX := math.Min(inv(pa+qMax*(pb-pa)), b)
		minX := math.Max(inv(pa+qMin*(pb-pa)), a)
		if !(maxX >= minX) { // rounding in the far tail
			minX = maxX
		}
		if math.IsInf(maxX, 1) { // one partition: b is unbounded
			maxX = inv(1 - 1e-12)
		}
		out[j] = append(out[j], piece{int64(ref - maxX), int64(ref - minX), m * g.rowBytes})
		if math.IsInf(ps, -1) {
			break
		}
	}
	return out
}
