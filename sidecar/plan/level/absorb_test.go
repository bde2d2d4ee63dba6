package level

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// big is a terminal file: 300 MiB, 6 M rows spread over [fromSec, toSec).
func big(part string, i, gen int, fromSec, toSec int64) File {
	return File{Path: fmt.Sprintf("%s/big%02d-g%d", part, i, gen), Partition: part, SizeBytes: 300 * mib,
		Generation: gen, MinTime: fromSec * 1e6, MaxTime: toSec*1e6 - 1, Rows: 6_000_000}
}

// straggler is a small file of rows over [fromSec, toSec).
func straggler(part string, i, gen int, fromSec, toSec int64) File {
	return File{Path: fmt.Sprintf("%s/s%02d-g%d", part, i, gen), Partition: part, SizeBytes: 4 * mib,
		Generation: gen, MinTime: fromSec * 1e6, MaxTime: toSec*1e6 - 1, Rows: 20_000}
}

func TestSpliceEstimate(t *testing.T) {
	t0 := big("d", 0, 1, 0, 3600)
	rg := t0.SizeBytes * RowGroupRows / t0.Rows
	for _, c := range []struct {
		name string
		fs   []File
		want int64
	}{
		{"disjoint", []File{t0, big("d", 1, 1, 3600, 7200)}, 0},
		{"edge: the last 36 s and a row group, the small file whole",
			[]File{t0, straggler("d", 0, 1, 3564, 3600)}, t0.SizeBytes/100 + rg + 4*mib},
		{"inside: two row-group edges", []File{t0, straggler("d", 0, 1, 1800, 1836)}, t0.SizeBytes/100 + 2*rg + 4*mib},
		{"no row count: whole", []File{{Path: "a", SizeBytes: 10, MaxTime: 9}, {Path: "b", SizeBytes: 5, MinTime: 10, MaxTime: 19}}, 15},
	} {
		if got := spliceEstimate(c.fs); got < c.want-c.want/100-1 || got > c.want+c.want/100+1 {
			t.Errorf("%s: estimate %d, want about %d", c.name, got, c.want)
		}
	}
}

// TestAbsorbCostRule: the absorb bins the L2 check builds pass the cost rule by the splice model:
// a straggler at a terminal file's edge re-encodes a row group or two, and on random terminal
// layers with stragglers (the generator of plan's TestAbsorbBinsProperties, which checks the
// bins' other properties through Plan) no bin re-encodes more than AbsorbMaxReencode.
func TestAbsorbCostRule(t *testing.T) {
	cfg := DefaultRules()
	edge := []File{big("d", 0, 3, 0, 3600), straggler("d", 0, 8, 3560, 3580)}
	bins := absorbBins(cfg, "d", edge, edge)
	if len(bins) != 1 || len(bins[0].Files) != 2 {
		t.Fatalf("want one absorb bin of both files, got %v", bins)
	}
	if b := bins[0]; spliceEstimate(b.Files) > b.EstimatedBytes/10 {
		t.Errorf("estimated re-encode %d of %d bytes: the straggler touches one or two row groups", spliceEstimate(b.Files), b.EstimatedBytes)
	}

	r := rand.New(rand.NewPCG(15, 2))
	planned := 0
	for iter := range 3000 {
		cfg := DefaultRules()
		cfg.MaxFanIn = 2 + r.IntN(8)
		var files []File
		tm := int64(0)
		for i := range 2 + r.IntN(10) {
			w := 60 + r.Int64N(600)
			files = append(files, big("d", i, r.IntN(10), tm, tm+w))
			tm += w + r.Int64N(3)*r.Int64N(60) // touching or with a gap
			if r.IntN(5) == 0 {
				tm -= r.Int64N(30) // now and then terminal files overlap
			}
		}
		for i := range r.IntN(12) {
			lo := r.Int64N(tm)
			files = append(files, straggler("d", i, r.IntN(10), lo, lo+1+r.Int64N(120)))
		}
		for _, c := range absorbCandidates(cfg, files) {
			for _, b := range c.Build(nil) {
				planned++
				if re := spliceEstimate(b.Files); float64(re) > cfg.AbsorbMaxReencode*float64(b.EstimatedBytes) {
					t.Fatalf("case %d: absorb bin re-encodes %d of %d bytes: %v", iter, re, b.EstimatedBytes, b)
				}
			}
		}
	}
	if planned == 0 {
		t.Fatal("no absorb bin in any case: the generator proves nothing")
	}
}
