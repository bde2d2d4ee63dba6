package plan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// propertyCases is the number of random file sets; SIGLAKE_LONG=1 runs more.
func propertyCases() int {
	if os.Getenv("SIGLAKE_LONG") == "1" {
		return 50000
	}
	return 3000
}

// randomCase draws a table shaped like real ones: a few partitions, files
// of every level and generation, a mix of stacked (concurrent pods),
// chained (late rows) and disjoint ranges, and a random configuration.
func randomCase(r *rand.Rand) (Config, Input) {
	cfg := DefaultConfig()
	cfg.Leveled = r.IntN(5) != 0
	cfg.LateStream = r.IntN(4) != 0
	cfg.MaxFanIn = 2 + r.IntN(40)
	cfg.MaxFilesPerPass = cfg.MaxFanIn + r.IntN(200)
	cfg.MaxBinsPerPass = 1 + r.IntN(8)
	cfg.EligibleFiles = 2 + r.IntN(12)
	cfg.MaxOverlapDepth = 1 + r.IntN(20)
	cfg.LevelMaxGen = r.IntN(8)
	cfg.BackpressureCompactEvery = r.IntN(6)
	cfg.BackpressureMaxBins = 1 + r.IntN(3)
	if r.IntN(10) == 0 {
		cfg.TargetBytes[level.L0] = int64(1+r.IntN(64)) * mib
	}
	if r.IntN(20) == 0 {
		cfg.ReclusterInterval = 0
	}

	var files []level.File
	nParts := 1 + r.IntN(4)
	for p := range nParts {
		part := fmt.Sprintf("day=%d", p)
		n := r.IntN(150)
		t := int64(0)
		for i := range n {
			var lo, hi int64
			switch r.IntN(3) {
			case 0: // stacked on the current window
				lo, hi = t, t+10e6
			case 1: // late tail reaching back
				lo, hi = max(0, t-r.Int64N(300e6)), t+10e6
			default: // move on, disjoint
				t += 10e6 + r.Int64N(20e6)
				lo, hi = t, t+r.Int64N(10e6)
			}
			size := int64(math.Exp(r.Float64()*math.Log(2<<30))) + 1 // log-uniform up to 2 GiB
			files = append(files, level.File{
				Path:      part + "/" + strconv.Itoa(i),
				Partition: part, SizeBytes: size, Generation: r.IntN(10),
				MinTime: lo, MaxTime: hi, Rows: size / 100, Late: r.IntN(4) == 0,
			})
		}
	}
	r.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })

	st := State{BackloggedCycles: r.IntN(10)}
	now := t0.Add(time.Duration(r.IntN(7200)) * time.Second)
	for l := range st.LastCheck {
		if r.IntN(2) == 0 {
			st.LastCheck[l] = now.Add(-time.Duration(r.IntN(4000)) * time.Second)
		}
	}
	backlog := 0
	if r.IntN(4) == 0 {
		backlog = cfg.MaxSealedForRecluster + 1 + r.IntN(100)
	}
	in := Input{Files: files, Now: now, SealedBacklog: backlog, State: st}
	if r.IntN(2) == 0 { // a measured speed: up to 2 s per bin, 1 MB/s to 1 GB/s
		in.Rewriter = rateOf(time.Duration(r.Int64N(int64(2*time.Second))), math.Exp(math.Log(1e6)+r.Float64()*math.Log(1e3)))
		in.State.TimeLimitedPasses = r.IntN(largeBinWait + 2)
		in.RewriterBusy = r.Float64()
		in.TimeSpent = time.Duration(r.Int64N(int64(15 * time.Second)))
	}
	if r.IntN(3) == 0 {
		in.Workers = r.IntN(12) // 0 means 1
	}
	if r.IntN(3) == 0 && len(files) > 0 { // bins running elsewhere hold some inputs
		in.InFlight = map[string]bool{"gone/committed-meanwhile": true}
		share := 1 + r.IntN(10)
		for _, f := range files {
			if r.IntN(share*3) == 0 {
				in.InFlight[f.Path] = true
			}
		}
	}
	return cfg, in
}

func TestPlannerProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(42, 7))
	counts := map[level.Kind]int{}
	cappedInDepth, overOneWorker, waited := 0, 0, 0
	for iter := range propertyCases() {
		cfg, in := randomCase(r)
		p := Plan(cfg, in)
		if err := checkPass(cfg, in, p); err != nil {
			t.Fatalf("case %d: %v\nconfig %+v\n%v", iter, err, cfg, p)
		}
		if len(p.Bins) > cfg.MaxBinsPerPass {
			overOneWorker++
		}
		if slices.ContainsFunc(p.Skipped, func(s string) bool { return strings.Contains(s, "wait for bins in flight") }) {
			waited++
		}
		for _, b := range p.Bins {
			counts[b.Kind]++
			for _, f := range b.Files {
				if b.Kind == level.KindDepth && cfg.LevelCapped(f.Generation) {
					cappedInDepth++
				}
			}
		}
		// Determinism: the same set in another order plans the same pass.
		shuffled := slices.Clone(in.Files)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		in2 := in
		in2.Files = shuffled
		if p2 := Plan(cfg, in2); p2.String() != p.String() || fmt.Sprint(p2.Deferred, p2.Next, p2.TimeLimit) != fmt.Sprint(p.Deferred, p.Next, p.TimeLimit) {
			t.Fatalf("case %d: plan depends on input order:\n%v\n---\n%v", iter, p, p2)
		}
	}
	// The generator must exercise every kind, or the properties prove little.
	for k := level.KindL0; k <= level.KindBackpressureL0; k++ {
		if counts[k] == 0 {
			t.Errorf("no %v bin in %d random cases", k, propertyCases())
		}
	}
	if cappedInDepth == 0 {
		t.Errorf("no capped file taken by a depth bin in %d random cases", propertyCases())
	}
	if overOneWorker == 0 || waited == 0 {
		t.Errorf("in %d random cases, %d passes used more than one worker's bin budget and %d had work wait for bins in flight: both must occur",
			propertyCases(), overOneWorker, waited)
	}
	t.Logf("bins by kind: %v; capped files in depth bins: %d; passes past one worker's bins: %d; with work waiting for bins in flight: %d",
		counts, cappedInDepth, overOneWorker, waited)
}

