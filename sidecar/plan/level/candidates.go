package level

import (
	"cmp"
	"fmt"
	"slices"
)

// Candidate is one reason to rewrite in one partition; its bins are built
// when the planner serves it, from the files earlier bins have not taken.
type Candidate struct {
	Kind Kind
	// Level is the level whose check produced it: a level starved of budget
	// is checked again at the next pass.
	Level     Level
	Partition string
	// Score is the pressure: candidates are served highest first.
	Score float64
	// Why says in words why the candidate exists; bins extend it.
	Why string
	// Build returns the candidate's bins from the files of its partition not
	// in taken; nil when too few are left.
	Build func(taken map[string]bool) []Bin
}

// Candidates returns the candidates of the level checks that run (checks[l]),
// each stream apart: the L0 check brings the depth trigger, the L2 check the
// overlap of terminal files and the absorb bins.
func Candidates(cfg Rules, files []File, checks [NumLevels]bool) []Candidate {
	onTime, late := streams(cfg, files)
	var cands []Candidate
	for l := L0; l < NumLevels; l++ {
		if !checks[l] {
			continue
		}
		for i, fs := range [][]File{onTime, late} {
			var cs []Candidate
			switch l {
			case L0:
				limit := cfg.MaxOverlapDepth
				if i == 1 {
					limit = lateDepthLimit(cfg)
				}
				cs = append(levelCandidates(cfg, fs, L0, KindL0), depthCandidates(cfg, fs, limit)...)
			case L1:
				cs = levelCandidates(cfg, fs, L1, KindL1)
			case L2:
				cs = append(terminalCandidates(cfg, fs), absorbCandidates(cfg, fs)...)
			}
			if i == 1 {
				cs = lateCandidates(cs)
			}
			cands = append(cands, cs...)
		}
		if l == L0 {
			cands = append(cands, combinedDepthCandidates(cfg, onTime, late)...)
		}
	}
	return cands
}

// BackpressureCandidates returns the candidates of a backlogged cycle's
// restricted pass: the L0 level check of each stream, without the depth trigger.
func BackpressureCandidates(cfg Rules, files []File) []Candidate {
	onTime, late := streams(cfg, files)
	return append(levelCandidates(cfg, onTime, L0, KindBackpressureL0),
		lateCandidates(levelCandidates(cfg, late, L0, KindBackpressureL0))...)
}

// streams splits files into the on-time stream and the late stream
// (File.Late), when the leveled planner keeps them apart (Rules.LateStream).
// Each is planned with the same rules on its own: late files are merged among
// themselves, into late files, so an on-time rewrite never takes a late file
// whose range reaches minutes back, and a late rewrite never rewrites on-time
// rows to absorb a few late ones. Overlap depth as reported (plan.Pass.Depth) still
// counts both.
func streams(cfg Rules, files []File) (onTime, late []File) {
	if !cfg.Leveled || !cfg.LateStream {
		return files, nil
	}
	for _, f := range files {
		if f.Late {
			late = append(late, f)
		} else {
			onTime = append(onTime, f)
		}
	}
	return onTime, late
}

// combinedDepthCandidates keeps the spec's trigger on the depth of the table
// as it is read, both streams together: a partition deeper than
// MaxOverlapDepth whose streams are each within their own limits (on-time 12
// and late 6 make 18) gets a depth rewrite of the stream that holds more files
// at its deepest instant. The bin stays within that stream.
func combinedDepthCandidates(cfg Rules, onTime, late []File) []Candidate {
	on, lt := ByPartition(onTime), ByPartition(late)
	var out []Candidate
	for _, part := range sortedPartitions(lt) {
		onPool, latePool := on[part], lt[part]
		d, _ := Depth(append(slices.Clone(onPool), latePool...))
		dOn, _ := Depth(onPool)
		dLate, _ := Depth(latePool)
		if d <= cfg.MaxOverlapDepth || dOn > cfg.MaxOverlapDepth || dLate > lateDepthLimit(cfg) {
			continue // within the limit, or a stream's own trigger serves it
		}
		why := fmt.Sprintf("overlap depth %d > %d with both streams (on-time %d, late %d)", d, cfg.MaxOverlapDepth, dOn, dLate)
		out = append(out, Candidate{
			Kind: KindDepth, Level: L0, Partition: part, Why: why,
			Score: float64(d) / float64(cfg.MaxOverlapDepth),
			Build: func(taken map[string]bool) []Bin {
				fo, fl := Untaken(onPool, taken), Untaken(latePool, taken)
				d, at := Depth(append(slices.Clone(fo), fl...))
				if d <= cfg.MaxOverlapDepth {
					return nil
				}
				pool, prefix := fo, ""
				if covering(fl, at) > covering(fo, at) {
					pool, prefix = fl, "late stream: "
				}
				c := clusterAt(pool, at)
				if len(c) < 2 {
					return nil
				}
				bins := adjacentBins(cfg, part, c, at, fmt.Sprintf("%s; deepest cluster of the stream with more files there", why))
				for i := range bins {
					bins[i].Reason = prefix + bins[i].Reason
				}
				return bins
			},
		})
	}
	return out
}

