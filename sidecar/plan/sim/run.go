package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// Sample is the table at one instant of simulated time.
type Sample struct {
	At time.Duration
	// Depth is the table's overlap depth: the largest over partitions.
	Depth int
	// SettledDepth counts only files whose newest row is SettledAfter old.
	SettledDepth int
	// EdgeDepth counts only the others: the files at the ingest edge, whose
	// newest row is less than SettledAfter old.
	EdgeDepth int
	Files     int
	Levels    [level.NumLevels]int
	// BacklogSeconds is rewrite work planned but not yet committed.
	BacklogSeconds float64
}

// Result is what one simulated run measured.
type Result struct {
	Scenario string
	Strategy string
	Duration time.Duration
	// Workers is the scenario's rewriter count (Scenario.Workers).
	Workers int

	IngestedBytes  float64
	RewrittenBytes float64 // bytes written by rewrites (= bytes they read)
	// SplicedBytes is the part of RewrittenBytes the splice model copied
	// instead of re-encoding (Scenario.SpliceBytesPerSec; 0 without it).
	SplicedBytes float64
	// RewriteSeconds is the rewriter's time over all bins (the cost model's
	// total, BinOverhead included).
	RewriteSeconds float64
	// WriteAmp is RewrittenBytes / IngestedBytes: extra bytes written per
	// ingested byte.
	WriteAmp float64

	DepthMax, DepthP50               int
	SettledDepthMax, SettledDepthP50 int
	EdgeDepthMax, EdgeDepthP50       int
	FilesMax, FilesP50, FilesFinal   int
	// FinalLevels is the live file count per level at the end.
	FinalLevels       [level.NumLevels]int
	BacklogMaxSeconds float64
	// BusyFraction is the share of the rewriters' time they were working:
	// the time of every bin over Workers times the duration.
	BusyFraction float64

	Decisions  map[string]int
	BinsByKind map[string]int
	// RewrittenByKind splits RewrittenBytes by bin kind and level, e.g.
	// "depth/L2", to show where write amplification comes from.
	RewrittenByKind map[string]float64
	Samples         []Sample
	// Errors lists impossible events (a bin naming a file that is not
	// live); a correct planner leaves it empty.
	Errors []string
}

func (r Result) String() string {
	return fmt.Sprintf("%s/%s: WA %.2f, depth max %d p50 %d, settled depth max %d p50 %d, edge depth max %d p50 %d, files max %d p50 %d final %d (L0 %d L1 %d L2 %d), backlog max %.0fs, rewriter busy %.0f%%, bins %v, passes %v",
		r.Scenario, r.Strategy, r.WriteAmp, r.DepthMax, r.DepthP50, r.SettledDepthMax, r.SettledDepthP50, r.EdgeDepthMax, r.EdgeDepthP50,
		r.FilesMax, r.FilesP50, r.FilesFinal, r.FinalLevels[0], r.FinalLevels[1], r.FinalLevels[2],
		r.BacklogMaxSeconds, 100*r.BusyFraction, r.BinsByKind, r.Decisions) + ", WA by kind " + r.waByKind()
}

