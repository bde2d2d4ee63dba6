package plan

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const mib = int64(1) << 20

const kib = int64(1) << 10

// file builds a file; size in KiB, times in seconds (stored as microseconds).
func file(part string, i int, sizeKiB int64, gen int, fromSec, toSec int64) level.File {
	return level.File{
		Path:      fmt.Sprintf("%s/f%04d-g%d.parquet", part, i, gen),
		Partition: part, SizeBytes: sizeKiB * kib, Generation: gen,
		MinTime: fromSec * 1e6, MaxTime: toSec*1e6 - 1, Rows: sizeKiB,
	}
}

// disjoint returns n small disjoint files of one partition.
func disjoint(part string, n int, sizeKiB int64, gen int) []level.File {
	out := make([]level.File, n)
	for i := range out {
		out[i] = file(part, i, sizeKiB, gen, int64(i)*10, int64(i)*10+10)
	}
	return out
}

// stacked returns n files covering the same 10 s, first index start.
func stacked(part string, start, n int, sizeKiB int64, gen int) []level.File {
	out := make([]level.File, n)
	for i := range out {
		out[i] = file(part, start+i, sizeKiB, gen, 0, 10)
	}
	return out
}

func run(cfg Config, files []level.File) Pass {
	return Plan(cfg, Input{Files: files, Now: t0})
}

func kinds(p Pass) string {
	var ks []string
	for _, b := range p.Bins {
		ks = append(ks, fmt.Sprintf("%s:%d", b.Kind, len(b.Files)))
	}
	return strings.Join(ks, ",")
}

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig()
	bad.MaxFanIn = 1
	bad.L2MinBytes = bad.L1MinBytes
	bad.EligibleFiles = 0
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad config validated")
	}
	for _, want := range []string{"fan-in", "level boundaries", "eligible files"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestAbsorbMaxReencodeRange: a share outside [0, 1], NaN included, fails Validate, and the
// planner's clamp takes it into the range (NaN plans no absorb bin rather than every one).
func TestAbsorbMaxReencodeRange(t *testing.T) {
	for v, want := range map[float64]float64{math.NaN(): 0, -0.5: 0, 1.5: 1, 0: 0, 0.5: 0.5, 1: 1} {
		c := DefaultConfig()
		c.AbsorbMaxReencode = v
		if err, inRange := c.Validate(), v == want && !math.IsNaN(v); (err == nil) != inRange {
			t.Errorf("AbsorbMaxReencode %v: Validate %v", v, err)
		}
		if got := c.sane().AbsorbMaxReencode; got != want {
			t.Errorf("AbsorbMaxReencode %v: sane gives %v, want %v", v, got, want)
		}
	}
}

func TestLevelOfBoundaries(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		size int64
		want level.Level
	}{{0, level.L0}, {16*mib - 1, level.L0}, {16 * mib, level.L1}, {256*mib - 1, level.L1}, {256 * mib, level.L2}, {1 << 40, level.L2}} {
		if got := c.LevelOf(tc.size); got != tc.want {
			t.Errorf("LevelOf(%d) = %v, want %v", tc.size, got, tc.want)
		}
	}
}

func TestCheckCadence(t *testing.T) {
	cfg := DefaultConfig()
	st := State{}
	step := func(at time.Duration) []level.Level {
		p := Plan(cfg, Input{Now: t0.Add(at), State: st})
		st = p.Next
		return p.Checked
	}
	for _, tc := range []struct {
		at   time.Duration
		want string
	}{
		{0, "[L0 L1 L2]"},
		{5 * time.Second, "[]"},
		{10 * time.Second, "[L0]"},
		{18900 * time.Millisecond, "[]"}, // 8.9 s after the last: before the 1 s slack
		{60 * time.Second, "[L0 L1]"},
		{3600 * time.Second, "[L0 L1 L2]"},
	} {
		got := fmt.Sprint(step(tc.at))
		if got != tc.want {
			t.Errorf("at %v: checked %s, want %s", tc.at, got, tc.want)
		}
	}
	p := Plan(cfg, Input{Now: t0.Add(3601 * time.Second), State: st})
	if p.Decision != DecisionNothingDue {
		t.Errorf("decision %v, want nothing_due", p.Decision)
	}
}

