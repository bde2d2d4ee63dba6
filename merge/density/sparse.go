package density

import (
	"cmp"
	"slices"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/merge/input"
)

// Density-aware output cuts. A late row stretches the file that holds it
// back by minutes, and every file whose range it stretches overlaps every
// other file at the ingest edge (docs/compaction.md, "Late rows"). A writer
// that cuts where the row density falls keeps the dense body of a batch or
// a bin in tight files and puts the sparse tail in files of its own. The
// cuts are bucket boundaries, so they fall between two timestamps and the
// outputs stay pairwise time-disjoint.

// DefaultSplitSparse is the density, as a fraction of the median density,
// below which a run of time buckets is cut into its own output
// (SIGLAKE_COMPACTOR_SPLIT_SPARSE). 0.05 is what the simulator measured
// best on the documented scenarios (docs/compaction.md).
const DefaultSplitSparse = 0.05

// SplitSparseMinRows: a drain batch of fewer rows is cut by size only. A
// small file is merged again soon whatever its range, so a stretched range
// costs it little, while every cut adds a file (the simulator's measurements:
// docs/compaction.md, "Late rows").
const SplitSparseMinRows = 1 << 16

// DrainBucketMicros is the histogram resolution of a drain batch: its
// on-time window is seconds wide, so minute buckets would hide the edge.
const DrainBucketMicros = 1_000_000

// maxCutBuckets bounds a histogram; wider spans get wider buckets.
const maxCutBuckets = 4096

// TimeHistogram is rows per time bucket: Counts[i] rows lie in
// [Start + i*Width, Start + (i+1)*Width), microseconds.
type TimeHistogram struct {
	Start, Width int64
	Counts       []int64
}

// Cuts are the boundaries between the dense and the sparse runs of a batch or bin, in
// ascending order: the runs alternate at each cut, and FirstSparse says whether the rows before
// At[0] are sparse. A writer starts a new file at each cut, and names a file whose first row is
// in a sparse run with WriterOptions.LatePath (docs/compaction.md, "Late rows"). A bucket is
// dense when it holds at least frac times the median density, the median taken over rows (the
// density below which half of the rows lie), as the simulator's Scenario.SplitSparse models it;
// frac <= 0 or fewer than two non-empty buckets give no cuts.
type Cuts struct {
	At          []int64
	FirstSparse bool
}

// SparseAt reports whether a row at ts lies in a sparse run.
func (c Cuts) SparseAt(ts int64) bool {
	passed := sort.Search(len(c.At), func(i int) bool { return c.At[i] > ts })
	return c.FirstSparse != (passed%2 == 1)
}

// CutsOfHistogram is the cut rule (CutsOfBuckets) over h's non-empty buckets.
func CutsOfHistogram(h TimeHistogram, frac float64) Cuts {
	if h.Width <= 0 {
		return Cuts{}
	}
	var bs []timeBucket
	for i, c := range h.Counts {
		if c > 0 {
			bs = append(bs, timeBucket{start: h.Start + int64(i)*h.Width, rows: c})
		}
	}
	return CutsOfBuckets(bs, frac)
}

// timeBucket is a non-empty time bucket: rows rows from start on, up to the next bucket's start
// at most.
type timeBucket struct{ start, rows int64 }

// CutsOfBuckets is the cut rule over non-empty buckets of one width in time order: a bucket is
// dense when it holds at least frac times the median bucket (taken over rows), and each change
// between dense and sparse is a cut at the later bucket's start. Empty buckets are not listed, so
// a batch with a row days before the rest costs a bucket, not a histogram wide enough for the
// days between.
func CutsOfBuckets(bs []timeBucket, frac float64) Cuts {
	if frac <= 0 || len(bs) < 2 {
		return Cuts{}
	}
	var total int64
	byDensity := make([]int64, len(bs))
	for i, b := range bs {
		total += b.rows
		byDensity[i] = b.rows
	}
	slices.SortFunc(byDensity, func(a, b int64) int { return cmp.Compare(b, a) })
	var acc, median int64
	for _, c := range byDensity {
		acc += c
		if 2*acc >= total {
			median = c
			break
		}
	}
	threshold := frac * float64(median)
	cuts := Cuts{FirstSparse: float64(bs[0].rows) < threshold}
	prev := !cuts.FirstSparse
	for _, b := range bs[1:] {
		if dense := float64(b.rows) >= threshold; dense != prev {
			cuts.At = append(cuts.At, b.start)
			prev = dense
		}
	}
	if len(cuts.At) == 0 {
		return Cuts{} // one run: all of it is the batch's dense body
	}
	return cuts
}

