package plan

import (
	"fmt"
	"slices"
)

// Closing merges: the work a partition gets once it has closed.
//
// Behind the ingest edge a partition with a late stream settles as the on-time terminal layer,
// the late stream's files (at up to its depth limit, lateDepthLimit), and the stragglers of
// both streams: the few small files the level rules leave alone (fewer than EligibleFiles, or at
// the generation cap), which the hourly L2 check merges only among themselves. The late stream
// and the stragglers each add a layer above the on-time one, where a writer that cuts by size
// only merges everything into the on-time layer (docs/compaction.md, "Late rows").
//
// Once a partition has closed (its newest row is Config.ClosedAfter behind the table's newest
// row) and its late stream is small beside its on-time files (closedLateShare), the L1 check
// plans, in that partition:
//   - a closing merge of its late stream together with its on-time stragglers (closedStraggler),
//     whose outputs are late files cut by size only (Bin.LateOutputs, Bin.SizeCutsOnly): each
//     overlap cluster of them, and each run of disjoint files below L2 and below the generation
//     cap that holds more than one file more than its bytes need at the L2 target,
//     in time-adjacent bins of at most the fan-in, when its incoming bytes (its files below L2
//     but its largest) hold at least closedClusterShare of its bytes. The late stream becomes
//     one disjoint layer of files near the L2 target size, and the on-time stragglers leave the
//     on-time stream: they are the rows that reached the partition after its dense data;
//   - a merge of each on-time cluster whose files below L2 hold at least closedClusterShare of
//     its bytes (such as the restricted pass's outputs of a stall: L1 files at the generation cap
//     inside the terminal layer), so the on-time stream becomes one layer too.
//
// Closing merges can wait (candidate.waits): in a pass with a time limit, a closing merge the
// limit refuses is taken past it only when no other refused bin is waiting, and a refused one
// neither counts toward that allowance (State.TimeLimitedPasses) nor keeps the L1 check due, which
// would then run every tick instead of every minute. With the allowance
// open to them (the first refused bin larger than the limit, in score order), the busy table's
// ingest-edge depth p50 went from 27 to 41 in the simulator; with closing merges only in passes
// without a time limit, the stall table's settled depth p50 stayed 3 (its rewriter is busy for a
// while after its stall).
//
// A closed partition that later gets late rows again is merged again the same way, but only once
// the new rows hold closedClusterShare of the cluster they join: one new 1 MiB late file a minute
// beside a settled 1.1 GiB late layer, with every pass applied, cost 34 GiB of closing rewrites
// in 30 minutes when the whole pool was merged whenever any two of its files overlapped
// (outputs reaching generation 33); now two hours of it cost 3.6 GiB for 120 MiB, 30 times, with
// outputs up to generation 7 (TestClosingMergesOfALateTrickle). The
// late share bounds it further: on a table whose late stream is a large part of its data and
// keeps arriving long after the partition closed, each new late file would rewrite the late
// layer it overlaps (closedLateShare says what that measured).

// closedLateShare is the largest late-stream share of a partition's on-time bytes at which the
// partition gets closing merges. Measured (docs/compaction.md, "Late rows"): the busy and stall
// tables' late streams are about 5% of their on-time bytes and gain; the late table's (30% of rows
// late by 10 minutes on average, about 40% of its on-time bytes, still arriving for an hour after
// a partition closed) lost with closing merges (settled depth p50 23 to 79), so it gets none.
const closedLateShare = 1.0 / 8

// closedStraggler is the largest share of the on-time terminal bytes it overlaps at which a
// smaller on-time file of a closed partition counts as a straggler that the closing merge moves
// to the late stream: one row, or the tail files of the last commits, beside gigabytes of
// terminal files. A file of the on-time layer (an L1 file just under the L2 boundary beside one
// or two terminal files) is far above it and stays on-time; without the bound the closing merge
// took such files into the late stream and rewrote them again and again.
const closedStraggler = 1.0 / 16

// closedClusterShare is the smallest share of an on-time cluster's bytes its smaller files must
// hold for the closing merge of that cluster (and of a late group's bytes its incoming files
// must hold, closingIncoming): the terminal files it rewrites are at most 32 times
// what it takes in. Measured on the stall table, before the restricted pass's size cuts: at 1/8
// and 1/16 (fewer clusters merged) the settled depth p50 stayed 3; at 1/32 and 1/64 it was 2, for
// about the same write amplification. Only partitions with a late stream get it: on the quiet
// table, which has none, 1/32 cost write amplification 4.40 to 4.44 (1/16: 4.87) for fewer files.
const closedClusterShare = 1.0 / 32

// closedCandidates returns, for the L1 check, the closing-merge candidates of every closed
// partition that has a late stream (see the comment at the top of this file). The table's edge is
// its newest row, but never later than now: one row from a clock running ahead would otherwise
// close every partition behind it, the live one too.
func closedCandidates(cfg Config, onTime, late []File, now int64) []candidate {
	if cfg.ClosedAfter <= 0 || len(late) == 0 {
		return nil
	}
	closedBefore := min(max(maxTime(onTime), maxTime(late)), now) - cfg.ClosedAfter.Microseconds()
	on, lt := byPartition(onTime), byPartition(late)
	var out []candidate
	for _, part := range sortedPartitions(lt) {
		onPool, latePool := on[part], lt[part]
		if max(maxTime(onPool), maxTime(latePool)) >= closedBefore {
			continue // rows are still arriving at its edge
		}
		onBytes, lateBytes := sumBytes(onPool), sumBytes(latePool)
		if float64(lateBytes) > closedLateShare*float64(onBytes) {
			continue
		}
		if c, ok := closingLate(cfg, part, onPool, latePool); ok {
			out = append(out, c)
		}
		if c, ok := closingOnTime(cfg, part, onPool); ok {
			out = append(out, c)
		}
	}
	return out
}

