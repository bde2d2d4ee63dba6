package commit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/plan"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// TestGroupCommitWithMaintenance: the owner's maintainer rewrites the table's small files on the
// committer's Lake while the pods keep handing batches to the committer: appends and replaces
// serialise in the owner, and every row is in once.
func TestGroupCommitWithMaintenance(t *testing.T) {
	cl := newCluster(t)
	_, _, cobs, owner := cl.committer("owner", nil)
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		cl.seal(cl.pod("owner", nil), 6, 300, start.Add(time.Duration(i)*time.Second))
	}
	cl.drainAll()
	for i, p := range cl.pods {
		cl.seal(p, 4, 300, start.Add(time.Duration(10+i)*time.Second))
	}
	m := maintainer(t, owner)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		cl.drainAll()
	}()
	rewrites := 0
	for i := 0; i < 3; i++ {
		rep, err := m.Cycle(context.Background())
		if err != nil {
			t.Error(err)
		}
		rewrites += rep.Rewrites
	}
	wg.Wait()
	t.Logf("%d rewrites, %d snapshots", rewrites, cl.snapshots())
	if rewrites == 0 {
		t.Fatal("no rewrite committed while the pods handed batches off")
	}
	cl.checkOnce()
	for _, p := range cl.pods {
		if n := p.obs.fallbacks(); n != 0 {
			t.Fatalf("%s fell back %d times", p.name, n)
		}
	}
	if n := cobs.count("committed"); n != 3*10 {
		t.Fatalf("the committer committed %d requests, want %d", n, 3*10)
	}
}

// maintainer is the owner's maintenance on its Lake l, rewriting small files at once.
func maintainer(t *testing.T, l *lake.Lake) *maintain.Maintainer {
	t.Helper()
	md := func(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }
	pc := plan.DefaultConfig()
	pc.ReclusterInterval = 10 * time.Second
	if err := pc.Validate(); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	metrics := maintain.NewMetrics(reg, rewrite.NewMetrics(reg), instrument.NewMergeMetrics(reg), puffinidx.NewMetrics(reg), sweep.NewMetrics(reg), retention.NewMetrics(reg))
	metrics.Fold = fold.NewMetrics(reg)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return &maintain.Maintainer{Cfg: maintain.Config{
		Sweep:          sweep.Config{MaxFiles: 8, MaxBytes: 1 << 30, TargetFileBytes: 256 << 20, Metadata: md},
		MergeChunkRows: merge.DefaultChunkRows, MaxFanIn: merge.DefaultMaxFanIn, Metadata: md},
		Plan: pc, Lake: l, Metrics: metrics, Log: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		Now: func() time.Time { return now }}
}