// waByKind renders RewrittenByKind as write amplification shares.
func (r Result) waByKind() string {
	keys := make([]string, 0, len(r.RewrittenByKind))
	for k := range r.RewrittenByKind {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %.2f", k, r.RewrittenByKind[k]/math.Max(r.IngestedBytes, 1)))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

type simFile struct {
	level.File
	pieces []piece
	dead   bool // rewritten away; its partition's sorted list drops it at its next rebuild
}

type pending struct {
	bin  level.Bin
	done int64 // completion time, µs
	took int64 // duration, µs
	// copied is what the splice model copied of it: the maintainer's
	// speed counts re-encoded bytes only.
	copied float64
}

// partState caches one partition's depths between samples: most partitions are
// closed and unchanged, and recomputing every depth every minute would
// dominate a long run.
type partState struct {
	files   map[string]*simFile
	dirty   bool
	depth   int
	settled int
	edge    int
	newest  int64 // largest MaxTime of its files
	levels  [level.NumLevels]int
	// list is the partition's files in time order for the planner's input,
	// rebuilt only when listDirty: between passes most partitions do not
	// change, and the planner's sorts run in linear time on sorted runs.
	// order holds the same files; a rebuild drops the dead ones and merges
	// in added, sorted, rather than sorting the partition again.
	list      []level.File
	order     []*simFile
	added     []*simFile
	listDirty bool
}

type world struct {
	s     Scenario
	cfg   plan.Config
	files map[string]*simFile
	parts map[string]*partState
	seq   int
	res   Result
	// queue holds the bins dealt and not yet committed, in order of their
	// end (ties in the order dealt); free is when each worker's last bin
	// ends; inflight holds the queued bins' input files, the planner's
	// Input.InFlight (as the lease book's InFlight): later passes plan without
	// them and wait for them. With one worker a pass starts only when nothing
	// is queued, so it is empty.
	queue    []pending
	free     []int64
	inflight map[string]bool
	// dealt, when set (tests), sees each bin dealt: its worker and when it
	// starts and ends, µs.
	dealt func(worker int, start, done int64, b level.Bin)
	// offered is the last pass's bins on offer, in its order (tests read it in dealt).
	offered []level.Bin
	busyUs  int64
	rate    plan.RewriteRate // what the maintainer measures of its rewrites
	busy    plan.BusyShare
	// lastPass and lastPassTook are when the last pass was planned and how
	// long its bins took, for busy.
	lastPass, lastPassTook int64
}

// epoch anchors simulated time for the planner's time.Time arguments.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run simulates one scenario with its configured strategy.
func Run(s Scenario) Result { return run(s).res }

// run simulates s; each of setup sees the world before the first tick.
func run(s Scenario, setup ...func(*world)) *world {
	s = s.withDefaults()
	w := &world{s: s, cfg: s.Config, files: map[string]*simFile{}, parts: map[string]*partState{},
		free: make([]int64, s.Workers), inflight: map[string]bool{}}
	for _, f := range setup {
		f(w)
	}
	w.res = Result{Scenario: s.Name, Strategy: s.Strategy(), Duration: s.Duration, Workers: s.Workers,
		Decisions: map[string]int{}, BinsByKind: map[string]int{}, RewrittenByKind: map[string]float64{}}
	r := rand.New(rand.NewPCG(s.Seed, 0x5eed))
	g := &ingest{r: r, delay: us(s.ArrivalDelay), lateFrac: s.LateFraction, lateMean: us(s.LateMean),
		width: us(s.PartitionWidth), rowBytes: s.RowBytes}
	pods := newCommits(s)

	var st plan.State
	end := s.Duration.Microseconds()
	tick := s.Tick.Microseconds()
	sampleEvery := s.SampleEvery.Microseconds()
	nextSample := int64(0)
	for now := int64(0); now <= end; now += tick {
		w.ingestDue(now, pods, g)
		w.commitFinished(now)
		// One rewriter asks for the next pass once idle (the process runs its pass's bins before
		// the next cycle); with several the owner plans every tick, as the maintainer offers each
		// cycle's bins whatever its workers are doing.
		if s.Workers > 1 || slices.Min(w.free) <= now {
			st = w.pass(now, now+tick, st)
		}
		if now >= nextSample {
			w.sample(now)
			nextSample += sampleEvery
			if s.Progress != nil {
				s.Progress(w.res.Strategy, time.Duration(now)*time.Microsecond, s.Duration)
			}
		}
	}
	w.finish(end)
	return w
}

// commits is the pods' commit schedule: each pod commits every `every`
// microseconds of the bytes it ingested since its last commit.
type commits struct {
	podRate, every float64
	next, last     []float64 // per pod: next and last commit time
}

func newCommits(s Scenario) *commits {
	c := &commits{podRate: s.IngestBytesPerSec / float64(s.Pods), every: us(s.CommitMaxAge)}
	if s.CommitTargetBytes > 0 {
		c.every = math.Min(c.every, s.CommitTargetBytes/c.podRate*1e6)
	}
	c.every = math.Max(c.every, 1e5) // at most 10 commits per second per pod
	c.next = make([]float64, s.Pods)
	c.last = make([]float64, s.Pods)
	for p := range c.next {
		c.next[p] = c.every * float64(p+1) / float64(s.Pods) // pods out of phase
	}
	return c
}

// ingestDue adds the files of every pod commit due by now.
func (w *world) ingestDue(now int64, c *commits, g *ingest) {
	s := w.s
	for p := range c.next {
		for c.next[p] <= float64(now) {
			ws, we := int64(c.last[p]), int64(c.next[p])
			bytes := c.podRate * (c.next[p] - c.last[p]) / 1e6
			batch := g.batch(ws, we, bytes)
			runs := drainRuns(batch, s.DrainSplitSparse, splitMinRows*s.RowBytes)
			for part, ps := range batch {
				for _, r := range runs {
					if in := clip(ps, r.lo, r.hi); len(in) > 0 {
						w.add(part, 0, r.sparse && s.LateStream, in)
					}
				}
			}
			w.res.IngestedBytes += bytes
			c.last[p] = c.next[p]
			c.next[p] += c.every
		}
	}
}

// commitFinished commits the rewrites finished by now, one bin at a time.
// The rate the planner sees records each bin at its time over Workers (see
// pass).
func (w *world) commitFinished(now int64) {
	for len(w.queue) > 0 && w.queue[0].done <= now {
		w.apply(w.queue[0].bin)
		q := w.queue[0]
		for _, f := range q.bin.Files {
			delete(w.inflight, f.Path)
		}
		w.rate.Add(max(q.bin.EstimatedBytes-int64(q.copied), 1), time.Duration(q.took)*time.Microsecond/time.Duration(w.s.Workers))
		w.queue = w.queue[1:]
	}
}

// pass plans one pass at now from state st, runs its bins on the workers with their modelled
// durations and returns the state for the next pass, due at next.
//
// With Workers > 1 the planner's time-limit inputs are the workers' aggregate
// capacity: the rate records each bin at its time over Workers and the busy
// share is bin time over Workers times wall time. The limit exists so that a
// pass's bins end by the next L0 check; Workers rewriters in parallel end
// Workers checks' worth of bins in about one, so one worker's speed would cap
// each pass at what one worker does and leave the others idle, and one
// worker's busy share would apply the limit while most workers idle. The
// first bin is still taken whatever its size. With one worker both are what
// the process measures.
func (w *world) pass(now, next int64, st plan.State) plan.State {
	s := w.s
	in := plan.Input{
		Files: w.live(), Now: epoch.Add(time.Duration(now) * time.Microsecond),
		SealedBacklog: s.sealedAt(now), State: st, InFlight: w.inflight, Workers: s.Workers,
	}
	if s.PassTimeLimit {
		w.busy.Add(time.Duration(w.lastPassTook)*time.Microsecond/time.Duration(s.Workers), time.Duration(now-w.lastPass)*time.Microsecond)
		in.Rewriter, in.RewriterBusy = w.rate, w.busy.Share()
	}
	p := plan.Plan(w.cfg, in)
	w.lastPass, w.lastPassTook = now, 0
	w.res.Decisions[p.Decision.String()]++
	if s.Workers > 1 {
		w.offer(now, next, p.Bins)
	} else {
		for _, b := range p.Bins {
			w.deal(0, now, b)
		}
	}
	slices.SortStableFunc(w.queue, func(a, b pending) int { return cmp.Compare(a.done, b.done) })
	return p.Next
}

// offer models the lease book (docs/design/bin-leases.md) for the bins of a pass planned at now:
// each worker that frees up before the next pass (next) takes the next bin still on offer in
// the pass's order (Book.Take: the planner's most urgent first) and runs it from then; the
// bins left are withdrawn, as the owner's next pass replaces its unleased offers, and their
// files are planned again. A worker merges one bin at a time.
func (w *world) offer(now, next int64, bins []level.Bin) {
	w.offered = bins
	for _, b := range bins {
		i := w.firstFree()
		if w.free[i] >= next {
			return
		}
		w.deal(i, max(w.free[i], now), b)
	}
}

// firstFree is the worker that frees up first (the lowest on a tie).
func (w *world) firstFree() int {
	i := 0
	for j, f := range w.free {
		if f < w.free[i] {
			i = j
		}
	}
	return i
}

// deal runs bin b on worker i from start (µs) at its modelled duration. A bin over a file of a
// bin still queued or running is recorded in Result.Errors: the planner never saw that file
// (plannable).
func (w *world) deal(i int, start int64, b level.Bin) {
	s := w.s
	copied := w.spliceBytes(b)
	w.res.SplicedBytes += copied
	d := int64((float64(b.EstimatedBytes)-copied)/s.MergeBytesPerSec*1e6) + s.BinOverhead.Microseconds()
	if copied > 0 {
		d += int64(copied / s.SpliceBytesPerSec * 1e6)
	}
	w.res.RewriteSeconds += float64(d) / 1e6
	for _, f := range b.Files {
		if w.inflight[f.Path] {
			w.res.Errors = append(w.res.Errors, fmt.Sprintf("bin input %s is in a bin still running", f.Path))
		}
		w.inflight[f.Path] = true
	}
	start = max(w.free[i], start)
	w.free[i] = start + d
	w.queue = append(w.queue, pending{b, w.free[i], d, copied})
	if w.dealt != nil {
		w.dealt(i, start, w.free[i], b)
	}
	w.busyUs += d
	w.lastPassTook += d
	w.res.BinsByKind[b.Kind.String()]++
}

// Compare runs the scenario with the leveled and the legacy strategy.
func Compare(s Scenario) (leveled, legacy Result) {
	s.Config.Leveled = true
	leveled = Run(s)
	s.Config.Leveled = false
	legacy = Run(s)
	return leveled, legacy
}

func us(d time.Duration) float64 { return float64(d.Microseconds()) }

func (s Scenario) sealedAt(now int64) int {
	for _, st := range s.Stalls {
		if st.From.Microseconds() <= now && now < st.To.Microseconds() {
			return st.Sealed
		}
	}
	return 0
}

func (w *world) add(part int64, gen int, late bool, ps []piece) *simFile {
	var bytes float64
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, p := range ps {
		bytes += p.bytes
		lo, hi = min(lo, p.lo), max(hi, p.hi)
	}
	if bytes < 1 || lo > hi {
		return nil
	}
	w.seq++
	f := &simFile{File: level.File{
		Path:      "f" + strconv.Itoa(w.seq),
		Partition: "h" + strconv.FormatInt(part, 10),
		SizeBytes: int64(math.Round(bytes)), Generation: gen,
		MinTime: lo, MaxTime: hi, Rows: int64(bytes / w.s.RowBytes), Late: late,
	}, pieces: ps}
	w.files[f.Path] = f
	pt := w.parts[f.Partition]
	if pt == nil {
		pt = &partState{files: map[string]*simFile{}}
		w.parts[f.Partition] = pt
	}
	pt.files[f.Path] = f
	pt.added = append(pt.added, f)
	pt.dirty, pt.listDirty = true, true
	return f
}

// live returns the live files, partition by partition (in key order), each
// partition's in time order: the planner's passes do not depend on the order
// of its input (a property test holds it to that), but grouped and sorted
// runs make its grouping and sorts cheap over the legacy strategy's many files.
func (w *world) live() []level.File {
	keys := make([]string, 0, len(w.parts))
	for k := range w.parts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]level.File, 0, len(w.files))
	for _, k := range keys {
		out = append(out, w.parts[k].sorted()...)
	}
	return out
}