// closingLate is the closing merge of a closed partition's late stream with its on-time
// stragglers. A file at the generation cap is taken as the depth trigger takes it, in an overlap
// cluster, never as one of a run of disjoint files (the count rule, like the level rules' count,
// leaves it alone).
func closingLate(cfg Config, part string, onPool, latePool []File) (candidate, bool) {
	var terms []File
	for _, f := range onPool {
		if cfg.LevelOf(f.SizeBytes) == L2 {
			terms = append(terms, f)
		}
	}
	pool := slices.Clone(latePool)
	for _, f := range onPool {
		if cfg.LevelOf(f.SizeBytes) < L2 && stragglerOf(terms, f) {
			pool = append(pool, f)
		}
	}
	sortByTime(pool)
	why := fmt.Sprintf("late stream: closed partition: %d late files and on-time stragglers", len(pool))
	groups := closingLateGroups(cfg, pool)
	if len(groups) == 0 {
		return candidate{}, false
	}
	return candidate{
		kind: KindDepth, level: L1, partition: part, why: why, score: 1, waits: true,
		build: func(taken map[string]bool) []Bin {
			// The trigger again on what earlier bins of the pass left: a group part of which
			// they took may no longer need a merge.
			var bins []Bin
			for _, g := range closingLateGroups(cfg, untaken(pool, taken)) {
				bins = append(bins, adjacentBins(cfg, part, g, g[0].MinTime, why)...)
			}
			for i := range bins {
				bins[i].LateOutputs, bins[i].SizeCutsOnly = true, true
				bins[i].TargetFileBytes = cfg.TargetBytes[L2]
			}
			return bins
		},
	}, true
}

// closingLateGroups returns the groups of pool (time-sorted) that a closing merge takes: each
// overlap cluster of two or more files, and each run of disjoint files below L2 and the
// generation cap (between two clusters, full files or capped files) that holds more than one file more than its bytes need at the L2
// target. Either only when its incoming bytes, those of its files below L2 but the largest file,
// hold at least closedClusterShare of its bytes: a merge then rewrites at most 32 times what
// came in since the last, so late rows that keep arriving after the partition closed do not
// re-merge its settled late layer with each file.
func closingLateGroups(cfg Config, pool []File) [][]File {
	var out [][]File
	var runFiles []File
	flush := func() {
		need := int((sumBytes(runFiles) + cfg.TargetBytes[L2] - 1) / cfg.TargetBytes[L2])
		if len(runFiles) >= 2 && len(runFiles) > need+1 && closingIncoming(cfg, runFiles) {
			out = append(out, runFiles)
		}
		runFiles = nil
	}
	for _, c := range Clusters(pool) {
		if len(c) == 1 && cfg.LevelOf(c[0].SizeBytes) < L2 && !cfg.LevelCapped(c[0].Generation) {
			runFiles = append(runFiles, c[0])
			continue
		}
		flush()
		if len(c) >= 2 && closingIncoming(cfg, c) {
			out = append(out, c)
		}
	}
	flush()
	return out
}

// closingIncoming reports whether the files of g below L2, but g's largest file, hold at least
// closedClusterShare of g's bytes.
func closingIncoming(cfg Config, g []File) bool {
	largest := 0
	for i, f := range g {
		if f.SizeBytes > g[largest].SizeBytes {
			largest = i
		}
	}
	var in int64
	for i, f := range g {
		if i != largest && cfg.LevelOf(f.SizeBytes) < L2 {
			in += f.SizeBytes
		}
	}
	return in > 0 && float64(in) >= closedClusterShare*float64(sumBytes(g))
}

// stragglerOf reports whether f, a smaller on-time file, is a straggler beside the terminal
// files terms: it overlaps some and holds at most closedStraggler of their bytes.
func stragglerOf(terms []File, f File) bool {
	var n int64
	for _, t := range terms {
		if t.Overlaps(f) {
			n += t.SizeBytes
		}
	}
	return n > 0 && float64(f.SizeBytes) <= closedStraggler*float64(n)
}

// closingOnTime is the closing merge of a closed partition's on-time clusters whose files below
// L2 hold at least closedClusterShare of the cluster's bytes (clusters of smaller files only, as
// the L2 check's sweep merges them, and terminal files with the smaller files inside them).
// The stragglers the late closing merge takes are below that share beside the terminal files
// they overlap, so the two merges do not compete for the same clusters in a partition where a
// straggler is the only smaller file.
func closingOnTime(cfg Config, part string, onPool []File) (candidate, bool) {
	var picks [][]File
	for _, c := range Clusters(onPool) {
		if len(c) < 2 {
			continue
		}
		var small int64
		for _, f := range c {
			if cfg.LevelOf(f.SizeBytes) < L2 {
				small += f.SizeBytes
			}
		}
		if small > 0 && float64(small) >= closedClusterShare*float64(sumBytes(c)) {
			picks = append(picks, c)
		}
	}
	if len(picks) == 0 {
		return candidate{}, false
	}
	why := fmt.Sprintf("closed partition: %d on-time clusters of terminal and smaller files", len(picks))
	return candidate{
		kind: KindDepth, level: L1, partition: part, why: why, score: 1, waits: true,
		build: func(taken map[string]bool) []Bin {
			var bins []Bin
			for _, c := range picks {
				if !anyTaken(c, taken) {
					bins = append(bins, adjacentBins(cfg, part, c, c[0].MinTime, why)...)
				}
			}
			return bins
		},
	}, true
}