func TestL0EligibleAtEightFiles(t *testing.T) {
	cfg := DefaultConfig()
	if p := run(cfg, disjoint("p", 7, 100, 0)); len(p.Bins) != 0 {
		t.Fatalf("7 files planned %s", kinds(p))
	}
	p := run(cfg, disjoint("p", 8, 100, 0))
	if kinds(p) != "l0:8" {
		t.Fatalf("8 files planned %q, want one l0 bin of 8\n%v", kinds(p), p)
	}
	if g := p.Bins[0].OutputGeneration(); g != 1 {
		t.Errorf("output generation %d, want 1", g)
	}
	// 8 files, one of them an L1 file: L0 holds 7, not eligible.
	fs := disjoint("p", 8, 100, 0)
	fs[3].SizeBytes = 20 * mib
	if p := run(cfg, fs); len(p.Bins) != 0 {
		t.Fatalf("7 L0 + 1 L1 planned %s", kinds(p))
	}
}

func TestLevelBinsKeepClustersWhole(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxFanIn = 4
	cfg.MaxFilesPerPass = 100
	cfg.MaxBinsPerPass = 100
	// Three clusters of three overlapping files: 3+3 > fan-in 4, so each
	// cluster is its own bin, never 4 + 4 + 1.
	var fs []level.File
	for c := range 3 {
		for i := range 3 {
			fs = append(fs, file("p", c*3+i, 100, 0, int64(c*100+i), int64(c*100+i+5)))
		}
	}
	p := run(cfg, fs)
	if kinds(p) != "l0:3,l0:3,l0:3" {
		t.Fatalf("bins %q, want three whole clusters\n%v", kinds(p), p)
	}
	for _, b := range p.Bins {
		if d, _ := level.Depth(b.Files); d != 3 {
			t.Errorf("bin is not one cluster: %v", b.Files)
		}
	}
}

func TestLevelBinsCloseAtTarget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TargetBytes[level.L0] = 1 * mib
	// 12 disjoint 300 KiB files: bins close once they reach 1 MiB (4 files).
	p := run(cfg, disjoint("p", 12, 300, 0))
	if kinds(p) != "l0:4,l0:4,l0:4" {
		t.Fatalf("bins %q, want 3 x 4 files", kinds(p))
	}
	if p.Bins[0].TargetFileBytes != 1*mib {
		t.Errorf("target %d", p.Bins[0].TargetFileBytes)
	}
}

func TestOversizedClusterBecomesAdjacentBins(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxOverlapDepth = 1000 // keep the depth trigger out of it
	// A chain: each file overlaps only the next; one cluster of 40 > 32.
	var fs []level.File
	for i := range 40 {
		fs = append(fs, file("p", i, 100, 0, int64(i*10), int64(i*10+15)))
	}
	p := run(cfg, fs)
	if kinds(p) != "depth:20,depth:20" {
		t.Fatalf("bins %q, want two balanced depth bins\n%v", kinds(p), p)
	}
	if !strings.Contains(p.Bins[0].Reason, "exceeds fan-in") {
		t.Errorf("reason %q", p.Bins[0].Reason)
	}
}

func TestGenerationCap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LevelMaxGen = 5
	// Eight disjoint L0 files at the cap: no level bin.
	if p := run(cfg, disjoint("p", 8, 100, 5)); len(p.Bins) != 0 {
		t.Fatalf("capped files planned %s", kinds(p))
	}
	// Seven below the cap and one capped: 7 eligible, not enough.
	fs := disjoint("p", 8, 100, 4)
	fs[0].Generation = 5
	if p := run(cfg, fs); len(p.Bins) != 0 {
		t.Fatalf("7 eligible planned %s", kinds(p))
	}
	// Thirteen capped files stacked on one instant: the depth trigger
	// takes them anyway.
	p := run(cfg, stacked("p", 0, 13, 100, 7))
	if kinds(p) != "depth:13" {
		t.Fatalf("capped deep stack planned %q, want depth:13", kinds(p))
	}
	// Cap 0 means none.
	cfg.LevelMaxGen = 0
	if p := run(cfg, disjoint("p", 8, 100, 50)); kinds(p) != "l0:8" {
		t.Fatalf("no cap planned %q", kinds(p))
	}
}