// sorted returns the partition's files in time order (list).
func (pt *partState) sorted() []level.File {
	if !pt.listDirty {
		return pt.list
	}
	dead := func(f *simFile) bool { return f.dead }
	keep := slices.DeleteFunc(pt.order, dead)
	added := slices.DeleteFunc(pt.added, dead)
	slices.SortFunc(added, byTime)
	merged := make([]*simFile, 0, len(keep)+len(added))
	i, j := 0, 0
	for i < len(keep) || j < len(added) {
		if j == len(added) || (i < len(keep) && byTime(keep[i], added[j]) <= 0) {
			merged = append(merged, keep[i])
			i++
		} else {
			merged = append(merged, added[j])
			j++
		}
	}
	clear(pt.added[:cap(pt.added)]) // let rewritten files go
	pt.order, pt.added = merged, pt.added[:0]
	pt.list = pt.list[:0]
	for _, f := range merged {
		pt.list = append(pt.list, f.File)
	}
	pt.listDirty = false
	return pt.list
}

// byTime orders files as the planner does: by (MinTime, MaxTime, Path).
func byTime(a, b *simFile) int {
	if c := cmp.Compare(a.MinTime, b.MinTime); c != 0 {
		return c
	}
	if c := cmp.Compare(a.MaxTime, b.MaxTime); c != 0 {
		return c
	}
	return cmp.Compare(a.Path, b.Path)
}

