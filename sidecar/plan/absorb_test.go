package plan

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// big is a terminal file: 300 MiB, 6 M rows spread over [fromSec, toSec).
func big(part string, i, gen int, fromSec, toSec int64) level.File {
	return level.File{Path: fmt.Sprintf("%s/big%02d-g%d", part, i, gen), Partition: part, SizeBytes: 300 * mib,
		Generation: gen, MinTime: fromSec * 1e6, MaxTime: toSec*1e6 - 1, Rows: 6_000_000}
}

// straggler is a small file of rows over [fromSec, toSec).
func straggler(part string, i, gen int, fromSec, toSec int64) level.File {
	return level.File{Path: fmt.Sprintf("%s/s%02d-g%d", part, i, gen), Partition: part, SizeBytes: 4 * mib,
		Generation: gen, MinTime: fromSec * 1e6, MaxTime: toSec*1e6 - 1, Rows: 20_000}
}

func absorbBinsOf(p Pass) []level.Bin {
	var out []level.Bin
	for _, b := range p.Bins {
		if b.Kind == level.KindAbsorb {
			out = append(out, b)
		}
	}
	return out
}

func TestAbsorbTakesStragglerAtTerminalEdge(t *testing.T) {
	// A terminal file and a straggler at the generation cap inside its last 40 s: the level
	// rules cannot take the straggler and the L2 sweep merges small files only among themselves.
	files := []level.File{big("d", 0, 3, 0, 3600), straggler("d", 0, 8, 3560, 3580)}
	cfg := DefaultConfig()
	p := run(cfg, files)
	bins := absorbBinsOf(p)
	if len(bins) != 1 || len(bins[0].Files) != 2 {
		t.Fatalf("want one absorb bin of both files, got %v", p)
	}
	b := bins[0]
	if b.Level != level.L2 || b.OutputGeneration() != 9 || b.TargetFileBytes < b.EstimatedBytes {
		t.Errorf("bin %v: level %v, generation %d, target %d for %d bytes (one output)", b, b.Level, b.OutputGeneration(), b.TargetFileBytes, b.EstimatedBytes)
	}
	// The bin's estimated re-encode (a row group or two) is level's TestAbsorbCostRule.

	cfg.AbsorbMaxReencode = 0 // without the splice: nothing is planned
	if p := run(cfg, files); len(p.Bins) != 0 {
		t.Errorf("absorb off planned %v", p)
	}
}

func TestAbsorbRefusesWhatMustBeReencoded(t *testing.T) {
	cfg := DefaultConfig()
	cases := map[string][]level.File{
		// The straggler spreads over the whole terminal file: every row group re-encoded.
		"covers the terminal file": {big("d", 0, 1, 0, 3600), straggler("d", 0, 1, 0, 3600)},
		// Terminal files that overlap each other are terminalCandidates' work.
		"terminal overlap": {big("d", 0, 1, 0, 3600), big("d", 1, 1, 3500, 7200), straggler("d", 0, 1, 7100, 7150)},
		// A disjoint straggler at the cap: nothing overlap-driven, generation accounting holds.
		"capped and disjoint": {big("d", 0, 1, 0, 3600), straggler("d", 0, 8, 3700, 3710)},
		// Both would pass the size cap only as two outputs.
		"too big for one output": {{Path: "d/huge", Partition: "d", SizeBytes: 600 * mib, Rows: 12_000_000, MaxTime: 3600e6 - 1},
			{Path: "d/mid", Partition: "d", SizeBytes: 100 * mib, Rows: 2_000_000, MinTime: 3600e6, MaxTime: 3700e6}},
		// The bin's range would cover a file outside it: the output would overlap it.
		"range covers an outside file": {big("d", 0, 1, 0, 3600), big("d", 1, 1, 4000, 7200),
			straggler("d", 0, 1, 3700, 3710), straggler("d", 1, 8, 3650, 3660)},
	}
	for name, files := range cases {
		if bins := absorbBinsOf(run(cfg, files)); len(bins) != 0 {
			for _, b := range bins {
				t.Errorf("%s: planned %v", name, b)
			}
		}
	}
	// The last case absorbs the nearer straggler once the capped one is no longer in the way.
	files := []level.File{big("d", 0, 1, 0, 3600), big("d", 1, 1, 4000, 7200), straggler("d", 0, 1, 3700, 3710)}
	if bins := absorbBinsOf(run(cfg, files)); len(bins) != 1 || bins[0].Files[0].Path != "d/big00-g1" {
		t.Errorf("a disjoint straggler in the gap: want it absorbed by the terminal file before it, got %v", bins)
	}
}

func TestAbsorbKeepsStreamsApart(t *testing.T) {
	late := straggler("d", 0, 8, 3560, 3580)
	late.Late = true
	files := []level.File{big("d", 0, 1, 0, 3600), late}
	if bins := absorbBinsOf(run(DefaultConfig(), files)); len(bins) != 0 {
		t.Errorf("a late straggler absorbed into an on-time file: %v", bins)
	}
	cfg := DefaultConfig()
	cfg.LateStream = false // one stream: it may
	if bins := absorbBinsOf(run(cfg, files)); len(bins) != 1 {
		t.Errorf("one stream: want the straggler absorbed, got %v", bins)
	}
}

