package sim

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

// TestLiveGroupedSorted: the planner's input is every live file once, partition by partition,
// each partition in time order, kept up to date across ingest and rewrites without sorting
// every partition again (the legacy comparison's cost, docs/benchmarks.md).
func TestLiveGroupedSorted(t *testing.T) {
	s := Base()
	s.Duration = 40 * time.Minute
	s.Config.Leveled = false
	w := run(s)
	if w.res.BinsByKind["legacy"] == 0 {
		t.Fatalf("no legacy rewrites: %v", w.res.BinsByKind)
	}
	got := w.live()
	if len(got) != len(w.files) {
		t.Fatalf("live: %d files, %d live", len(got), len(w.files))
	}
	seen := map[string]bool{}
	for i, f := range got {
		if _, ok := w.files[f.Path]; !ok || seen[f.Path] {
			t.Fatalf("live: %s not live or twice", f.Path)
		}
		seen[f.Path] = true
		if i == 0 {
			continue
		}
		p := got[i-1]
		if c := cmp.Compare(p.Partition, f.Partition); c > 0 || c == 0 && slices.Compare(
			[]int64{p.MinTime, p.MaxTime}, []int64{f.MinTime, f.MaxTime}) > 0 {
			t.Fatalf("live: %v before %v", p, f)
		}
	}
}