// checkPass verifies the promises every pass keeps.
func checkPass(cfg Config, in Input, p Pass) error {
	if err := checkTimeLimit(cfg, in, p); err != nil {
		return err
	}
	byPath := map[string]level.File{}
	for _, f := range in.Files {
		byPath[f.Path] = f
	}
	if err := checkInFlight(cfg, in, p); err != nil {
		return err
	}
	workers := max(in.Workers, 1)
	maxBins := cfg.MaxBinsPerPass * workers
	switch p.Decision {
	case DecisionRewritesDisabled, DecisionSkippedBackpressure, DecisionNothingDue:
		maxBins = 0
	case DecisionThrottledBackpressure:
		maxBins = cfg.BackpressureMaxBins
	}
	if cfg.ReclusterInterval == 0 && p.Decision != DecisionRewritesDisabled {
		return fmt.Errorf("rewrites disabled but decision %v", p.Decision)
	}
	if len(p.Bins) > maxBins {
		return fmt.Errorf("%d bins > budget %d (%v)", len(p.Bins), maxBins, p.Decision)
	}
	if n := p.Files(); n > cfg.MaxFilesPerPass*workers {
		return fmt.Errorf("%d files > budget %d for %d workers", n, cfg.MaxFilesPerPass*workers, workers)
	}
	seen := map[string]bool{}
	levelBinOf := map[string]int{} // path -> index of the level bin holding it
	// Deferred bins are real bins of input files, disjoint from each other and from Bins.
	deferred := map[string]bool{}
	for di, b := range p.Deferred {
		if len(b.Files) < 2 {
			return fmt.Errorf("deferred bin %d has %d files", di, len(b.Files))
		}
		for _, f := range b.Files {
			if orig, ok := byPath[f.Path]; !ok || orig != f {
				return fmt.Errorf("deferred bin %d holds a file not in the input: %v", di, f)
			}
			if deferred[f.Path] {
				return fmt.Errorf("file %s in two deferred bins", f.Path)
			}
			deferred[f.Path] = true
		}
	}
	for _, b := range p.Bins {
		for _, f := range b.Files {
			if deferred[f.Path] {
				return fmt.Errorf("file %s both in a bin and a deferred bin", f.Path)
			}
		}
	}
	for bi, b := range p.Bins {
		if len(b.Files) < 2 || len(b.Files) > cfg.MaxFanIn {
			return fmt.Errorf("bin %d has %d files (fan-in %d)", bi, len(b.Files), cfg.MaxFanIn)
		}
		var sum int64
		for _, f := range b.Files {
			orig, ok := byPath[f.Path]
			if !ok || orig != f {
				return fmt.Errorf("bin %d holds a file not in the input: %v", bi, f)
			}
			if seen[f.Path] {
				return fmt.Errorf("file %s in two bins", f.Path)
			}
			seen[f.Path] = true
			if f.Partition != b.Partition {
				return fmt.Errorf("bin %d of partition %q holds %v", bi, b.Partition, f)
			}
			sum += f.SizeBytes
		}
		if sum != b.EstimatedBytes {
			return fmt.Errorf("bin %d estimate %d, inputs %d", bi, b.EstimatedBytes, sum)
		}
		// The leveled planner keeps the late stream apart: a bin is all late or all on-time.
		apart := cfg.Leveled && cfg.LateStream
		if apart && b.Late() != b.Files[0].Late {
			return fmt.Errorf("bin %d (%v) mixes late and on-time files", bi, b.Kind)
		}
		if apart && b.Late() != strings.HasPrefix(b.Reason, "late stream: ") {
			return fmt.Errorf("bin %d: late %v, reason %q", bi, b.Late(), b.Reason)
		}
		switch b.Kind {
		case level.KindL0, level.KindL1, level.KindBackpressureL0:
			want := level.L0
			if b.Kind == level.KindL1 {
				want = level.L1
			}
			for _, f := range b.Files {
				if cfg.LevelOf(f.SizeBytes) != want || cfg.LevelCapped(f.Generation) {
					return fmt.Errorf("level bin %d (%v) holds %v: level %v, capped %v", bi, b.Kind, f, cfg.LevelOf(f.SizeBytes), cfg.LevelCapped(f.Generation))
				}
				levelBinOf[f.Path] = bi
			}
		case level.KindLegacy:
			if cfg.Leveled {
				return fmt.Errorf("legacy bin in leveled mode")
			}
		case level.KindDepth:
			if !cfg.Leveled && p.Decision != DecisionThrottledBackpressure {
				return fmt.Errorf("depth bin in legacy mode")
			}
		}
		if p.Decision == DecisionThrottledBackpressure {
			// The restricted pass considers L0 files only; an L0 cluster
			// too large for one bin goes as time-adjacent depth bins.
			if b.Kind != level.KindBackpressureL0 && b.Kind != level.KindDepth {
				return fmt.Errorf("throttled pass planned a %v bin", b.Kind)
			}
			for _, f := range b.Files {
				if cfg.LevelOf(f.SizeBytes) != level.L0 || cfg.LevelCapped(f.Generation) {
					return fmt.Errorf("throttled pass took %v", f)
				}
			}
		}
		if !cfg.Leveled && p.Decision == DecisionRun && b.Kind != level.KindLegacy {
			return fmt.Errorf("legacy mode planned a %v bin", b.Kind)
		}
	}
	// No level bin splits an overlap cluster: for each (partition, level),
	// every cluster of the rewrite-eligible files of a stream is either untouched by
	// level bins or entirely inside one of them.
	type key struct {
		part string
		l    level.Level
		late bool // each stream is a pool of its own (File.Late)
	}
	pools := map[key][]level.File{}
	for _, f := range in.Files {
		if f.MinTime > f.MaxTime || cfg.LevelCapped(f.Generation) {
			continue
		}
		k := key{f.Partition, cfg.LevelOf(f.SizeBytes), f.Late && cfg.Leveled && cfg.LateStream}
		pools[k] = append(pools[k], f)
	}
	for k, pool := range pools {
		for _, c := range level.Clusters(pool) {
			bin, inBin := -1, 0
			for _, f := range c {
				if bi, ok := levelBinOf[f.Path]; ok {
					if bin >= 0 && bi != bin {
						return fmt.Errorf("%v cluster of %d files split across level bins %d and %d", k, len(c), bin, bi)
					}
					bin = bi
					inBin++
				}
			}
			if inBin > 0 && inBin != len(c) {
				return fmt.Errorf("%v cluster of %d files: only %d in level bin %d", k, len(c), inBin, bin)
			}
		}
	}
	// The state moves the way the decision says.
	switch p.Decision {
	case DecisionSkippedBackpressure, DecisionThrottledBackpressure:
		if p.Next.BackloggedCycles != in.State.BackloggedCycles+1 {
			return fmt.Errorf("backlogged cycles %d -> %d", in.State.BackloggedCycles, p.Next.BackloggedCycles)
		}
		throttle := cfg.BackpressureCompactEvery > 0 && p.Next.BackloggedCycles%cfg.BackpressureCompactEvery == 0
		if throttle != (p.Decision == DecisionThrottledBackpressure) {
			return fmt.Errorf("cycle %d with every=%d decided %v", p.Next.BackloggedCycles, cfg.BackpressureCompactEvery, p.Decision)
		}
	default:
		if p.Next.BackloggedCycles != 0 {
			return fmt.Errorf("backlog count %d kept on a %v pass", p.Next.BackloggedCycles, p.Decision)
		}
	}
	if (in.SealedBacklog > cfg.MaxSealedForRecluster && cfg.ReclusterInterval > 0) !=
		(p.Decision == DecisionSkippedBackpressure || p.Decision == DecisionThrottledBackpressure) {
		return fmt.Errorf("backlog %d, decision %v", in.SealedBacklog, p.Decision)
	}
	return nil
}

