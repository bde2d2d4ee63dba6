package plan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// closedTable is a table of two hourly partitions, times in seconds: "h0" [0, 3600) has closed
// (its newest row is 25 minutes behind the table's), "h1" is receiving rows up to 5100 s. h0
// holds an on-time terminal layer of six disjoint 400 MiB files, four overlapping late files
// (200 MiB in all, 1/12 of the on-time bytes) and two on-time stragglers: a one-row file and a
// 2 MiB tail reaching 10 minutes back. h1 holds the same kind of late files and a straggler at
// its edge.
func closedTable() []File {
	var fs []File
	for i := range 6 {
		fs = append(fs, file("h0", i, 400<<10, 5, int64(i)*600, int64(i+1)*600))
	}
	for i, r := range [][2]int64{{100, 1900}, {1500, 3000}, {2800, 3590}, {2900, 3500}} {
		f := file("h0", 10+i, 50<<10, 6, r[0], r[1])
		f.Late = true
		fs = append(fs, f)
	}
	fs = append(fs, file("h0", 20, 1, 0, 3000, 3001), file("h0", 21, 2<<10, 3, 3000, 3599))
	for i := range 3 {
		fs = append(fs, file("h1", i, 400<<10, 5, 3600+int64(i)*500, 3600+int64(i+1)*500))
	}
	for i, r := range [][2]int64{{3700, 4900}, {4000, 5000}} {
		f := file("h1", 10+i, 50<<10, 6, r[0], r[1])
		f.Late = true
		fs = append(fs, f)
	}
	return append(fs, file("h1", 20, 2<<10, 3, 4500, 5100))
}

// l1Due is a state in which only the L1 check is due at t0: the L0 check ran this tick and the
// L2 check ten minutes ago, so what the pass plans is the L1 check's work.
func l1Due() State {
	return State{LastCheck: [NumLevels]time.Time{t0, t0.Add(-2 * time.Minute), t0.Add(-10 * time.Minute)}}
}

func closingBins(p Pass) []Bin {
	var out []Bin
	for _, b := range p.Bins {
		if strings.Contains(b.Reason, "closed partition") {
			out = append(out, b)
		}
	}
	return out
}

// TestClosingMergeTakesLateStreamAndStragglers: once a partition has closed, the L1 check merges
// its late stream with its on-time stragglers into late files cut by size only, and leaves its
// terminal layer and the open partition alone. Without closing merges (ClosedAfter 0) the same
// pass plans nothing: four late files and two stragglers are below every level trigger.
func TestClosingMergeTakesLateStreamAndStragglers(t *testing.T) {
	cfg := DefaultConfig()
	p := Plan(cfg, Input{Files: closedTable(), Now: t0, State: l1Due()})
	bins := closingBins(p)
	if len(bins) != 1 {
		t.Fatalf("want one closing bin, got %d:\n%v", len(bins), p)
	}
	b := bins[0]
	if b.Partition != "h0" || len(b.Files) != 6 || !b.LateOutputs || !b.SizeCutsOnly || !b.Late() || b.Kind != KindDepth {
		t.Fatalf("closing bin %v (late outputs %v, size cuts only %v)", b, b.LateOutputs, b.SizeCutsOnly)
	}
	if !strings.HasPrefix(b.Reason, "late stream: ") || b.TargetFileBytes != cfg.TargetBytes[L2] {
		t.Fatalf("closing bin reason %q, target %d", b.Reason, b.TargetFileBytes)
	}
	for _, f := range b.Files {
		if !f.Late && cfg.LevelOf(f.SizeBytes) == L2 {
			t.Fatalf("closing bin took the terminal file %v", f)
		}
	}
	if len(p.Bins) != 1 {
		t.Fatalf("want the closing bin only:\n%v", p)
	}

	cfg.ClosedAfter = 0
	if p := Plan(cfg, Input{Files: closedTable(), Now: t0, State: l1Due()}); len(p.Bins) != 0 {
		t.Fatalf("without closing merges the L1 check planned:\n%v", p)
	}
}

// TestClosingMergeNeedsSmallLateStream: a closed partition whose late stream is more than
// closedLateShare of its on-time bytes (the late table, whose late rows keep arriving long after
// a partition closed) gets no closing merge.
func TestClosingMergeNeedsSmallLateStream(t *testing.T) {
	fs := closedTable()
	for i := range fs {
		if fs[i].Partition == "h0" && fs[i].Late {
			fs[i].SizeBytes = 200 << 20 // 800 MiB of late files beside 2400 MiB on-time
		}
	}
	if bins := closingBins(Plan(DefaultConfig(), Input{Files: fs, Now: t0, State: l1Due()})); len(bins) != 0 {
		t.Fatalf("closing merge of a late-heavy partition: %v", bins)
	}
}

