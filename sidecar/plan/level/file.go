package level

import (
	"cmp"
	"slices"
)

// File is one live data file of a table as the planner sees it. The caller
// fills it from the manifests; the planner never reads anything itself.
type File struct {
	// Path identifies the file in the replace commit.
	Path string
	// Partition is the partition key rendered as a string; bins never mix
	// partitions because a data file belongs to exactly one.
	Partition string
	// SizeBytes comes from the manifest and decides the level.
	SizeBytes int64
	// Generation is parsed by the caller from the file name: 0 for drain
	// output, max input generation + 1 for a rewrite's output.
	Generation int
	// MinTime and MaxTime are the inclusive bounds of the time column in
	// microseconds, from the manifest's column bounds.
	MinTime, MaxTime int64
	// Rows is the record count, carried through for status pages.
	Rows int64
	// Late marks a file of the late stream: the writer cut it from a sparse
	// run of rows (rows that arrived long after their time), or it is the
	// output of a bin of late files. Parsed by the caller from the file name.
	// The leveled planner plans late files apart from the on-time ones, with
	// the same rules, so a late row never drags an on-time rewrite across
	// minutes (docs/compaction.md, "Late rows").
	Late bool
}

// Overlaps reports whether two inclusive time ranges share an instant.
func (f File) Overlaps(g File) bool { return f.MinTime <= g.MaxTime && g.MinTime <= f.MaxTime }

// Depth returns the overlap depth of files: the largest number of file time
// ranges that contain one instant (ranges are inclusive), and the first
// instant where that depth is reached. It ignores partitions: callers pass
// one partition's files. Empty input has depth 0.
func Depth(files []File) (depth int, at int64) {
	if len(files) == 0 {
		return 0, 0
	}
	// Sweep line over sorted starts and ends; a range [min, max] is open
	// from min up to max+1. Plain int64 sorts keep this cheap enough to run
	// over every partition on every pass.
	starts := make([]int64, len(files))
	ends := make([]int64, 0, len(files))
	for i, f := range files {
		starts[i] = f.MinTime
		// A file ending at the largest int64 never closes, which is
		// harmless for a maximum.
		if f.MaxTime < maxInt64 {
			ends = append(ends, f.MaxTime+1)
		}
	}
	slices.Sort(starts)
	slices.Sort(ends)
	cur, j := 0, 0
	for _, s := range starts {
		// Closings at or before this start come first: [0,4] and [5,9]
		// share no instant.
		for j < len(ends) && ends[j] <= s {
			cur--
			j++
		}
		cur++
		if cur > depth {
			depth, at = cur, s
		}
	}
	return depth, at
}

const maxInt64 = int64(^uint64(0) >> 1)

// Clusters groups files into overlap clusters: the connected components of
// the "time ranges share an instant" relation. Clusters come out in time
// order and the files of each cluster sorted by (MinTime, MaxTime, Path).
// The input slice is not modified.
func Clusters(files []File) [][]File {
	if len(files) == 0 {
		return nil
	}
	sorted := slices.Clone(files)
	sortByTime(sorted)
	var out [][]File
	start := 0
	end := sorted[0].MaxTime
	for i := 1; i < len(sorted); i++ {
		if sorted[i].MinTime > end {
			out = append(out, sorted[start:i:i])
			start = i
			end = sorted[i].MaxTime
			continue
		}
		end = max(end, sorted[i].MaxTime)
	}
	return append(out, sorted[start:])
}

// PartitionDepths returns the overlap depth of every partition of parts (the
// files by partition, ByPartition).
func PartitionDepths(parts map[string][]File) map[string]int {
	out := make(map[string]int, len(parts))
	for p, fs := range parts {
		out[p], _ = Depth(fs)
	}
	return out
}

func sortByTime(fs []File) {
	slices.SortFunc(fs, func(a, b File) int {
		if c := cmp.Compare(a.MinTime, b.MinTime); c != 0 {
			return c
		}
		if c := cmp.Compare(a.MaxTime, b.MaxTime); c != 0 {
			return c
		}
		return cmp.Compare(a.Path, b.Path)
	})
}

// ByPartition groups files by partition, keeping their order within each.
func ByPartition(files []File) map[string][]File {
	out := make(map[string][]File)
	// Input usually comes grouped by partition: one map update per run of a
	// partition's files, not two string hashes per file.
	for i := 0; i < len(files); {
		j := i + 1
		for j < len(files) && files[j].Partition == files[i].Partition {
			j++
		}
		out[files[i].Partition] = append(out[files[i].Partition], files[i:j]...)
		i = j
	}
	return out
}

// Untaken returns the files of fs whose paths are not in taken (the files
// earlier bins of a pass hold).
func Untaken(fs []File, taken map[string]bool) []File {
	out := make([]File, 0, len(fs))
	for _, f := range fs {
		if !taken[f.Path] {
			out = append(out, f)
		}
	}
	return out
}

// AnyTaken reports whether a file of fs is in taken.
func AnyTaken(fs []File, taken map[string]bool) bool {
	for _, f := range fs {
		if taken[f.Path] {
			return true
		}
	}
	return false
}

// SumBytes is the files' total size.
func SumBytes(fs []File) int64 {
	var n int64
	for _, f := range fs {
		n += f.SizeBytes
	}
	return n
}

func maxTime(fs []File) int64 {
	var t int64
	for i, f := range fs {
		if i == 0 || f.MaxTime > t {
			t = f.MaxTime
		}
	}
	return t
}

// sortedPartitions returns the partition keys in order, so passes are
// deterministic whatever the map order.
func sortedPartitions(m map[string][]File) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