// checkInFlight holds the promises about bins in flight (Input.InFlight): no bin, planned or
// deferred, holds an in-flight file, and no planned bin's time range, where its outputs land,
// reaches an in-flight file of its partition and stream (the running bin's outputs land there).
func checkInFlight(cfg Config, in Input, p Pass) error {
	if len(in.InFlight) == 0 {
		return nil
	}
	for _, bins := range [][]level.Bin{p.Bins, p.Deferred} {
		for bi, b := range bins {
			for _, f := range b.Files {
				if in.InFlight[f.Path] {
					return fmt.Errorf("bin %d (%v) holds in-flight file %s", bi, b.Kind, f.Path)
				}
			}
		}
	}
	apart := cfg.Leveled && cfg.LateStream
	for bi, b := range p.Bins {
		lo, hi := b.Files[0].MinTime, b.Files[0].MaxTime
		for _, f := range b.Files {
			lo, hi = min(lo, f.MinTime), max(hi, f.MaxTime)
		}
		for _, f := range in.Files {
			if in.InFlight[f.Path] && f.Partition == b.Partition && (!apart || f.Late == b.Late()) &&
				f.MinTime <= f.MaxTime && f.MinTime <= hi && lo <= f.MaxTime {
				return fmt.Errorf("bin %d (%v) over [%d, %d] reaches in-flight file %s [%d, %d] of its stream", bi, b.Kind, lo, hi, f.Path, f.MinTime, f.MaxTime)
			}
		}
	}
	return nil
}