// TestClosingMergeOfDisjointLateFiles: a closed partition's late stream that is already one
// layer is merged only when it holds more files than its bytes need at the L2 target (here 20
// disjoint 10 MiB files: one output), and not when it is one full file.
func TestClosingMergeOfDisjointLateFiles(t *testing.T) {
	var fs []File
	for i := range 6 {
		fs = append(fs, file("h0", i, 400<<10, 5, int64(i)*600, int64(i+1)*600))
	}
	for i := range 20 {
		f := file("h0", 10+i, 10<<10, 6, int64(i)*150, int64(i)*150+100)
		f.Late = true
		fs = append(fs, f)
	}
	fs = append(fs, file("h1", 0, 400<<10, 5, 3600, 5100))
	bins := closingBins(Plan(DefaultConfig(), Input{Files: fs, Now: t0, State: l1Due()}))
	if len(bins) != 1 || len(bins[0].Files) != 20 {
		t.Fatalf("want one closing bin of the 20 late files, got %v", bins)
	}
	one := append(fs[:6:6], fs[len(fs)-1])
	f := file("h0", 40, 200<<10, 9, 0, 3000)
	f.Late = true
	if bins := closingBins(Plan(DefaultConfig(), Input{Files: append(one, f), Now: t0, State: l1Due()})); len(bins) != 0 {
		t.Fatalf("closing merge of a single late file: %v", bins)
	}
}

// TestClosingMergeOfOnTimeClusters: in a closed partition with a late stream, an on-time cluster
// of terminal files and a smaller file holding at least closedClusterShare of its bytes (an L1
// file at the generation cap, as a stall's restricted pass leaves them) is merged in the on-time
// stream; a cluster whose smaller file is below that share is left.
func TestClosingMergeOfOnTimeClusters(t *testing.T) {
	var fs []File
	for i := range 6 {
		fs = append(fs, file("h0", i, 400<<10, 5, int64(i)*600, int64(i+1)*600))
	}
	late := file("h0", 10, 100<<10, 9, 0, 3590)
	late.Late = true
	fs = append(fs, late,
		file("h0", 20, 60<<10, 8, 550, 650),   // 60 MiB beside 800 MiB: merged
		file("h0", 21, 20<<10, 8, 2950, 3050), // 20 MiB beside 800 MiB: below 1/32, left
		file("h1", 0, 400<<10, 5, 3600, 5100))
	var onTime []Bin
	for _, b := range closingBins(Plan(DefaultConfig(), Input{Files: fs, Now: t0, State: l1Due()})) {
		if !b.LateOutputs {
			onTime = append(onTime, b)
		}
	}
	if len(onTime) != 1 || len(onTime[0].Files) != 3 || onTime[0].Late() || onTime[0].SizeCutsOnly {
		t.Fatalf("want one on-time closing bin of the L1 file and its two terminal files, got %v", onTime)
	}
	for _, f := range onTime[0].Files {
		if f.Late || f.Path == fs[8].Path {
			t.Fatalf("on-time closing bin holds %v", f)
		}
	}
}

// TestThrottledPassCutsBySizeOnly: the leveled restricted pass's bins ask the writer for size
// cuts only; the legacy strategy's restricted pass is unchanged.
func TestThrottledPassCutsBySizeOnly(t *testing.T) {
	cfg := DefaultConfig()
	in := Input{Files: stacked("p", 0, 10, 1<<10, 0), Now: t0, SealedBacklog: 1000, State: State{BackloggedCycles: 3}}
	for _, leveled := range []bool{true, false} {
		cfg.Leveled = leveled
		p := Plan(cfg, in)
		if p.Decision != DecisionThrottledBackpressure || len(p.Bins) != 1 {
			t.Fatalf("leveled %v: %v", leveled, p)
		}
		if p.Bins[0].SizeCutsOnly != leveled {
			t.Fatalf("leveled %v: size cuts only %v", leveled, p.Bins[0].SizeCutsOnly)
		}
	}
}

