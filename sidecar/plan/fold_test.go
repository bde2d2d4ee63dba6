package plan

import (
	"fmt"
	"testing"

	"github.com/siglake/siglake/sidecar/plan/level"
)

func foldFile(part string, i int, min, max int64, folded bool, tier int) FoldFile {
	return FoldFile{File: level.File{Path: fmt.Sprintf("%s/f%02d", part, i), Partition: part, SizeBytes: 1000, MinTime: min, MaxTime: max},
		Folded: folded, Tier: tier}
}

func TestPlanFoldSmallAndMany(t *testing.T) {
	cfg := FoldConfig{MinFiles: 4, MaxFanIn: 32, TargetBytes: 1 << 20}
	var files []FoldFile
	for i := 0; i < 3; i++ { // three pods' overlapping flushes
		files = append(files, foldFile("d1", i, 100, 200, false, 0))
	}
	if bins := PlanFold(cfg, files, nil, nil); len(bins) != 0 {
		t.Fatalf("3 unfolded files < 4: got %d bins", len(bins))
	}
	files = append(files, foldFile("d1", 3, 150, 250, false, 0), foldFile("d1", 4, 180, 300, true, 0), foldFile("d1", 5, 1000, 2000, true, 0))
	bins := PlanFold(cfg, files, nil, nil)
	if len(bins) != 1 || bins[0].Kind != level.KindFold || len(bins[0].Files) != 5 || bins[0].Tier != 0 {
		t.Fatalf("want one fold bin of the 5 overlapping files (the folded file they overlap too), got %+v", bins)
	}
	if bins := PlanFold(cfg, files, nil, map[string]bool{"d1/f00": true, "d1/f01": true}); len(bins) != 0 {
		t.Fatalf("taken files leave 2 unfolded: got %+v", bins)
	}
	cfg.MaxFanIn = 2
	bins = PlanFold(cfg, files, nil, nil)
	n := 0
	for _, b := range bins {
		if len(b.Files) > 2 {
			t.Fatalf("bin of %d files exceeds the fan-in 2", len(b.Files))
		}
		n += len(b.Files)
	}
	if n != 5 {
		t.Fatalf("fan-in pieces hold %d files, want 5", n)
	}
}

// TestPlanFoldTiers: a file is coarsened once per tier, when all its rows are past the cutoff,
// with a controllable clock (the cutoffs) and without waiting for MinFiles.
func TestPlanFoldTiers(t *testing.T) {
	cfg := FoldConfig{MinFiles: 8, MaxFanIn: 32, TargetBytes: 1 << 20}
	files := []FoldFile{foldFile("d1", 0, 100, 200, true, 0), foldFile("d2", 1, 5000, 6000, true, 0)}
	for _, c := range []struct {
		cut  FoldCutoffs
		want map[string]int // partition -> tier of its bin
	}{
		{FoldCutoffs{150}, nil},                                    // d1 straddles the cutoff: not yet
		{FoldCutoffs{201}, map[string]int{"d1": 1}},                // past tier 1
		{FoldCutoffs{7000, 201}, map[string]int{"d1": 2, "d2": 1}}, // d1 past both, d2 past the first
	} {
		bins := PlanFold(cfg, files, c.cut, nil)
		got := map[string]int{}
		for _, b := range bins {
			got[b.Partition] = b.Tier
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Fatalf("cutoffs %v: bins %v, want %v", c.cut, got, c.want)
		}
	}
	// Recorded at its tier, a file is not coarsened again to it.
	files[0].Tier = 1
	if bins := PlanFold(cfg, files, FoldCutoffs{201}, nil); len(bins) != 0 {
		t.Fatalf("a file at tier 1 was planned for tier 1 again: %+v", bins)
	}
	if bins := PlanFold(cfg, files, FoldCutoffs{7000, 201}, nil); len(bins) != 2 {
		t.Fatalf("want d1 to tier 2 and d2 to tier 1, got %+v", bins)
	}
}
