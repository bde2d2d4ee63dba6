package level

import (
	"cmp"
	"fmt"
	"slices"
)

// RowGroupRows mirrors writer.DefaultRowGroupRows: the rows of a full row
// group, the unit the splice copies (a test in sim holds the two equal).
const RowGroupRows = 128 * 1024

// absorbCandidates returns, for the L2 check, one candidate per partition of
// a stream whose terminal layer could take in the small files beside it
// (stragglers the level rules leave alone: fewer than EligibleFiles, or at
// the generation cap) with a rewrite that mostly copies. Without the splice
// such a bin re-encodes a 512 MiB file to absorb a few MiB, which is why
// terminalCandidates merges stragglers only among themselves; with it the
// terminal file's row groups that no straggler touches are copied, and the
// bin costs about the stragglers plus a row group per overlap (spliceEstimate).
// A bin is one terminal file that overlaps no other terminal file, plus the
// small files nearest to it in time, and is planned only when
//   - its estimated re-encoded share is at most Rules.AbsorbMaxReencode,
//   - its time range overlaps no file of the stream outside it (the output adds
//     no overlap and no cluster is split),
//   - it fits TargetBytes[L2] and a quarter (one output, no new sliver file),
//   - and it rewrites a file at the generation cap only where a straggler
//     overlaps it (an overlap-driven rewrite).
//
// Scores stay below 1, so level, depth and terminal-overlap work is served
// first. A terminal file decodes far past a pod's merge budget, so
// merge.ChoosePath splices such a bin when at least half of its bytes are
// copyable: the default AbsorbMaxReencode, 0.5, asks the same of the model.
func absorbCandidates(cfg Rules, files []File) []Candidate {
	if cfg.AbsorbMaxReencode <= 0 {
		return nil
	}
	parts := ByPartition(files)
	var out []Candidate
	for _, part := range sortedPartitions(parts) {
		pool := parts[part]
		n := len(absorbBins(cfg, part, pool, pool))
		if n == 0 {
			continue
		}
		why := fmt.Sprintf("L2 check: %d terminal files can absorb the small files beside them by a splice", n)
		out = append(out, Candidate{
			Kind: KindAbsorb, Level: L2, Partition: part, Why: why,
			Score: float64(n) / float64(n+cfg.EligibleFiles),
			Build: func(taken map[string]bool) []Bin {
				return absorbBins(cfg, part, Untaken(pool, taken), pool)
			},
		})
	}
	return out
}

// absorbBins builds the absorb bins of one partition's stream from the files
// free (not taken by an earlier bin of the pass); no bin's time range
// overlaps a file of all outside it, taken or not.
func absorbBins(cfg Rules, part string, free, all []File) []Bin {
	var terms, small []File
	for _, f := range free {
		if cfg.LevelOf(f.SizeBytes) == L2 {
			terms = append(terms, f)
		} else {
			small = append(small, f)
		}
	}
	if len(terms) == 0 || len(small) == 0 {
		return nil
	}
	sortByTime(terms)
	sortByTime(small)
	// Each small file belongs to the last terminal file starting at or before
	// it (the first one for files before every terminal file).
	owned := make([][]File, len(terms))
	for _, s := range small {
		i := max(0, sortIndex(terms, s.MinTime)-1)
		owned[i] = append(owned[i], s)
	}
	maxBytes := cfg.TargetBytes[L2] + cfg.TargetBytes[L2]/4
	var bins []Bin
	for i, t := range terms {
		if len(owned[i]) == 0 || overlapsTerminal(cfg, t, all) {
			continue // terminal overlap is terminalCandidates' work
		}
		cands := slices.Clone(owned[i])
		slices.SortStableFunc(cands, func(a, b File) int { return cmp.Compare(gap(t, a), gap(t, b)) })
		for n := min(len(cands), cfg.MaxFanIn-1); n >= 1; n-- {
			fs := append([]File{t}, cands[:n]...)
			if b, ok := absorbBin(cfg, part, fs, all, maxBytes); ok {
				bins = append(bins, b)
				break
			}
		}
	}
	return bins
}