func TestDepthTrigger(t *testing.T) {
	cfg := DefaultConfig()
	mixed := func(n int) []level.File {
		// Levels mixed so that no level reaches 8 files.
		var fs []level.File
		for i := range n {
			size := []int64{100, 20 << 10, 300 << 10}[i%3]
			fs = append(fs, file("p", i, size, 0, 0, 10))
		}
		return fs
	}
	// The L2 check would repair the overlapping L2 files; keep it not due.
	st := State{LastCheck: [level.NumLevels]time.Time{2: t0}}
	if p := Plan(cfg, Input{Files: mixed(12), Now: t0, State: st}); len(p.Bins) != 0 {
		t.Fatalf("depth 12 planned %s", kinds(p))
	}
	p := Plan(cfg, Input{Files: mixed(13), Now: t0, State: st})
	if kinds(p) != "depth:13" {
		t.Fatalf("depth 13 planned %q", kinds(p))
	}
	if p.Bins[0].Level != level.L2 {
		t.Errorf("depth bin level %v, want L2 (highest input)", p.Bins[0].Level)
	}
	if p.Depth["p"] != 13 {
		t.Errorf("reported depth %d", p.Depth["p"])
	}
}

func TestDepthTriggerTakesDeepestClusterOnly(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EligibleFiles = 1000 // level selection out of the way
	fs := stacked("p", 0, 14, 100, 0)
	for i := range 20 { // a second, deeper cluster later in time
		fs = append(fs, file("p", 100+i, 100, 0, 1000, 1010))
	}
	st := State{LastCheck: [level.NumLevels]time.Time{2: t0}} // no L2 sweep
	p := Plan(cfg, Input{Files: fs, Now: t0, State: st})
	if kinds(p) != "depth:20" {
		t.Fatalf("bins %q, want the deepest cluster (20)", kinds(p))
	}
	if p.Bins[0].Files[0].MinTime != 1000e6 {
		t.Errorf("took the wrong cluster")
	}
}

func TestDepthBinsObeyFanInAndBudget(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EligibleFiles = 1000
	cfg.MaxBinsPerPass = 3
	var fs []level.File
	for i := range 150 { // a deep, drifting stack
		fs = append(fs, file("p", i, 100, 0, int64(i), int64(i+60)))
	}
	p := run(cfg, fs)
	if len(p.Bins) != 3 {
		t.Fatalf("bins %q, want 3 (budget)", kinds(p))
	}
	for _, b := range p.Bins {
		if len(b.Files) > cfg.MaxFanIn || b.Kind != level.KindDepth {
			t.Fatalf("bad bin %v", b)
		}
		for i := 1; i < len(b.Files); i++ {
			if b.Files[i].MinTime < b.Files[i-1].MinTime {
				t.Fatalf("bin not in time order")
			}
		}
	}
	if len(p.Skipped) == 0 || !strings.Contains(strings.Join(p.Skipped, "\n"), "later pass") {
		t.Errorf("budget refusal not reported: %v", p.Skipped)
	}
	if !p.Next.LastCheck[level.L0].IsZero() {
		t.Errorf("starved L0 check marked done")
	}
}

// TestDeferredIsTheRefusedWork: bins a due check built but the budget refused are in Deferred
// (the outstanding-work gauge counts them); none when the budget covers the work.
func TestDeferredIsTheRefusedWork(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBinsPerPass = 1
	fs := append(disjoint("a", 9, 100, 0), disjoint("b", 20, 100, 0)...)
	p := run(cfg, fs)
	if len(p.Bins) != 1 || len(p.Deferred) != 1 || p.Deferred[0].Partition != "a" {
		t.Fatalf("bins %s, deferred %v; want one bin served (b) and a's bin deferred", kinds(p), p.Deferred)
	}
	if d := p.Deferred[0]; len(d.Files) != 9 || d.EstimatedBytes != 9*100*kib {
		t.Errorf("deferred bin %v: want a's 9 files, 900 KiB", d)
	}
	cfg.MaxBinsPerPass = 100
	if p := run(cfg, fs); len(p.Bins) != 2 || len(p.Deferred) != 0 {
		t.Errorf("ample budget: bins %s, deferred %v; want 2 bins and nothing deferred", kinds(p), p.Deferred)
	}
}