// spliceBytes is what the splice model copies of bin b: of each input, the
// bytes of its pieces outside every other input's time range, less a row
// group on each side of every overlap, when that leaves at least
// SpliceMinBytes. 0 when the scenario has no splice. Optimistic: it credits
// a copy to any bin with copyable bytes, where merge.ChoosePath splices only
// a bin that does not fit in memory and is at least half copyable.
func (w *world) spliceBytes(b level.Bin) float64 {
	if w.s.SpliceBytesPerSec <= 0 || len(b.Files) == 0 {
		return 0
	}
	var total float64
	for i, f := range b.Files {
		sf, ok := w.files[f.Path]
		if !ok {
			continue
		}
		var overlaps []piece // the other inputs' ranges that cut into f
		for j, o := range b.Files {
			if j != i && o.MinTime <= f.MaxTime && o.MaxTime >= f.MinTime {
				overlaps = append(overlaps, piece{lo: max(o.MinTime, f.MinTime), hi: min(o.MaxTime, f.MaxTime)})
			}
		}
		overlaps = mergeRanges(overlaps)
		copied := 0.0
		for _, p := range sf.pieces {
			covered := int64(0)
			for _, c := range overlaps {
				if lo, hi := max(c.lo, p.lo), min(c.hi, p.hi); lo <= hi {
					covered += hi - lo + 1
				}
			}
			copied += p.bytes * (1 - float64(covered)/float64(p.hi-p.lo+1))
		}
		copied -= 2 * w.s.SpliceRowGroupBytes * float64(len(overlaps))
		if copied >= w.s.SpliceMinBytes {
			total += copied
		}
	}
	return total
}