// covering counts the files of fs whose range holds instant t.
func covering(fs []File, t int64) int {
	n := 0
	for _, f := range fs {
		if f.MinTime <= t && t <= f.MaxTime {
			n++
		}
	}
	return n
}

// lateDepthLimit is the depth the late stream may reach before its depth
// trigger merges it: half of MaxOverlapDepth. Behind the ingest edge the
// on-time files settle into one disjoint layer and the late stream makes the
// rest of what an ordered read pays, so the late stream's limit is about what
// the settled layout converges to; half kept it lowest (docs/compaction.md,
// "Late rows"). The table's depth as a whole still has
// the spec's trigger (combinedDepthCandidates).
func lateDepthLimit(cfg Rules) int { return max(1, cfg.MaxOverlapDepth/2) }

// lateCandidates marks candidates built from the late stream in their
// reasons, so status pages tell the two streams apart.
func lateCandidates(cs []Candidate) []Candidate {
	for i := range cs {
		c := &cs[i]
		build := c.Build
		c.Why = "late stream: " + c.Why
		c.Build = func(taken map[string]bool) []Bin {
			bins := build(taken)
			for j := range bins {
				bins[j].Reason = "late stream: " + bins[j].Reason
			}
			return bins
		}
	}
	return cs
}

// levelCandidates returns one candidate per partition whose level l holds
// at least EligibleFiles rewrite-eligible files (of the right size and
// below the generation cap).
func levelCandidates(cfg Rules, files []File, l Level, kind Kind) []Candidate {
	parts := map[string][]File{}
	for _, f := range files {
		if cfg.LevelOf(f.SizeBytes) == l && !cfg.LevelCapped(f.Generation) {
			parts[f.Partition] = append(parts[f.Partition], f)
		}
	}
	var out []Candidate
	for _, part := range sortedPartitions(parts) {
		pool := parts[part]
		if len(pool) < cfg.EligibleFiles {
			continue
		}
		why := fmt.Sprintf("%d rewrite-eligible %s files >= %d", len(pool), l, cfg.EligibleFiles)
		out = append(out, Candidate{
			Kind: kind, Level: l, Partition: part, Why: why,
			Score: float64(len(pool)) / float64(cfg.EligibleFiles),
			Build: func(taken map[string]bool) []Bin {
				// A cluster part of which an earlier bin took is left whole
				// for a later pass rather than split.
				var free []File
				for _, c := range Clusters(pool) {
					if !AnyTaken(c, taken) {
						free = append(free, c...)
					}
				}
				if len(free) < cfg.EligibleFiles {
					return nil
				}
				return levelBins(cfg, kind, l, part, free, why)
			},
		})
	}
	return out
}