func TestPressureOrdersLevelsAndPartitions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBinsPerPass = 1
	fs := append(disjoint("a", 9, 100, 0), disjoint("b", 20, 100, 0)...)
	p := run(cfg, fs)
	if len(p.Bins) != 1 || p.Bins[0].Partition != "b" {
		t.Fatalf("served %v first, want partition b (20 files)", p.Bins)
	}
	// L1 with 16 files beats L0 with 9.
	var l1 []level.File
	for i := range 16 {
		l1 = append(l1, file("c", i, 20<<10, 0, int64(1000+i*10), int64(1010+i*10)))
	}
	p = run(cfg, append(disjoint("a", 9, 100, 0), l1...))
	if len(p.Bins) != 1 || p.Bins[0].Kind != level.KindL1 {
		t.Fatalf("served %s, want l1", kinds(p))
	}
	if !p.Next.LastCheck[level.L1].Equal(t0) || !p.Next.LastCheck[level.L0].IsZero() {
		t.Errorf("next state %+v: L1 served so done, L0 starved so still due", p.Next.LastCheck)
	}
}

func TestTerminalOverlapAtL2Check(t *testing.T) {
	cfg := DefaultConfig()
	fs := []level.File{file("p", 0, 300<<10, 3, 0, 100), file("p", 1, 300<<10, 3, 90, 200), file("p", 2, 300<<10, 3, 300, 400)}
	p := run(cfg, fs)
	if kinds(p) != "depth:2" || p.Bins[0].Level != level.L2 {
		t.Fatalf("bins %q, want one L2 overlap bin of 2\n%v", kinds(p), p)
	}
	// Not at an L0-only check.
	st := p.Next
	p = Plan(cfg, Input{Files: fs, Now: t0.Add(10 * time.Second), State: st})
	if len(p.Bins) != 0 {
		t.Fatalf("L2 repair ran outside the L2 check: %s", kinds(p))
	}
}

func TestLegacy(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Leveled = false
	cfg.MaxBinsPerPass = 100
	cfg.MaxFilesPerPass = 1000
	big := []level.File{file("done", 0, 300<<10, 1, 0, 10), file("done", 1, 300<<10, 1, 10, 20)}
	fs := append(disjoint("p", 70, 100, 0), big...)
	p := run(cfg, fs)
	if kinds(p) != "legacy:23,legacy:23,legacy:24" {
		t.Fatalf("bins %q, want the whole partition p in 3 balanced bins", kinds(p))
	}
	if p.Files() != 70 {
		t.Errorf("legacy covered %d files of 70", p.Files())
	}
	// Cadence: ReclusterInterval.
	st := p.Next
	if p := Plan(cfg, Input{Files: fs, Now: t0.Add(8900 * time.Millisecond), State: st}); p.Decision != DecisionNothingDue {
		t.Errorf("legacy ran before its interval: %v", p.Decision)
	}
	if p := Plan(cfg, Input{Files: fs, Now: t0.Add(10 * time.Second), State: st}); len(p.Bins) != 3 {
		t.Errorf("legacy did not run at its interval: %v", p)
	}
	// Legacy ignores the generation cap.
	cfg.LevelMaxGen = 1
	if p := run(cfg, disjoint("p", 3, 100, 9)); kinds(p) != "legacy:3" {
		t.Errorf("legacy with capped files planned %q", kinds(p))
	}
}

func TestRewritesDisabled(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ReclusterInterval = 0
	p := Plan(cfg, Input{Files: stacked("p", 0, 40, 100, 0), Now: t0, SealedBacklog: 1000})
	if p.Decision != DecisionRewritesDisabled || len(p.Bins) != 0 {
		t.Fatalf("pass %v", p)
	}
	if p.Depth["p"] != 40 {
		t.Errorf("depth still reported for gauges: got %d", p.Depth["p"])
	}
}

