// Package batches is what the drain finds to drain and how it groups it: the sealed segments of
// its WAL dirs (a claims root's stream directories) and the batches they form, one catalog commit
// each (spec "Commit-accumulation batching"): per WAL dir and table, in sequence order, closed at
// a target size or once the oldest segment is old enough. The grouping is pure: time is an
// argument.
package batches

import (
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/siglake/siglake/localwal"
)

// Batch is the sealed segments of one table that go into one catalog commit, oldest first.
type Batch struct {
	Table string
	Dir   string // the WAL dir its segments are in (a stream subdirectory with claims)
	Segs  []localwal.SegmentInfo
	Bytes int64
}

// Plan groups sealed segments (any order) into the batches that are due now, per table in
// sequence order (spec "Commit-accumulation batching"): a batch closes when its segments reach
// targetBytes, and the remainder commits once its oldest segment is maxAge old. targetBytes 0
// commits every segment on its own. flush commits every remainder regardless of age (shutdown
// drains, `--once`). Pure: time is an argument.
func Plan(segs []localwal.SegmentInfo, now time.Time, targetBytes int64, maxAge time.Duration, flush bool) []Batch {
	return PlanAges(segs, now, targetBytes, func(string) time.Duration { return maxAge }, flush)
}

// PlanAges is Plan with each table's own batch age, maxAge(table): a table whose group committer
// is behind asks its pods to batch longer (fewer, bigger requests; the segments wait on the WAL
// disk, not in the committer's memory).
func PlanAges(segs []localwal.SegmentInfo, now time.Time, targetBytes int64, maxAge func(table string) time.Duration, flush bool) []Batch {
	byTable := map[string][]localwal.SegmentInfo{}
	for _, s := range segs {
		byTable[s.Table] = append(byTable[s.Table], s)
	}
	tables := make([]string, 0, len(byTable))
	for t := range byTable {
		tables = append(tables, t)
	}
	sort.Strings(tables)

	var out []Batch
	for _, t := range tables {
		ss := byTable[t]
		sort.Slice(ss, func(i, j int) bool {
			if ss[i].Incarnation != ss[j].Incarnation {
				return ss[i].Incarnation < ss[j].Incarnation
			}
			return ss[i].Seq < ss[j].Seq
		})
		cur := Batch{Table: t}
		for _, s := range ss {
			cur.Segs = append(cur.Segs, s)
			cur.Bytes += s.Size
			if targetBytes == 0 || cur.Bytes >= targetBytes {
				out = append(out, cur)
				cur = Batch{Table: t}
			}
		}
		if len(cur.Segs) > 0 && (flush || now.Sub(cur.Segs[0].ModTime) >= maxAge(t)) {
			out = append(out, cur)
		}
	}
	return out
}

// Due are the batches of segs due now (dirOf maps a segment's path to its dir), in the order of
// dirs, each of one WAL dir: batches never mix WAL dirs, since each dir is one stream and a batch
// commits one stream's mark. maxAge gives each table's batch age (PlanAges).
func Due(dirs []string, segs []localwal.SegmentInfo, dirOf map[string]string, now time.Time, targetBytes int64, maxAge func(table string) time.Duration, flush bool) []Batch {
	byDir := map[string][]localwal.SegmentInfo{}
	for _, s := range segs {
		byDir[dirOf[s.Path]] = append(byDir[dirOf[s.Path]], s)
	}
	var batches []Batch
	for _, dir := range dirs {
		for _, b := range PlanAges(byDir[dir], now, targetBytes, maxAge, flush) {
			b.Dir = dir
			batches = append(batches, b)
		}
	}
	return batches
}

// StreamDirs lists the stream subdirectories of a WAL root (claims on): every directory except
// quarantine and hidden ones. loose counts sealed segments lying in the root itself.
func StreamDirs(root string) (streams []string, loose int, err error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, 0, fmt.Errorf("list WAL root %s (--wal-dir / SIGLAKE_WAL_DIR): %w", root, err)
	}
	for _, e := range ents {
		// A stream directory is named by its stream id (lost+found on an ext4 volume root is not).
		if e.IsDir() && e.Name() != localwal.QuarantineDir && localwal.ValidStream(e.Name()) {
			streams = append(streams, e.Name())
		}
	}
	if segs, err := localwal.Scan(root); err == nil {
		loose = len(segs)
	}
	return streams, loose, nil
}

// ScanDirs lists the sealed segments of every dir; each batch remembers its dir. A dir that
// cannot be scanned is left out and its error returned with the others' segments, so one bad
// stream directory does not stop the streams beside it.
func ScanDirs(dirs []string) ([]localwal.SegmentInfo, map[string]string, []error) {
	all, dirOf, _, errs := ScanIgnored(dirs)
	return all, dirOf, errs
}

// ScanIgnored is ScanDirs plus the entries of the dirs that look like segments but are not listed.
func ScanIgnored(dirs []string) ([]localwal.SegmentInfo, map[string]string, []localwal.Ignored, []error) {
	var all []localwal.SegmentInfo
	var ignored []localwal.Ignored
	var errs []error
	dirOf := map[string]string{}
	for _, dir := range dirs {
		segs, ign, err := localwal.ScanIgnored(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, s := range segs {
			dirOf[s.Path] = dir
		}
		all = append(all, segs...)
		ignored = append(ignored, ign...)
	}
	return all, dirOf, ignored, errs
}