// levelBins packs whole overlap clusters, in time order, into bins of at
// most MaxFanIn files, closing a bin once it reaches the level's target
// size. A cluster is never split across bins; a cluster larger than the
// fan-in cannot be a level bin at all and is rewritten as time-adjacent
// overlap bins instead, so a long chain of slightly overlapping files
// cannot block its level forever.
func levelBins(cfg Rules, kind Kind, l Level, part string, pool []File, why string) []Bin {
	target := cfg.TargetBytes[l]
	var bins []Bin
	var cur []File
	var curBytes int64
	flush := func() {
		if len(cur) >= 2 {
			bins = append(bins, Bin{
				Kind: kind, Level: l, Partition: part, Files: cur,
				EstimatedBytes: curBytes, TargetFileBytes: target,
				Reason: fmt.Sprintf("%s; %d files, %d bytes of whole clusters", why, len(cur), curBytes),
			})
		}
		cur, curBytes = nil, 0
	}
	for _, c := range Clusters(pool) {
		if len(c) > cfg.MaxFanIn {
			flush()
			reason := fmt.Sprintf("%s; overlap cluster of %d files exceeds fan-in %d", why, len(c), cfg.MaxFanIn)
			bins = append(bins, adjacentBins(cfg, part, c, maxTime(c), reason)...)
			continue
		}
		cb := SumBytes(c)
		if len(cur) > 0 && (len(cur)+len(c) > cfg.MaxFanIn || curBytes >= target) {
			flush()
		}
		cur = append(cur, c...)
		curBytes += cb
	}
	flush()
	return bins
}

// depthCandidates returns one candidate per partition whose overlap depth
// exceeds limit (MaxOverlapDepth, or lateDepthLimit in the late stream).
// Every file of the partition's stream counts, whatever its level or
// generation: overlap costs ordered reads wherever it is. The bins
// take the deepest cluster of the non-terminal files when those alone
// exceed the limit, else the deepest cluster of all files.
func depthCandidates(cfg Rules, files []File, limit int) []Candidate {
	parts := ByPartition(files)
	var out []Candidate
	for _, part := range sortedPartitions(parts) {
		pool := parts[part]
		d, _ := Depth(pool)
		if d <= limit {
			continue
		}
		why := fmt.Sprintf("overlap depth %d > %d", d, limit)
		out = append(out, Candidate{
			Kind: KindDepth, Level: L0, Partition: part, Why: why,
			Score: float64(d) / float64(limit),
			Build: func(taken map[string]bool) []Bin {
				free := Untaken(pool, taken)
				d, at := Depth(free)
				if d <= limit {
					return nil
				}
				// Smaller files first: while they alone are deep enough to
				// trigger, merging them lowers the depth without rewriting
				// terminal files (which is what drives write amplification
				// when late rows keep stretching fresh files backwards).
				var small []File
				for _, f := range free {
					if cfg.LevelOf(f.SizeBytes) < L2 {
						small = append(small, f)
					}
				}
				if ds, ats := Depth(small); ds > limit {
					free, d, at = small, ds, ats
				}
				deepest := clusterAt(free, at)
				reason := fmt.Sprintf("overlap depth %d > %d; deepest cluster of %d files", d, limit, len(deepest))
				return adjacentBins(cfg, part, deepest, at, reason)
			},
		})
	}
	return out
}

// terminalCandidates returns, for the hourly L2 check, one candidate per
// partition with overlap the level rules leave alone: terminal files that
// overlap each other (L2 is never level-rewritten), and overlapping smaller
// files too few to make their level eligible, such as the late rows that
// reach a partition after it stopped receiving data. Both are merged within
// their own group, so a sweep never rewrites a large file to absorb a few
// small ones; what remains is at most a terminal layer plus one layer of
// stragglers.
func terminalCandidates(cfg Rules, files []File) []Candidate {
	parts := ByPartition(files)
	var out []Candidate
	for _, part := range sortedPartitions(parts) {
		var big, small []File
		for _, f := range parts[part] {
			if cfg.LevelOf(f.SizeBytes) == L2 {
				big = append(big, f)
			} else {
				small = append(small, f)
			}
		}
		db, _ := Depth(big)
		ds, _ := Depth(small)
		if db < 2 && ds < 2 {
			continue
		}
		why := fmt.Sprintf("L2 check: overlap among terminal files (depth %d) or among smaller files (depth %d)", db, ds)
		out = append(out, Candidate{
			Kind: KindDepth, Level: L2, Partition: part, Why: why,
			Score: float64(max(db, ds)) / float64(cfg.MaxOverlapDepth),
			Build: func(taken map[string]bool) []Bin {
				var bins []Bin
				for _, group := range [][]File{big, small} {
					for _, c := range Clusters(Untaken(group, taken)) {
						if len(c) >= 2 {
							bins = append(bins, adjacentBins(cfg, part, c, c[0].MinTime, why)...)
						}
					}
				}
				return bins
			},
		})
	}
	return out
}