// TestClosingMergesConverge applies passes as an ideal rewriter would to the closed table: the
// closed partition ends with its terminal layer and one disjoint late layer (depth 2), and then
// gets no more closing merges.
func TestClosingMergesConverge(t *testing.T) {
	cfg := DefaultConfig()
	files, st, now, seq := closedTable(), l1Due(), t0, 0
	closing := 0
	for range 60 { // ten minutes of 10 s ticks
		p := Plan(cfg, Input{Files: files, Now: now, State: st})
		st = p.Next
		closing += len(closingBins(p))
		files, seq = applyIdeal(files, p.Bins, seq)
		now = now.Add(10 * time.Second)
	}
	h0 := byPartition(files)["h0"]
	d, _ := Depth(h0)
	var late, onSmall int
	for _, f := range h0 {
		if f.Late {
			late++
		} else if cfg.LevelOf(f.SizeBytes) < L2 {
			onSmall++
		}
	}
	if d > 2 || late != 1 || onSmall != 0 || closing != 1 {
		t.Fatalf("h0 after ten minutes: depth %d, %d late files, %d small on-time files, %d closing bins; %s",
			d, late, onSmall, closing, fmt.Sprint(h0))
	}
	p := Plan(cfg, Input{Files: files, Now: now, State: State{}})
	if bins := closingBins(p); len(bins) != 0 {
		t.Fatalf("closing merge again after convergence: %v", bins)
	}
}

// TestClosingMergeWaitsPastTheTimeLimit: with the pass's time limit, a closing merge the limit
// refuses is taken past it only when no other refused bin is waiting, though it is larger than
// the limit and the other is not (which alone would give it the allowance): on a busy table
// fresh level and overlap work keeps the allowance (in the simulator, giving it to closing merges
// took the busy table's ingest-edge depth p50 from 27 to 41).
func TestClosingMergeWaitsPastTheTimeLimit(t *testing.T) {
	rate := rateOf(0, 10e6)                   // 10 MB/s: the closing merge of h0 (about 200 MiB) takes 21 s
	fresh := stacked("a", 0, 20, 4096, 0)     // 84 MB: the pass's first bin, 8.4 s of its 10 s
	other := stacked("b", 100, 14, 3*1024, 0) // 44 MB: an L0 bin of 4.4 s the limit refuses
	plan := func(files []File) Pass {
		st := State{TimeLimitedPasses: largeBinWait}
		st.LastCheck[L2] = t0.Add(-10 * time.Minute) // the L2 check is not due
		return Plan(DefaultConfig(), Input{Files: files, Now: t0, State: st, Rewriter: rate, RewriterBusy: 1})
	}
	p := plan(append(append(closedTable(), fresh...), other...))
	if len(closingBins(p)) != 0 || len(p.Bins) != 2 || p.Bins[1].Partition != "b" {
		t.Fatalf("want the fresh bin and the other refused bin past the limit, no closing merge:\n%v", p)
	}
	if !slices.ContainsFunc(p.Deferred, func(b Bin) bool { return b.LateOutputs }) {
		t.Fatalf("the refused closing merge is not deferred: %v", p.Deferred)
	}
	p = plan(append(closedTable(), fresh...))
	if bins := closingBins(p); len(bins) != 1 || len(p.Bins) != 2 {
		t.Fatalf("want the fresh bin and the closing merge past the limit:\n%v", p)
	}
}

// trickleTable is a closed partition h0 whose late stream has settled as three disjoint late
// files of 375 MiB (1.1 GiB, below the generation cap) beside 10 GiB of on-time terminal files,
// and an open partition h1.
func trickleTable() []File {
	var fs []File
	for i := range 20 {
		fs = append(fs, file("h0", i, 512<<10, 5, int64(i)*180, int64(i+1)*180))
	}
	for i := range 3 {
		f := file("h0", 100+i, 375<<10, 3, int64(i)*1200, int64(i+1)*1200)
		f.Late = true
		fs = append(fs, f)
	}
	return append(fs, file("h1", 0, 400<<10, 5, 3600, 5100))
}

