package maintain

import (
	"slices"
	"testing"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/plan/level"
)

// TestSampleGaugesPublishesPartitions: the gauges' sample publishes each partition's files (what
// the status pages draw), computed once with the depth it reports, and keeps at most maxPageFiles
// files of a partition while its counts stay whole.
func TestSampleGaugesPublishesPartitions(t *testing.T) {
	m := &Maintainer{Plan: plan.DefaultConfig(), Metrics: newTestMetrics(), Publish: &recorder{}, Now: time.Now}
	var files []level.File
	for i := range maxPageFiles + 5 { // one big partition of disjoint files
		files = append(files, level.File{Path: "big", Partition: "2026-12-01", SizeBytes: 1, MinTime: int64(i * 10), MaxTime: int64(i*10 + 5), Rows: 1})
	}
	for i := range 3 { // three files over one range: depth 3
		files = append(files, level.File{Path: "deep", Partition: "2026-12-02", SizeBytes: 1, MinTime: 0, MaxTime: 100, Generation: i})
	}
	m.parts()
	m.obs.sampleGauges("events", files, time.Now())
	st := m.State("events")
	if len(st.Partitions) != 2 {
		t.Fatalf("%d partitions published, want 2", len(st.Partitions))
	}
	big, deep := st.Partitions[0], st.Partitions[1]
	if len(big.Files) != maxPageFiles || big.Omitted != 5 || big.FilesPerLevel["L0"] != maxPageFiles+5 || big.OverlapDepth != 1 {
		t.Errorf("big partition: %d files, %d omitted, per level %v, depth %d", len(big.Files), big.Omitted, big.FilesPerLevel, big.OverlapDepth)
	}
	if len(deep.Files) != 3 || deep.OverlapDepth != 3 || deep.MaxGeneration != 2 || st.OverlapDepth != 3 {
		t.Errorf("deep partition: %d files, depth %d, max generation %d; table depth %d", len(deep.Files), deep.OverlapDepth, deep.MaxGeneration, st.OverlapDepth)
	}
	// The table's bound: the newest partitions keep their files first.
	capped := capFiles(st.Partitions, 2, 3)
	if len(capped[1].Files) != 2 || len(capped[0].Files) != 1 || capped[0].Omitted != maxPageFiles+4 || len(st.Partitions[0].Files) != maxPageFiles {
		t.Errorf("capped to 2 per partition, 3 in all: %d and %d files (omitted %d); the input was cut too: %v",
			len(capped[0].Files), len(capped[1].Files), capped[0].Omitted, len(st.Partitions[0].Files) != maxPageFiles)
	}
}

// TestRecentRewritesOutliveTheirPass: the committed bins of earlier passes stay visible, newest
// first and bounded, after passes that rewrite nothing; failed bins are not among them.
func TestRecentRewritesOutliveTheirPass(t *testing.T) {
	m := &Maintainer{Plan: plan.DefaultConfig(), Metrics: newTestMetrics(), Publish: &recorder{}, Now: time.Now}
	m.parts()
	t0 := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	for i := range maxRecentRewrites + 2 {
		m.obs.publishPass("events", &PassReport{Time: t0.Add(time.Duration(i) * time.Minute), Decision: "run", Bins: []BinReport{
			{Kind: "level", Partition: "p", Files: i, Result: "committed"}, {Kind: "level", Files: 99, Result: "failed: boom"}}})
	}
	m.obs.publishPass("events", &PassReport{Time: t0.Add(time.Hour), Decision: "nothing_due"})
	st := m.State("events")
	if len(st.RecentRewrites) != maxRecentRewrites || st.RecentRewrites[0].Files != maxRecentRewrites+1 ||
		st.RecentRewrites[maxRecentRewrites-1].Files != 2 || st.LastPass.Decision != "nothing_due" {
		t.Fatalf("recent rewrites after a pass with nothing due: %+v", st.RecentRewrites)
	}
	// A published list may be being encoded: the next commit publishes a new one.
	before := slices.Clone(st.RecentRewrites)
	m.obs.publishPass("events", &PassReport{Time: t0.Add(2 * time.Hour), Bins: []BinReport{{Files: 42, Result: "committed"}}})
	if !slices.Equal(st.RecentRewrites, before) || m.State("events").RecentRewrites[0].Files != 42 {
		t.Fatal("a published list of recent rewrites was written, or the new rewrite is not first")
	}
}