// LegacyCandidates returns one candidate per partition that is not yet
// compact (it has overlap or more than one small file); its bins cover the
// whole partition, time-adjacent, at most MaxFanIn files each.
// parts are the files by partition and depths their depths (the planner has them already).
func LegacyCandidates(cfg Rules, parts map[string][]File, depths map[string]int) []Candidate {
	var out []Candidate
	for _, part := range sortedPartitions(parts) {
		pool := parts[part]
		d := depths[part]
		small := 0
		for _, f := range pool {
			if f.SizeBytes < cfg.L1MinBytes {
				small++
			}
		}
		if len(pool) < 2 || (d <= 1 && small <= 1) {
			continue
		}
		why := fmt.Sprintf("legacy whole-partition pass: %d files, %d small, depth %d", len(pool), small, d)
		out = append(out, Candidate{
			Kind: KindLegacy, Level: L0, Partition: part, Why: why,
			Score: float64(len(pool)) / float64(cfg.EligibleFiles),
			Build: func(taken map[string]bool) []Bin {
				free := Untaken(pool, taken)
				sortByTime(free)
				var bins []Bin
				for _, chunk := range chunks(free, cfg.MaxFanIn) {
					if len(chunk) < 2 {
						continue
					}
					bins = append(bins, Bin{
						Kind: KindLegacy, Level: maxLevel(cfg, chunk), Partition: part, Files: chunk,
						EstimatedBytes: SumBytes(chunk), TargetFileBytes: cfg.TargetBytes[L1],
						Reason: why,
					})
				}
				return bins
			},
		})
	}
	return out
}

// clusterAt returns the overlap cluster of fs that contains instant t.
func clusterAt(fs []File, t int64) []File {
	for _, c := range Clusters(fs) {
		if c[0].MinTime <= t && t <= maxTime(c) {
			return c
		}
	}
	return nil
}

// adjacentBins cuts files (one cluster) into balanced runs of time-adjacent
// files, at most MaxFanIn each, regardless of bytes. Each run's output is
// time-disjoint, so a run collapses its share of the overlap to one file
// per instant without joining distant ranges. Runs that hold more files
// containing instant hot come first, so a tight budget is spent where the
// overlap is deepest.
func adjacentBins(cfg Rules, part string, cluster []File, hot int64, reason string) []Bin {
	fs := slices.Clone(cluster)
	sortByTime(fs)
	var bins []Bin
	hits := map[int]int{}
	for _, chunk := range chunks(fs, cfg.MaxFanIn) {
		if len(chunk) < 2 {
			continue
		}
		l := maxLevel(cfg, chunk)
		for _, f := range chunk {
			if f.MinTime <= hot && hot <= f.MaxTime {
				hits[len(bins)]++
			}
		}
		bins = append(bins, Bin{
			Kind: KindDepth, Level: l, Partition: part, Files: chunk,
			EstimatedBytes: SumBytes(chunk), TargetFileBytes: cfg.TargetBytes[l],
			Reason: fmt.Sprintf("%s; time-adjacent run of %d files", reason, len(chunk)),
		})
	}
	order := make([]int, len(bins))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(hits[b], hits[a]) })
	out := make([]Bin, len(bins))
	for i, j := range order {
		out[i] = bins[j]
	}
	return out
}

// chunks cuts fs into ceil(len/limit) runs of near-equal length, so the
// last run is not a leftover of one or two files.
func chunks(fs []File, limit int) [][]File {
	if len(fs) == 0 {
		return nil
	}
	n := (len(fs) + limit - 1) / limit
	out := make([][]File, 0, n)
	start := 0
	for i := range n {
		end := (i + 1) * len(fs) / n
		out = append(out, fs[start:end:end])
		start = end
	}
	return out
}

func maxLevel(cfg Rules, fs []File) Level {
	l := L0
	for _, f := range fs {
		l = max(l, cfg.LevelOf(f.SizeBytes))
	}
	return l
}