// mergeRanges returns the union of ranges as disjoint ranges in time order.
func mergeRanges(rs []piece) []piece {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b piece) int { return cmp.Compare(a.lo, b.lo) })
	var out []piece
	for _, r := range rs {
		if n := len(out); n > 0 && r.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// apply performs an ideal rewrite: the bin's rows, sorted by time, are cut
// into ceil(bytes/target) outputs of equal bytes, pairwise time-disjoint.
func (w *world) apply(b level.Bin) {
	var ins []piece
	part := int64(0)
	for _, f := range b.Files {
		sf, ok := w.files[f.Path]
		if !ok {
			// Only a planner bug gets here; record it for the tests.
			w.res.Errors = append(w.res.Errors, fmt.Sprintf("bin input %s is not live", f.Path))
			continue
		}
		ins = append(ins, sf.pieces...)
		delete(w.files, f.Path)
		sf.dead = true
		if pt := w.parts[sf.Partition]; pt != nil {
			delete(pt.files, f.Path)
			pt.dirty, pt.listDirty = true, true
		}
		part, _ = strconv.ParseInt(sf.Partition[1:], 10, 64)
	}
	total := float64(b.EstimatedBytes)
	w.res.RewrittenBytes += total
	w.res.RewrittenByKind[b.Kind.String()+"/"+b.Level.String()] += total
	late := b.Late()
	outs, sparse := cut(ins, float64(b.TargetFileBytes), w.s.SplitSparse, splitMinBinRows*w.s.RowBytes)
	for i, out := range outs {
		w.add(part, b.OutputGeneration(), w.s.LateStream && (late || sparse[i]), out)
	}
}

// cut merges pieces into one density over time and splits it into outputs
// of at most about target bytes each, pairwise time-disjoint; each output's
// pieces are compacted to at most maxPieces. With sparse > 0 it first cuts
// wherever the density crosses sparse times the byte-median density, so a
// thin tail of late rows becomes its own small output instead of
// stretching a large one (see Scenario.SplitSparse). A bin of less than
// minBytes is cut by size only, as merge does below its floors.
func cut(ins []piece, target, sparse, minBytes float64) (outs [][]piece, sparseOut []bool) {
	iv := density(ins)
	groups, groupSparse := [][]piece{iv}, []bool{false}
	var total float64
	for _, p := range iv {
		total += p.bytes
	}
	if sparse > 0 && len(iv) > 1 && total >= minBytes {
		groups, groupSparse = splitSparse(iv, sparse)
	}
	for i, g := range groups {
		var bytes float64
		for _, p := range g {
			bytes += p.bytes
		}
		n := max(1, int(math.Ceil(bytes/math.Max(target, 1)-1e-9))) // float sums drift
		for _, o := range cutEqual(g, n) {
			outs = append(outs, o)
			sparseOut = append(sparseOut, groupSparse[i])
		}
	}
	return outs, sparseOut
}

// densityRun is a time range of a drain batch that is all dense or all sparse.
type densityRun struct {
	lo, hi int64
	sparse bool
}

// drainRuns models the drain's cuts: the density of the whole batch, over
// every partition it touches, is cut into dense and sparse runs, so that the
// rows a batch brings to a partition that has closed (all of them late) are
// late too. Without cuts, or under the floor, the batch is one dense run.
func drainRuns(batch map[int64][]piece, frac, minBytes float64) []densityRun {
	whole := []densityRun{{math.MinInt64, math.MaxInt64, false}}
	if frac <= 0 {
		return whole
	}
	var all []piece
	for _, ps := range batch {
		all = append(all, ps...)
	}
	iv := density(all)
	var total float64
	for _, p := range iv {
		total += p.bytes
	}
	if len(iv) < 2 || total < minBytes {
		return whole
	}
	groups, sparse := splitSparse(iv, frac)
	runs := make([]densityRun, len(groups))
	for i, g := range groups {
		runs[i] = densityRun{g[0].lo, math.MaxInt64, sparse[i]}
		if i > 0 {
			runs[i-1].hi = g[0].lo - 1
		} else {
			runs[i].lo = math.MinInt64
		}
	}
	return runs
}

// clip returns the parts of pieces inside [lo, hi], bytes in proportion.
func clip(ps []piece, lo, hi int64) []piece {
	var out []piece
	for _, p := range ps {
		a, b := max(p.lo, lo), min(p.hi, hi)
		if a > b {
			continue
		}
		out = append(out, piece{a, b, p.bytes * float64(b-a+1) / float64(p.hi-p.lo+1)})
	}
	return out
}

// density returns the elementary intervals between all piece edges that
// hold bytes, in time order, each with the bytes the pieces put there.
func density(ins []piece) []piece {
	edges := make([]int64, 0, 2*len(ins))
	for _, p := range ins {
		edges = append(edges, p.lo, p.hi+1)
	}
	slices.Sort(edges)
	edges = slices.Compact(edges)
	dens := make([]float64, len(edges)) // bytes per µs on [edges[i], edges[i+1])
	for _, p := range ins {
		i, _ := slices.BinarySearch(edges, p.lo)
		j, _ := slices.BinarySearch(edges, p.hi+1)
		d := p.bytes / float64(p.hi-p.lo+1)
		for k := i; k < j; k++ {
			dens[k] += d
		}
	}
	var out []piece
	for i := 0; i+1 < len(edges); i++ {
		if dens[i] > 0 {
			out = append(out, piece{edges[i], edges[i+1] - 1, dens[i] * float64(edges[i+1]-edges[i])})
		}
	}
	return out
}

func (p piece) density() float64 { return p.bytes / float64(p.hi-p.lo+1) }

// splitSparse groups time-ordered intervals into runs that are all dense
// or all sparse, dense meaning at least frac times the density below which
// half of the bytes lie; sparse[i] says which groups[i] is.
func splitSparse(iv []piece, frac float64) (groups [][]piece, sparse []bool) {
	byDens := slices.Clone(iv)
	slices.SortFunc(byDens, func(a, b piece) int { return cmp.Compare(b.density(), a.density()) })
	var total, acc float64
	for _, p := range iv {
		total += p.bytes
	}
	median := 0.0
	for _, p := range byDens {
		acc += p.bytes
		if acc >= total/2 {
			median = p.density()
			break
		}
	}
	start := 0
	dense := func(p piece) bool { return p.density() >= frac*median }

	for i := 1; i <= len(iv); i++ {
		if i == len(iv) || dense(iv[i]) != dense(iv[start]) {
			groups = append(groups, iv[start:i])
			sparse = append(sparse, !dense(iv[start]))
			start = i
		}
	}
	return groups, sparse
}

// cutEqual splits time-ordered intervals into n outputs of equal bytes.
func cutEqual(iv []piece, n int) [][]piece {
	var total float64
	for _, p := range iv {
		total += p.bytes
	}
	per := total / float64(n)
	outs := make([][]piece, 0, n)
	var cur []piece
	var curBytes float64
	flush := func() {
		outs = append(outs, compact(cur))
		cur, curBytes = nil, 0
	}
	for _, p := range iv {
		lo, hi, d := p.lo, p.hi, p.density()
		for lo <= hi {
			room := per - curBytes
			avail := d * float64(hi-lo+1)
			if avail <= room || len(outs) == n-1 {
				cur = append(cur, piece{lo, hi, avail})
				curBytes += avail
				break
			}
			// Split this interval where the current output fills up; the
			// cut lies between two instants, so outputs stay disjoint.
			span := int64(room / d)
			if span < 1 {
				if len(cur) > 0 {
					flush()
					continue
				}
				span = 1 // one instant holds more than an output: alone
			}
			cur = append(cur, piece{lo, lo + span - 1, d * float64(span)})
			flush()
			lo += span
		}
	}
	if len(cur) > 0 {
		flush()
	}
	return outs
}

const maxPieces = 8

// splitMinRows mirrors density.SplitSparseMinRows: a batch or bin of fewer rows
// is cut by size only (a test holds the two equal).
const splitMinRows = 1 << 16

// splitMinBinRows mirrors merge.SplitSparseMinBinRows, the floor of a rewrite.
const splitMinBinRows = 1 << 18

// compact merges adjacent pieces (smallest gap first) until at most
// maxPieces remain, keeping total bytes and the overall range.
func compact(ps []piece) []piece {
	for len(ps) > maxPieces {
		best, bestGap := 0, int64(math.MaxInt64)
		for i := 0; i+1 < len(ps); i++ {
			if gap := ps[i+1].lo - ps[i].hi; gap < bestGap {
				best, bestGap = i, gap
			}
		}
		merged := piece{ps[best].lo, ps[best+1].hi, ps[best].bytes + ps[best+1].bytes}
		ps = slices.Replace(ps, best, best+2, merged)
	}
	return ps
}

func (w *world) sample(now int64) {
	s := Sample{At: time.Duration(now) * time.Microsecond, Files: len(w.files)}
	cutoff := now - w.s.SettledAfter.Microseconds()
	var settled, edge []level.File
	for _, pt := range w.parts {
		// A partition's settled set changes when its files change or when
		// one of its files may have crossed the cutoff since last time.
		if pt.dirty || pt.newest >= cutoff-w.s.SampleEvery.Microseconds() {
			settled, edge = settled[:0], edge[:0]
			pt.newest = math.MinInt64
			pt.levels = [level.NumLevels]int{}
			fs := pt.sorted() // time order: the depths' sorts run on sorted starts
			for _, f := range fs {
				pt.levels[w.cfg.LevelOf(f.SizeBytes)]++
				pt.newest = max(pt.newest, f.MaxTime)
				if f.MaxTime < cutoff {
					settled = append(settled, f)
				} else {
					edge = append(edge, f)
				}
			}
			pt.depth, _ = level.Depth(fs)
			pt.settled, _ = level.Depth(settled)
			pt.edge, _ = level.Depth(edge)
			pt.dirty = false
		}
		s.Depth = max(s.Depth, pt.depth)
		s.SettledDepth = max(s.SettledDepth, pt.settled)
		s.EdgeDepth = max(s.EdgeDepth, pt.edge)
		for l, n := range pt.levels {
			s.Levels[l] += n
		}
	}
	if len(w.queue) > 0 {
		s.BacklogSeconds = float64(w.queue[len(w.queue)-1].done-now) / 1e6
	}
	w.res.Samples = append(w.res.Samples, s)
}

func (w *world) finish(end int64) {
	r := &w.res
	if r.IngestedBytes > 0 {
		r.WriteAmp = r.RewrittenBytes / r.IngestedBytes
	}
	r.BusyFraction = math.Min(1, float64(w.busyUs)/float64(max(end, 1)*int64(w.s.Workers)))
	var depths, settled, edge, files []int
	for _, s := range r.Samples {
		depths = append(depths, s.Depth)
		settled = append(settled, s.SettledDepth)
		edge = append(edge, s.EdgeDepth)
		files = append(files, s.Files)
		r.BacklogMaxSeconds = math.Max(r.BacklogMaxSeconds, s.BacklogSeconds)
	}
	r.DepthMax, r.DepthP50 = maxP50(depths)
	r.SettledDepthMax, r.SettledDepthP50 = maxP50(settled)
	r.EdgeDepthMax, r.EdgeDepthP50 = maxP50(edge)
	r.FilesMax, r.FilesP50 = maxP50(files)
	if n := len(r.Samples); n > 0 {
		last := r.Samples[n-1]
		r.FilesFinal, r.FinalLevels = last.Files, last.Levels
	}
}

func maxP50(xs []int) (int, int) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)-1], s[len(s)/2]
}