// TestAbsorbBinsProperties: on random terminal layers with stragglers, every absorb bin holds one
// terminal file that overlaps no other terminal file, small files of its stream, at most the
// fan-in, fits one output, passes the cost rule, and its range overlaps no file outside it.
func TestAbsorbBinsProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 2))
	planned := 0
	for iter := range propertyCases() {
		cfg := DefaultConfig()
		cfg.MaxFanIn = 2 + r.IntN(8)
		cfg.MaxBinsPerPass = 1 + r.IntN(20)
		cfg.LateStream = r.IntN(2) == 0
		var files []level.File
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
			s := straggler("d", i, r.IntN(10), lo, lo+1+r.Int64N(120))
			s.Late = r.IntN(3) == 0
			files = append(files, s)
		}
		p := Plan(cfg, Input{Files: files, Now: t0})
		if err := checkPass(cfg, Input{Files: files, Now: t0}, p); err != nil {
			t.Fatalf("case %d: %v\n%v", iter, err, p)
		}
		for _, b := range absorbBinsOf(p) {
			planned++
			if err := checkAbsorb(cfg, files, b); err != nil {
				t.Fatalf("case %d: %v\n%v", iter, err, p)
			}
		}
	}
	if planned == 0 {
		t.Fatal("no absorb bin in any case: the generator proves nothing")
	}
	t.Logf("%d absorb bins in %d cases", planned, propertyCases())
}

func checkAbsorb(cfg Config, files []level.File, b level.Bin) error {
	if len(b.Files) < 2 || len(b.Files) > cfg.MaxFanIn {
		return fmt.Errorf("absorb bin of %d files (fan-in %d)", len(b.Files), cfg.MaxFanIn)
	}
	in := map[string]bool{}
	terms := 0
	lo, hi := b.Files[0].MinTime, b.Files[0].MaxTime
	for _, f := range b.Files {
		in[f.Path] = true
		lo, hi = min(lo, f.MinTime), max(hi, f.MaxTime)
		if cfg.LevelOf(f.SizeBytes) == level.L2 {
			terms++
		}
		if cfg.LateStream && f.Late != b.Files[0].Late {
			return fmt.Errorf("absorb bin mixes streams: %v", b)
		}
	}
	if terms != 1 {
		return fmt.Errorf("absorb bin with %d terminal files: %v", terms, b)
	}
	if b.TargetFileBytes < b.EstimatedBytes || b.EstimatedBytes > cfg.TargetBytes[level.L2]*5/4 {
		return fmt.Errorf("absorb bin of %d bytes, target %d: not one output", b.EstimatedBytes, b.TargetFileBytes)
	}
	// The cost rule (the splice model's re-encode at most AbsorbMaxReencode) is level's
	// TestAbsorbCostRule, where the model is.
	for _, f := range files {
		sameStream := !cfg.LateStream || f.Late == b.Files[0].Late
		if !in[f.Path] && sameStream && f.MinTime <= hi && lo <= f.MaxTime {
			return fmt.Errorf("absorb bin's range [%d, %d] overlaps %v outside it", lo, hi, f)
		}
	}
	return nil
}

// TestAbsorbPassesConverge: a terminal layer with a straggler at the edge of every file (at the
// generation cap, so the level rules leave them) settles into the terminal layer alone, and then
// no pass plans anything more. Without absorb bins the stragglers stay.
func TestAbsorbPassesConverge(t *testing.T) {
	var files []level.File
	for i := range 10 {
		files = append(files, big("d", i, 2, int64(i)*600, int64(i+1)*600),
			straggler("d", i, 8, int64(i+1)*600-30, int64(i+1)*600-10))
	}
	for _, absorb := range []float64{0, DefaultConfig().AbsorbMaxReencode} {
		cfg := DefaultConfig()
		cfg.AbsorbMaxReencode = absorb
		fs, st, now, seq := files, State{}, t0, 0
		for range 3 * 360 { // three hours of 10 s ticks: three L2 checks
			p := Plan(cfg, Input{Files: fs, Now: now, State: st})
			st = p.Next
			fs, seq = applyIdeal(fs, p.Bins, seq)
			now = now.Add(10 * time.Second)
		}
		d, _ := level.Depth(fs)
		switch {
		case absorb == 0 && len(fs) != 20:
			t.Errorf("absorb off: %d files left, want the 20 as they were", len(fs))
		case absorb > 0 && (len(fs) != 10 || d != 1):
			t.Errorf("absorb on: %d files at depth %d, want the 10 terminal files at depth 1", len(fs), d)
		}
		// Settled: a further L2 check plans nothing.
		st.LastCheck[level.L2] = time.Time{}
		if p := Plan(cfg, Input{Files: fs, Now: now, State: st}); len(p.Bins) != 0 {
			t.Errorf("absorb %v: settled layout still planned %v", absorb, p)
		}
	}
}