func TestBackpressureCadence(t *testing.T) {
	for _, every := range []int{0, 1, 3, 4} {
		cfg := DefaultConfig()
		cfg.BackpressureCompactEvery = every
		fs := append(disjoint("a", 40, 100, 0), stacked("b", 0, 30, 100, 0)...)
		fs = append(fs, disjoint("c", 10, 20<<10, 0)...) // eligible L1, must be left alone
		st := State{}
		skipped, throttled := 0, 0
		const cycles = 23
		for i := range cycles {
			p := Plan(cfg, Input{Files: fs, Now: t0.Add(time.Duration(i) * time.Second), SealedBacklog: 257, State: st})
			st = p.Next
			switch p.Decision {
			case DecisionSkippedBackpressure:
				skipped++
				if len(p.Bins) != 0 {
					t.Fatalf("skipped cycle has bins")
				}
			case DecisionThrottledBackpressure:
				throttled++
				if len(p.Bins) > cfg.BackpressureMaxBins || len(p.Bins) == 0 {
					t.Fatalf("throttled pass has %d bins", len(p.Bins))
				}
				for _, b := range p.Bins {
					if b.Kind != level.KindBackpressureL0 || b.Level != level.L0 {
						t.Fatalf("throttled pass planned %v", b)
					}
				}
			default:
				t.Fatalf("cycle %d: decision %v", i, p.Decision)
			}
		}
		wantT := 0
		if every > 0 {
			wantT = cycles / every
		}
		if throttled != wantT || skipped != cycles-wantT {
			t.Errorf("every=%d: throttled %d skipped %d, want %d and %d", every, throttled, skipped, wantT, cycles-wantT)
		}
		// The backlog clears: a normal pass, and the count restarts.
		p := Plan(cfg, Input{Files: fs, Now: t0.Add(time.Hour), SealedBacklog: 256, State: st})
		if p.Decision != DecisionRun || p.Next.BackloggedCycles != 0 {
			t.Errorf("every=%d: after clearing: %v, backlogged %d", every, p.Decision, p.Next.BackloggedCycles)
		}
	}
}

func TestInvertedRangeLeftOut(t *testing.T) {
	fs := disjoint("p", 8, 100, 0)
	fs[2].MinTime, fs[2].MaxTime = 50, 10
	p := run(DefaultConfig(), fs)
	if len(p.Bins) != 0 {
		t.Fatalf("7 valid files planned %s", kinds(p))
	}
	if len(p.Skipped) == 0 || !strings.Contains(p.Skipped[0], fs[2].Path) {
		t.Fatalf("inverted file not reported: %v", p.Skipped)
	}
}

func TestPassString(t *testing.T) {
	p := run(DefaultConfig(), disjoint("p", 8, 100, 0))
	s := p.String()
	for _, want := range []string{"pass run", "bin l0 L0", `partition="p"`, "8 rewrite-eligible L0 files"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q missing from:\n%s", want, s)
		}
	}
}

func TestL2CheckSweepsStragglersWithoutTheBigFile(t *testing.T) {
	cfg := DefaultConfig()
	fs := []level.File{file("p", 0, 300<<10, 4, 0, 100)}
	for i := range 5 { // late rows that reached the partition after it closed
		fs = append(fs, file("p", 1+i, 10, 0, int64(90+i), 100))
	}
	fs[1].Generation = 9 // capped, still taken: the sweep is overlap-driven
	p := run(cfg, fs)
	if kinds(p) != "depth:5" {
		t.Fatalf("bins %q, want the five stragglers in one bin\n%v", kinds(p), p)
	}
	for _, f := range p.Bins[0].Files {
		if f.SizeBytes >= cfg.L2MinBytes {
			t.Fatalf("sweep rewrote the terminal file to absorb stragglers")
		}
	}
}

func TestDepthTriggerPrefersSmallerFiles(t *testing.T) {
	cfg := DefaultConfig()
	cfg.EligibleFiles = 1000
	st := State{LastCheck: [level.NumLevels]time.Time{2: t0}} // no L2 sweep
	small := stacked("p", 0, 13, 20<<10, 0)                   // 13 L1 files: deep enough alone
	big := stacked("p", 100, 5, 300<<10, 2)                   // 5 L2 files on the same instant
	p := Plan(cfg, Input{Files: append(slices.Clone(small), big...), Now: t0, State: st})
	if kinds(p) != "depth:13" || p.Bins[0].Level != level.L1 {
		t.Fatalf("bins %q, want the 13 smaller files only\n%v", kinds(p), p)
	}
	// With only 12 smaller files the terminal ones are needed: all 17.
	p = Plan(cfg, Input{Files: append(slices.Clone(small[:12]), big...), Now: t0, State: st})
	if kinds(p) != "depth:17" || p.Bins[0].Level != level.L2 {
		t.Fatalf("bins %q, want all 17 files\n%v", kinds(p), p)
	}
}