// TestClosingMergesOfALateTrickle: late files keep arriving in a closed partition, one of 1 MiB
// a minute for two hours, and every pass is applied as an ideal rewriter would. The closing
// merges rewrite at most about 32 times the late bytes that came in (closedClusterShare), not
// the settled late layer with each new file, and their outputs stay within the generation cap
// (each merge adds one generation; the old rule reached generation 33 in 30 minutes).
func TestClosingMergesOfALateTrickle(t *testing.T) {
	cfg := DefaultConfig()
	files, st, now, seq := trickleTable(), State{}, t0, 0
	var closing, incoming int64
	maxGen := 0
	for tick := range 720 {
		if tick%6 == 0 {
			from := int64(tick*37) % 3500
			f := file("h0", 1000+tick, 1<<10, 0, from, from+60)
			f.Late = true
			files = append(files, f)
			incoming += f.SizeBytes
		}
		p := Plan(cfg, Input{Files: files, Now: now, State: st})
		st = p.Next
		for _, b := range closingBins(p) {
			closing += b.EstimatedBytes
			maxGen = max(maxGen, b.OutputGeneration())
		}
		files, seq = applyIdeal(files, p.Bins, seq)
		now = now.Add(10 * time.Second)
	}
	t.Logf("closing merges rewrote %d MiB for %d MiB of late files; output generation up to %d", closing>>20, incoming>>20, maxGen)
	if closing > 40*incoming || maxGen > cfg.LevelMaxGen {
		t.Fatalf("closing merges rewrote %d MiB for %d MiB of late files; output generation up to %d (cap %d)",
			closing>>20, incoming>>20, maxGen, cfg.LevelMaxGen)
	}
}

// TestClosingMergeRechecksWhatIsLeft: when an earlier bin of the pass takes part of a closed
// partition's late pool, the closing merge checks its trigger again on the rest: here the late
// stream's depth trigger takes the eight small late files, and the two full disjoint late files left
// are not rewritten.
func TestClosingMergeRechecksWhatIsLeft(t *testing.T) {
	var fs []File
	for i := range 20 {
		fs = append(fs, file("h0", i, 512<<10, 5, int64(i)*180, int64(i+1)*180))
	}
	for i := range 2 {
		f := file("h0", 100+i, 512<<10, 3, int64(i)*1800, int64(i+1)*1800)
		f.Late = true
		fs = append(fs, f)
	}
	for i := range 8 {
		f := file("h0", 200+i, 10<<10, 0, 1700+int64(i), 1900)
		f.Late = true
		fs = append(fs, f)
	}
	fs = append(fs, file("h1", 0, 400<<10, 5, 3600, 5100))
	p := Plan(DefaultConfig(), Input{Files: fs, Now: t0})
	if len(p.Bins) == 0 || !p.Bins[0].Late() || len(p.Bins[0].Files) != 8 {
		t.Fatalf("want a late bin of the eight small files first:\n%v", p)
	}
	if bins := closingBins(p); len(bins) != 0 {
		t.Fatalf("closing merge of what the L0 bin left: %v", bins)
	}
}

// TestClosingMergeEdgeIsNow: one row from a clock running ahead (100 hours, in partition h99)
// does not close the live partition h1: the table's edge is never later than now.
func TestClosingMergeEdgeIsNow(t *testing.T) {
	fs := append(closedTable(), file("h99", 0, 1, 0, 5100+360000, 5101+360000))
	p := Plan(DefaultConfig(), Input{Files: fs, Now: time.Unix(5101, 0)})
	bins := closingBins(p)
	if len(bins) == 0 {
		t.Fatalf("no closing merge of the closed partition h0:\n%v", p)
	}
	for _, b := range bins {
		if b.Partition != "h0" {
			t.Fatalf("closing merge of partition %q:\n%v", b.Partition, p)
		}
	}
}

// TestWaitingClosingMergeKeepsTheCadence: a closing merge the time limit refuses neither keeps
// the L1 check due (it runs every minute, not every tick) nor counts toward the allowance past the
// limit.
func TestWaitingClosingMergeKeepsTheCadence(t *testing.T) {
	rate := rateOf(0, 10e6) // the closing merge of h0 (about 200 MiB) takes 21 s of the 10 s
	st := State{}
	st.LastCheck[L2] = t0.Add(-10 * time.Minute)
	fresh := stacked("a", 0, 20, 4096, 0)
	p := Plan(DefaultConfig(), Input{Files: append(closedTable(), fresh...), Now: t0, State: st, Rewriter: rate, RewriterBusy: 1})
	if len(closingBins(p)) != 0 || !slices.ContainsFunc(p.Deferred, func(b Bin) bool { return b.LateOutputs }) {
		t.Fatalf("want the closing merge refused by the time limit:\n%v", p)
	}
	if !p.Next.LastCheck[L1].Equal(t0) || p.Next.TimeLimitedPasses != 0 {
		t.Fatalf("L1 checked at %v (want %v), %d limited passes (want 0)", p.Next.LastCheck[L1], t0, p.Next.TimeLimitedPasses)
	}
}