// TestLegacyCoversWholePartitions: with budgets large enough, a legacy pass
// takes every file of every partition that is not yet compact.
func TestLegacyCoversWholePartitions(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for iter := range propertyCases() / 3 {
		cfg, in := randomCase(r)
		cfg.Leveled = false
		cfg.ReclusterInterval = time.Minute
		// With fan-in 2 an odd partition always leaves one file over.
		cfg.MaxFanIn = max(cfg.MaxFanIn, 3)
		cfg.MaxFilesPerPass = 1 << 20
		cfg.MaxBinsPerPass = 1 << 20
		in.SealedBacklog = 0
		in.State = State{}
		in.InFlight = nil // whole partitions: nothing held back
		p := Plan(cfg, in)
		covered := map[string]int{}
		for _, b := range p.Bins {
			if b.Kind != level.KindLegacy {
				t.Fatalf("case %d: %v bin in legacy mode", iter, b.Kind)
			}
			covered[b.Partition] += len(b.Files)
		}
		for part, fs := range level.ByPartition(in.Files) {
			d, _ := level.Depth(fs)
			small := 0
			for _, f := range fs {
				if f.SizeBytes < cfg.L1MinBytes {
					small++
				}
			}
			wantAll := len(fs) >= 2 && (d > 1 || small > 1)
			if wantAll && covered[part] != len(fs) {
				t.Fatalf("case %d: partition %s: %d of %d files in legacy bins", iter, part, covered[part], len(fs))
			}
			if !wantAll && covered[part] != 0 {
				t.Fatalf("case %d: compact partition %s rewritten", iter, part)
			}
		}
	}
}

// TestRepeatedPassesConverge applies passes, one per 10 s tick, to several
// overlapping file sets as an ideal rewriter would (outputs time-disjoint,
// split at the target) and checks that depth and L0 count come down the way
// the integration test on the real catalog expects: depth <= 2 and fewer
// than 8 L0 files, within two simulated hours (the hourly L2 check sweeps
// what the level rules and the depth trigger leave).
func TestRepeatedPassesConverge(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	sets := map[string][]level.File{}
	// 20 pods x 12 commits: every commit window overlaps the next a little
	// and every pod's file of a window overlaps the other pods'.
	for w := range 12 {
		for pod := range 20 {
			sets["ingest"] = append(sets["ingest"], level.File{
				Path: fmt.Sprintf("w%02d-p%02d", w, pod), Partition: "p", SizeBytes: 200 * kib,
				MinTime: int64(w)*10e6 - int64(pod)*1e5, MaxTime: int64(w+1)*10e6 + int64(pod)*1e5, Rows: 1000,
			})
		}
	}
	for i := range 200 {
		sets["stacked"] = append(sets["stacked"], level.File{Path: fmt.Sprint("s", i), Partition: "p",
			SizeBytes: 100 * kib, MinTime: 0, MaxTime: 60e6, Rows: 500})
		lo := r.Int64N(600e6)
		sets["random"] = append(sets["random"], level.File{Path: fmt.Sprint("r", i), Partition: "p",
			SizeBytes: 100*kib + r.Int64N(4<<20), MinTime: lo, MaxTime: lo + r.Int64N(120e6), Rows: 500})
		// Late tails: each file reaches back up to 5 minutes.
		end := int64(i) * 5e6
		sets["late"] = append(sets["late"], level.File{Path: fmt.Sprint("l", i), Partition: "p",
			SizeBytes: 1 << 20, MinTime: end - 5e6 - r.Int64N(300e6), MaxTime: end, Rows: 5000})
		// Two streams: on-time files of 5 s and late files reaching back up to 5 minutes,
		// overlapping each other everywhere.
		f := level.File{Path: fmt.Sprint("t", i), Partition: "p", SizeBytes: 1 << 20, MinTime: end - 5e6, MaxTime: end, Rows: 5000}
		if i%3 == 0 {
			f.Path, f.MinTime, f.Late = fmt.Sprint("tl", i), end-5e6-r.Int64N(300e6), true
		}
		sets["two streams"] = append(sets["two streams"], f)
	}
	for _, name := range []string{"ingest", "stacked", "random", "late", "two streams"} {
		files := sets[name]
		cfg := DefaultConfig()
		st, now, seq := State{}, t0, 0
		converged := false
		for pass := range 720 { // two hours of 10 s ticks
			p := Plan(cfg, Input{Files: files, Now: now, State: st})
			st = p.Next
			files, seq = applyIdeal(files, p.Bins, seq)
			d, _ := level.Depth(files)
			l0 := 0
			for _, f := range files {
				if cfg.LevelOf(f.SizeBytes) == level.L0 {
					l0++
				}
			}
			if pass == 30 {
				t.Logf("%s: after 5 minutes: %d files, %d L0, depth %d", name, len(files), l0, d)
			}
			if d <= 2 && l0 < cfg.EligibleFiles {
				t.Logf("%s: converged after %d passes (%v): %d files, depth %d", name, pass+1, now.Sub(t0), len(files), d)
				converged = true
				break
			}
			now = now.Add(10 * time.Second)
		}
		if !converged {
			d, _ := level.Depth(files)
			t.Errorf("%s: no convergence in two hours: %d files, depth %d", name, len(files), d)
		}
	}
}