// BucketsOfSorted counts sorted timestamps (µs) per bucket of width.
func BucketsOfSorted(ts []int64, width int64) []timeBucket {
	var bs []timeBucket
	for _, t := range ts {
		start := floorDivI(t, width) * width
		if n := len(bs); n > 0 && bs[n-1].start == start {
			bs[n-1].rows++
			continue
		}
		bs = append(bs, timeBucket{start: start, rows: 1})
	}
	return bs
}

// BatchCuts are the density cuts of a drain batch: one histogram over all the rows of
// recs, whatever partition each goes to, so that the rows a batch brings to a day that has
// closed (all of them late) are found sparse too. A batch under SplitSparseMinRows rows, or frac
// <= 0, gives no cuts. Rows with a null timestamp are left out (the write refuses them).
func BatchCuts(recs []arrow.RecordBatch, tsColumn string, frac float64) Cuts {
	if frac <= 0 {
		return Cuts{}
	}
	per := map[int64]int64{} // rows per second: a sparse count, however far apart the rows lie
	var rows int64
	for _, r := range recs {
		idx := r.Schema().FieldIndices(tsColumn)
		if len(idx) == 0 {
			continue
		}
		col, ok := r.Column(idx[0]).(*array.Timestamp)
		if !ok {
			continue
		}
		unit := col.DataType().(*arrow.TimestampType).Unit
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) {
				per[floorDivI(input.ToMicros(int64(col.Value(i)), unit), DrainBucketMicros)]++
				rows++
			}
		}
	}
	if rows < SplitSparseMinRows {
		return Cuts{}
	}
	bs := make([]timeBucket, 0, len(per))
	for sec, n := range per {
		bs = append(bs, timeBucket{start: sec * DrainBucketMicros, rows: n})
	}
	slices.SortFunc(bs, func(a, b timeBucket) int { return cmp.Compare(a.start, b.start) })
	return CutsOfBuckets(bs, frac)
}

// FooterHistogram sums the time-bucket footers of a bin's inputs at the
// widest of their bucket widths (all are the default width times a power
// of two, so each is a multiple of the others). ok is false when an input
// has no time-bucket entry: without it the bin is cut by size only.
func FooterHistogram(footers []*index.Footer) (TimeHistogram, bool) {
	type entry struct {
		start, width int64
		counts       []int64
	}
	var es []entry
	var width, lo, hi int64
	for _, f := range footers {
		if f == nil {
			return TimeHistogram{}, false
		}
		s, w, c, ok := f.TimeBuckets()
		if !ok || w <= 0 {
			return TimeHistogram{}, false
		}
		if len(c) == 0 {
			continue
		}
		es = append(es, entry{s, w, c})
		end := s + int64(len(c))*w
		if len(es) == 1 {
			lo, hi = s, end
		} else {
			lo, hi = min(lo, s), max(hi, end)
		}
		width = max(width, w)
	}
	if len(es) == 0 {
		return TimeHistogram{}, false
	}
	for _, e := range es {
		if width%e.width != 0 {
			return TimeHistogram{}, false // not the format we write; cut by size
		}
	}
	for floorDivI(hi-1, width)-floorDivI(lo, width)+1 > maxCutBuckets {
		width *= 2
	}
	start := floorDivI(lo, width)
	h := TimeHistogram{Start: start * width, Width: width, Counts: make([]int64, floorDivI(hi-1, width)-start+1)}
	for _, e := range es {
		for i, n := range e.counts {
			t := e.start + int64(i)*e.width
			h.Counts[floorDivI(t, width)-start] += n
		}
	}
	return h, true
}

func floorDivI(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
