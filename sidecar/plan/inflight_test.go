package plan

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// reachesRange reports whether a bin's time range overlaps [lo, hi] (µs).
func reachesRange(b level.Bin, lo, hi int64) bool {
	bl, bh := b.Files[0].MinTime, b.Files[0].MaxTime
	for _, f := range b.Files {
		bl, bh = min(bl, f.MinTime), max(bh, f.MaxTime)
	}
	return bl <= hi && lo <= bh
}

// TestDepthBinWaitsForBinInFlight: a deep drifting stack whose first 32 files are in a running
// bin. The pass leaves them out, holds back the files overlapping them, and plans the depth bins
// over the rest only: no bin's range reaches the running bin's, whose outputs land there. Planned
// from the live files less the in-flight ones alone (the simulator's filter before), the depth
// bins took files overlapping the running bin.
func TestDepthBinWaitsForBinInFlight(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EligibleFiles = 1000 // depth bins only
	var fs []level.File
	for i := range 150 { // file i covers [i, i+60) s
		fs = append(fs, file("p", i, 100, 0, int64(i), int64(i+60)))
	}
	inFlight := map[string]bool{}
	var rest []level.File
	for i, f := range fs {
		if i < 32 {
			inFlight[f.Path] = true
		} else {
			rest = append(rest, f)
		}
	}
	running := [2]int64{0, 91e6 - 1}                          // the in-flight files' range: [0, 31+60) s
	st := State{LastCheck: [level.NumLevels]time.Time{2: t0}} // no L2 sweep

	p := Plan(cfg, Input{Files: fs, Now: t0, State: st, InFlight: inFlight})
	if len(p.Bins) == 0 {
		t.Fatalf("nothing planned beside the running bin: %v", p)
	}
	for _, b := range p.Bins {
		if reachesRange(b, running[0], running[1]) {
			t.Errorf("bin %v reaches the running bin's range", b)
		}
		for _, f := range b.Files {
			if f.MinTime < 91e6 {
				t.Errorf("bin holds %s, in flight or overlapping a file in flight", f.Path)
			}
		}
	}
	skipped := strings.Join(p.Skipped, "\n")
	if !strings.Contains(skipped, "in flight: 32 input files of running bins left out; 59 files overlapping them wait") {
		t.Errorf("in-flight files not reported: %s", skipped)
	}
	if p.Depth["p"] != 60 {
		t.Errorf("reported depth %d, want 60: the files in flight are live", p.Depth["p"])
	}

	before := Plan(cfg, Input{Files: rest, Now: t0, State: st})
	reached := false
	for _, b := range before.Bins {
		reached = reached || reachesRange(b, running[0], running[1])
	}
	if !reached {
		t.Errorf("without InFlight no bin reached the running bin's range: the example shows nothing\n%v", before)
	}
}

// TestLevelBinLeavesClusterInFlightWhole: an L0 cluster two of whose files are in flight is left
// whole for a later pass; a cluster apart from it is a level bin.
func TestLevelBinLeavesClusterInFlightWhole(t *testing.T) {
	cfg := DefaultConfig()
	fs := append(stacked("q", 0, 10, 100, 0), stacked("q", 10, 8, 100, 0)...)
	for i := 10; i < 18; i++ { // the second cluster at [100, 110) s
		fs[i].MinTime, fs[i].MaxTime = 100e6, 110e6-1
	}
	p := Plan(cfg, Input{Files: fs, Now: t0, InFlight: map[string]bool{fs[0].Path: true, fs[1].Path: true}})
	if kinds(p) != "l0:8" {
		t.Fatalf("bins %q, want the free cluster's l0:8", kinds(p))
	}
	for _, f := range p.Bins[0].Files {
		if f.MinTime != 100e6 {
			t.Errorf("level bin took %s of the cluster in flight", f.Path)
		}
	}
}

// TestBudgetsPerWorker: the pass's bin and file budgets are per worker; 0 and 1 are one worker.
func TestBudgetsPerWorker(t *testing.T) {
	cfg := DefaultConfig()
	var fs []level.File
	for p := range 20 { // 20 partitions, each an eligible L0 bin of 9 files
		fs = append(fs, disjoint(fmt.Sprintf("p%02d", p), 9, 100, 0)...)
	}
	for _, c := range []struct{ workers, bins int }{{0, 4}, {1, 4}, {2, 8}, {3, 12}, {10, 20}} {
		p := Plan(cfg, Input{Files: fs, Now: t0, Workers: c.workers})
		if len(p.Bins) != c.bins {
			t.Errorf("%d workers: %d bins, want %d", c.workers, len(p.Bins), c.bins)
		}
	}
	cfg.MaxFilesPerPass = cfg.MaxFanIn // 3 bins of 9 files per worker
	for _, c := range []struct{ workers, bins int }{{1, 3}, {2, 7}, {4, 14}} {
		p := Plan(cfg, Input{Files: fs, Now: t0, Workers: c.workers})
		if len(p.Bins) != c.bins || p.Files() > c.workers*cfg.MaxFilesPerPass {
			t.Errorf("%d workers, %d files each: %d bins of %d files, want %d bins", c.workers, cfg.MaxFilesPerPass, len(p.Bins), p.Files(), c.bins)
		}
	}
	// The restricted pass of a backlogged cycle keeps its own bin budget.
	st := State{BackloggedCycles: cfg.BackpressureCompactEvery - 1}
	p := Plan(DefaultConfig(), Input{Files: fs, Now: t0, Workers: 10, SealedBacklog: 1000, State: st})
	if p.Decision != DecisionThrottledBackpressure || len(p.Bins) != DefaultConfig().BackpressureMaxBins {
		t.Errorf("throttled pass with 10 workers: %v, %d bins; want %d", p.Decision, len(p.Bins), DefaultConfig().BackpressureMaxBins)
	}
}