// absorbBin checks the rules of absorbCandidates for one bin (fs[0] is the
// terminal file) and builds it.
func absorbBin(cfg Rules, part string, fs, pool []File, maxBytes int64) (Bin, bool) {
	bytes := SumBytes(fs)
	if bytes > maxBytes {
		return Bin{}, false
	}
	lo, hi := fs[0].MinTime, fs[0].MaxTime
	overlap := false
	for _, f := range fs[1:] {
		lo, hi = min(lo, f.MinTime), max(hi, f.MaxTime)
		overlap = overlap || f.Overlaps(fs[0])
	}
	in := map[string]bool{}
	for _, f := range fs {
		in[f.Path] = true
		if !overlap && cfg.LevelCapped(f.Generation) {
			return Bin{}, false
		}
	}
	for _, f := range pool {
		if !in[f.Path] && f.MinTime <= hi && lo <= f.MaxTime {
			return Bin{}, false
		}
	}
	re := spliceEstimate(fs)
	if float64(re) > cfg.AbsorbMaxReencode*float64(bytes) {
		return Bin{}, false
	}
	sorted := slices.Clone(fs)
	sortByTime(sorted)
	return Bin{
		Kind: KindAbsorb, Level: L2, Partition: part, Files: sorted,
		EstimatedBytes: bytes,
		// One output: cut at the level's target, the absorbed rows would
		// come out as a new small file.
		TargetFileBytes: 2 * maxBytes,
		Reason: fmt.Sprintf("L2 check: a terminal file absorbs %d small files by a splice; about %d of %d bytes re-encoded, the rest copied",
			len(fs)-1, re, bytes),
	}, true
}

// spliceEstimate is the planner's model of the splice (merge.ChoosePath's
// row-group splice): the bytes of fs it must re-encode. Of each file, the
// share of its time range that the other files' ranges cover is re-encoded,
// plus a row group at each edge of a covered run inside the file (the row
// group the edge falls in holds rows on both sides; merge copies a row group
// only when no other input's rows fall inside it). A file of less than half
// a row group (merge.DefaultSpliceMinRows), or without a row count, or with
// less than half a row group left to copy, is re-encoded whole. Rows are
// taken as spread evenly over a file's range, as on-time files are. A splice
// minimum above RowGroupRows copies nothing; the process then sets
// AbsorbMaxReencode to 0 (config.PlanConfig).
func spliceEstimate(fs []File) int64 {
	var total int64
	for i, f := range fs {
		if f.Rows < RowGroupRows/2 {
			total += f.SizeBytes
			continue
		}
		var cover []File // the other files' ranges clipped to f
		for j, o := range fs {
			if j != i && o.Overlaps(f) {
				cover = append(cover, File{MinTime: max(o.MinTime, f.MinTime), MaxTime: min(o.MaxTime, f.MaxTime)})
			}
		}
		var covered, edges int64
		for _, c := range Clusters(cover) {
			lo, hi := c[0].MinTime, maxTime(c)
			covered += hi - lo + 1
			if lo > f.MinTime {
				edges++
			}
			if hi < f.MaxTime {
				edges++
			}
		}
		rg := f.SizeBytes * min(int64(RowGroupRows), f.Rows) / f.Rows
		re := min(f.SizeBytes, int64(float64(f.SizeBytes)*float64(covered)/float64(f.MaxTime-f.MinTime+1))+rg*edges)
		if f.SizeBytes-re < rg/2 {
			re = f.SizeBytes
		}
		total += re
	}
	return total
}

// sortIndex returns how many of the time-sorted files start at or before t.
func sortIndex(fs []File, t int64) int {
	i, _ := slices.BinarySearchFunc(fs, t, func(f File, t int64) int {
		if f.MinTime <= t {
			return -1
		}
		return 1
	})
	return i
}

// overlapsTerminal reports whether terminal file t overlaps another terminal
// file of all (the stream's files, taken or not).
func overlapsTerminal(cfg Rules, t File, all []File) bool {
	for _, g := range all {
		if g.Path != t.Path && cfg.LevelOf(g.SizeBytes) == L2 && g.Overlaps(t) {
			return true
		}
	}
	return false
}

// gap is how far s lies from t in time; 0 when they overlap.
func gap(t, s File) int64 {
	return max(0, s.MinTime-t.MaxTime, t.MinTime-s.MaxTime)
}
