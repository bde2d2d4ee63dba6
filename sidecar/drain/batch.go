package drain

import (
	"sort"
	"time"

	"github.com/siglake/siglake/localwal"
)

// batch is the sealed segments of one table that go into one catalog commit, oldest first.
type batch struct {
	table string
	dir   string // the WAL dir its segments are in (a stream subdirectory with claims)
	segs  []localwal.SegmentInfo
	bytes int64
}

// planBatches groups sealed segments (any order) into the batches that are due now, per table in
// sequence order (spec "Commit-accumulation batching"): a batch closes when its segments reach
// targetBytes, and the remainder commits once its oldest segment is maxAge old. targetBytes 0
// commits every segment on its own. flush commits every remainder regardless of age (shutdown
// drains, `--once`). Pure: time is an argument.
func planBatches(segs []localwal.SegmentInfo, now time.Time, targetBytes int64, maxAge time.Duration, flush bool) []batch {
	byTable := map[string][]localwal.SegmentInfo{}
	for _, s := range segs {
		byTable[s.Table] = append(byTable[s.Table], s)
	}
	tables := make([]string, 0, len(byTable))
	for t := range byTable {
		tables = append(tables, t)
	}
	sort.Strings(tables)

	var out []batch
	for _, t := range tables {
		ss := byTable[t]
		sort.Slice(ss, func(i, j int) bool {
			if ss[i].Incarnation != ss[j].Incarnation {
				return ss[i].Incarnation < ss[j].Incarnation
			}
			return ss[i].Seq < ss[j].Seq
		})
		cur := batch{table: t}
		for _, s := range ss {
			cur.segs = append(cur.segs, s)
			cur.bytes += s.Size
			if targetBytes == 0 || cur.bytes >= targetBytes {
				out = append(out, cur)
				cur = batch{table: t}
			}
		}
		if len(cur.segs) > 0 && (flush || now.Sub(cur.segs[0].ModTime) >= maxAge) {
			out = append(out, cur)
		}
	}
	return out
}