func lateFiles(fs []level.File) []level.File {
	for i := range fs {
		fs[i].Late = true
		fs[i].Path = strings.Replace(fs[i].Path, ".parquet", "-late.parquet", 1)
	}
	return fs
}

// TestStreamsPlannedApart: on-time and late files of one partition overlap, but every bin holds
// one stream only, and the late stream's depth trigger fires above half the limit.
func TestStreamsPlannedApart(t *testing.T) {
	cfg := DefaultConfig()
	// 8 small on-time files and 8 small late files, all over the same 10 s: one bin of each
	// stream (the late one by depth: 8 is over its limit of 6, and scores 8/6).
	files := append(stacked("d", 0, 8, 100, 0), lateFiles(stacked("d", 100, 8, 100, 0))...)
	p := run(cfg, files)
	if kinds(p) != "depth:8,l0:8" || !p.Bins[0].Late() || p.Bins[1].Late() {
		t.Fatalf("bins %s, want a late depth bin of 8 and an on-time l0 bin of 8\n%v", kinds(p), p)
	}
	for _, b := range p.Bins {
		if b.Late() != b.Files[0].Late || b.Late() != strings.HasPrefix(b.Reason, "late stream: ") {
			t.Fatalf("bin mixes streams or misnames them: %v", b)
		}
	}
	// Depth 7 of capped on-time files stays (the limit is 12); depth 7 of capped late files is
	// over the late stream's limit of 6 and is merged.
	capped := cfg.LevelMaxGen
	for _, late := range []bool{false, true} {
		fs := stacked("d", 0, 7, 100, capped)
		if late {
			fs = lateFiles(fs)
		}
		// Only the L0 check (with the depth trigger) is due: the L2 sweep would merge them too.
		p := Plan(cfg, Input{Files: fs, Now: t0, State: State{LastCheck: [level.NumLevels]time.Time{{}, t0, t0}}})
		if got, want := kinds(p), map[bool]string{false: "", true: "depth:7"}[late]; got != want {
			t.Fatalf("late %v, depth 7: bins %q, want %q\n%v", late, got, want, p)
		}
	}
	// The depth gauge counts both streams.
	if d := run(cfg, files).Depth["d"]; d != 16 {
		t.Fatalf("depth %d, want 16 (both streams)", d)
	}
	onlyL0 := State{LastCheck: [level.NumLevels]time.Time{{}, t0, t0}}
	// Each stream within its own limit (12 and 6), the table at 18 over the spec's 12: the
	// stream with more files at the deepest instant is merged.
	both := append(stacked("d", 0, 12, 100, capped), lateFiles(stacked("d", 100, 6, 100, capped))...)
	p = Plan(cfg, Input{Files: both, Now: t0, State: onlyL0})
	if kinds(p) != "depth:12" || p.Bins[0].Late() {
		t.Fatalf("12 on-time and 6 late files at one instant: bins %s, want the on-time depth bin of 12\n%v", kinds(p), p)
	}
	// The late stream has its L1 and L2 checks too.
	l1 := lateFiles(disjoint("d", 8, 20<<10, 1))
	if p := Plan(cfg, Input{Files: l1, Now: t0, State: State{LastCheck: [level.NumLevels]time.Time{t0, {}, t0}}}); kinds(p) != "l1:8" || !p.Bins[0].Late() {
		t.Fatalf("8 late L1 files at the L1 check: bins %s\n%v", kinds(p), p)
	}
	l2 := lateFiles(stacked("d", 0, 2, 300<<10, capped))
	if p := Plan(cfg, Input{Files: l2, Now: t0, State: State{LastCheck: [level.NumLevels]time.Time{t0, t0, {}}}}); kinds(p) != "depth:2" || !p.Bins[0].Late() {
		t.Fatalf("2 overlapping late L2 files at the L2 check: bins %s\n%v", kinds(p), p)
	}
	// Without LateStream (SIGLAKE_COMPACTOR_SPLIT_SPARSE 0) the streams are one again.
	cfg.LateStream = false
	if p := run(cfg, files); kinds(p) != "l0:16" {
		t.Fatalf("one stream: bins %s, want one l0 bin of all 16\n%v", kinds(p), p)
	}
}
