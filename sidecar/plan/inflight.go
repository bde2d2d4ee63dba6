package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/siglake/siglake/sidecar/plan/level"
)

// inFlight is what a pass knows of the bins still running (Input.InFlight): their inputs, which
// it plans without, and the files they hold back. A bin whose time range reaches an in-flight
// file of its partition and stream would write outputs that overlap that bin's outputs, which
// land after this pass: planned while bins run, depth bins took part of a cluster whose other
// files were in a running bin and settled deeper with more workers (docs/benchmarks.md, "Scale
// out maintenance (simulated)"). Such work waits for the running bin instead. The zero value has
// nothing in flight and changes nothing.
type inFlight struct {
	// n counts the input files in flight.
	n int
	// spans are the in-flight files' time ranges per partition and stream, merged, in time order.
	spans map[streamKey][]span
	// held are, per partition, the plannable files whose range overlaps an in-flight file of
	// their stream: the pass treats them as taken, so no bin holds one and a level bin leaves
	// their cluster whole.
	held map[string]map[string]bool
	// apart: the late stream is planned apart, so a late bin in flight holds back late files only.
	apart bool
}

type streamKey struct {
	part string
	late bool
}

type span struct{ lo, hi int64 }

// splitInFlight returns files without the in-flight ones (paths) and what they hold back. Paths
// naming no file of files (a bin that committed meanwhile) are ignored.
func splitInFlight(cfg Config, files []level.File, paths map[string]bool) ([]level.File, inFlight) {
	var fl inFlight
	if len(paths) == 0 {
		return files, fl
	}
	fl.apart = cfg.Leveled && cfg.LateStream
	fl.spans = map[streamKey][]span{}
	rest := make([]level.File, 0, len(files))
	for _, f := range files {
		if !paths[f.Path] {
			rest = append(rest, f)
			continue
		}
		fl.n++
		k := fl.key(f)
		fl.spans[k] = append(fl.spans[k], span{f.MinTime, f.MaxTime})
	}
	if fl.n == 0 {
		return files, inFlight{}
	}
	for k, ss := range fl.spans {
		fl.spans[k] = mergeSpans(ss)
	}
	fl.held = map[string]map[string]bool{}
	for _, f := range rest {
		if fl.reaches(f.Partition, f.Late, f.MinTime, f.MaxTime) {
			if fl.held[f.Partition] == nil {
				fl.held[f.Partition] = map[string]bool{}
			}
			fl.held[f.Partition][f.Path] = true
		}
	}
	return rest, fl
}

func (fl inFlight) key(f level.File) streamKey {
	return streamKey{f.Partition, fl.apart && f.Late}
}

// reaches reports whether [lo, hi] of a partition's stream overlaps an in-flight file's range.
func (fl inFlight) reaches(part string, late bool, lo, hi int64) bool {
	ss := fl.spans[streamKey{part, fl.apart && late}]
	// The first span ending at or after lo is the only one that can overlap.
	i, _ := slices.BinarySearchFunc(ss, lo, func(s span, t int64) int { return cmp.Compare(s.hi, t) })
	return i < len(ss) && ss[i].lo <= hi
}

// blocks reports whether bin's time range reaches an in-flight file of its stream: its outputs,
// cut anywhere in that range, could overlap the running bin's.
func (fl inFlight) blocks(b level.Bin) bool {
	if fl.n == 0 || len(b.Files) == 0 {
		return false
	}
	lo, hi := b.Files[0].MinTime, b.Files[0].MaxTime
	for _, f := range b.Files[1:] {
		lo, hi = min(lo, f.MinTime), max(hi, f.MaxTime)
	}
	return fl.reaches(b.Partition, b.Late(), lo, hi)
}

// takenIn returns the held files of each partition as the serve loop's per-partition taken
// sets (copies: the loop adds the files its bins take).
func (fl inFlight) takenIn() map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(fl.held))
	for part, h := range fl.held {
		t := make(map[string]bool, len(h))
		for p := range h {
			t[p] = true
		}
		out[part] = t
	}
	return out
}

// heldAll is every file the in-flight bins keep out of this pass, theirs and the ones they hold.
func (fl inFlight) heldAll(paths map[string]bool) map[string]bool {
	if fl.n == 0 {
		return nil
	}
	out := make(map[string]bool, len(paths))
	for p := range paths {
		out[p] = true
	}
	for _, h := range fl.held {
		for p := range h {
			out[p] = true
		}
	}
	return out
}

// waitNote says, after "no bin of 2+ files", that files of part wait for bins in flight; "" when
// none does.
func (fl inFlight) waitNote(part string) string {
	if len(fl.held[part]) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d files wait for bins in flight)", len(fl.held[part]))
}

// note describes the in-flight files for Pass.Skipped; "" when none.
func (fl inFlight) note() string {
	if fl.n == 0 {
		return ""
	}
	held := 0
	for _, h := range fl.held {
		held += len(h)
	}
	return fmt.Sprintf("in flight: %d input files of running bins left out; %d files overlapping them wait for those bins", fl.n, held)
}

func mergeSpans(ss []span) []span {
	slices.SortFunc(ss, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	out := ss[:0]
	for _, s := range ss {
		if n := len(out); n > 0 && s.lo <= out[n-1].hi {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}