// applyIdeal replaces each bin's files by outputs that split the bin's time
// span evenly into ceil(bytes/target) time-disjoint files.
func applyIdeal(files []level.File, bins []level.Bin, seq int) ([]level.File, int) {
	gone := map[string]bool{}
	var outs []level.File
	for _, b := range bins {
		lo, hi := b.Files[0].MinTime, b.Files[0].MaxTime
		var rows int64
		for _, f := range b.Files {
			gone[f.Path] = true
			lo, hi = min(lo, f.MinTime), max(hi, f.MaxTime)
			rows += f.Rows
		}
		n := max(1, (b.EstimatedBytes+b.TargetFileBytes-1)/b.TargetFileBytes)
		span := hi - lo + 1
		for i := range n {
			seq++
			from := lo + span*i/n
			to := lo + span*(i+1)/n - 1
			outs = append(outs, level.File{
				Path: fmt.Sprintf("out-%d", seq), Partition: b.Partition, SizeBytes: b.EstimatedBytes / n,
				Generation: b.OutputGeneration(), MinTime: from, MaxTime: to, Rows: rows / n, Late: b.Late(),
			})
		}
	}
	kept := files[:0:0]
	for _, f := range files {
		if !gone[f.Path] {
			kept = append(kept, f)
		}
	}
	return append(kept, outs...), seq
}

// checkTimeLimit holds the pass's time limit: only a leveled pass with a
// measured speed and a busy rewriter has one, the L0 check interval; its bins after the first
// fit it by the speed's estimate, but for at most one after largeBinWait
// limited passes; the count of limited passes grows by one or restarts.
func checkTimeLimit(cfg Config, in Input, p Pass) error {
	limited := cfg.Leveled && p.Decision == DecisionRun && in.Rewriter.Known() && in.RewriterBusy >= busyForTimeLimit
	if !limited {
		if p.TimeLimit != 0 {
			return fmt.Errorf("decision %v, leveled %v: time limit %v, want none", p.Decision, cfg.Leveled, p.TimeLimit)
		}
		if p.Decision == DecisionRun && p.Next.TimeLimitedPasses != 0 {
			return fmt.Errorf("no time limit but %d limited passes next", p.Next.TimeLimitedPasses)
		}
		return nil
	}
	if want := cfg.sane().CheckInterval[level.L0]; p.TimeLimit != want {
		return fmt.Errorf("time limit %v, want %v", p.TimeLimit, want)
	}
	allowed := 0
	if in.State.TimeLimitedPasses >= largeBinWait {
		allowed = 1
	}
	sum := in.TimeSpent
	past := 0
	for i, b := range p.Bins {
		est := in.Rewriter.Estimate(b.EstimatedBytes)
		if i > 0 && sum+est > p.TimeLimit {
			past++
		}
		sum += est
	}
	if past > allowed {
		return fmt.Errorf("%d bins past the time limit %v (allowed %d after %d limited passes)", past, p.TimeLimit, allowed, in.State.TimeLimitedPasses)
	}
	if n := p.Next.TimeLimitedPasses; n != 0 && n != in.State.TimeLimitedPasses+1 {
		return fmt.Errorf("limited passes %d -> %d", in.State.TimeLimitedPasses, n)
	}
	return nil
}
