package maintain

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

var eventColumns = walgen.Columns

// RowSum is the row fingerprint the tests compare tables with.
type RowSum = rowsum.Sum

// testConfig is the maintainer's configuration plus the process options the tests change
// around it.
type testConfig struct {
	Config
	// CommitBatchTargetBytes is kept for the tests' own record: the test lake's drain commits
	// every segment on its own whatever it says.
	CommitBatchTargetBytes int64
	// ReclusterInterval is the planner's (SIGLAKE_RECLUSTER_INTERVAL_SECS; 0 = no rewrites).
	ReclusterInterval time.Duration
}

func metadata(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }

// defaultConfig is the maintenance part of the process defaults (docs/configuration.md).
func defaultConfig() testConfig {
	return testConfig{Config: Config{SnapshotExpireInterval: 60 * time.Second, SnapshotRetain: 100, DeleteTasks: true,
		Sweep:          sweep.Config{MaxFiles: 8, MaxBytes: 1024 << 20, TargetFileBytes: 256 << 20, Sweeps: true, Metadata: metadata},
		MergeChunkRows: merge.DefaultChunkRows, MaxFanIn: merge.DefaultMaxFanIn, Metadata: metadata},
		ReclusterInterval: 10 * time.Second}
}

// env is a test lake filled by the real drain, with the maintenance configuration under test.
type env struct {
	t     *testing.T
	te    *testlake.Env
	cfg   testConfig
	lake  *lake.Lake
	drain *drain.Drain
}

func newEnv(t *testing.T, mutate func(*testConfig)) *env {
	t.Helper()
	te := testlake.New(t)
	cfg := defaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	cfg.Sweep.Sweeps = cfg.DeleteTasks
	return &env{t: t, te: te, cfg: cfg, lake: te.Lake, drain: te.Drain}
}

// writeSegments seals `segments` segments of `rows` generated rows each into the WAL and returns
// the fingerprint of what was sealed.
func (e *env) writeSegments(table string, segments, rows int, seed uint64, start time.Time) RowSum {
	e.t.Helper()
	return e.te.SealRows(table, segments, rows, seed, start)
}

func (e *env) tableSum(name string) RowSum {
	e.t.Helper()
	return e.te.Sum(name)
}

// recorder is the tests' Publisher: it keeps what the maintainer and its sweeper published.
type recorder struct {
	mu      sync.Mutex
	errors  []error
	owned   []string
	deletes map[string]*sweep.State
	retent  map[string]*retention.State
}

func (r *recorder) Maintenance(string, *State) {}
func (r *recorder) Owned(tables []string)      { r.mu.Lock(); r.owned = tables; r.mu.Unlock() }
func (r *recorder) Error(_ time.Time, _, _ string, err error) {
	r.mu.Lock()
	r.errors = append(r.errors, err)
	r.mu.Unlock()
}
func (r *recorder) Retention(table string, st *retention.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retent == nil {
		r.retent = map[string]*retention.State{}
	}
	r.retent[table] = st
}
func (r *recorder) Deletes(table string, st *sweep.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.deletes == nil {
		r.deletes = map[string]*sweep.State{}
	}
	r.deletes[table] = st
}

// registries finds the registry of a maintainer's metrics.
var registries sync.Map // *Metrics -> *prometheus.Registry

func newTestMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, rewrite.NewMetrics(reg), instrument.NewMergeMetrics(reg), puffinidx.NewMetrics(reg), sweep.NewMetrics(reg), retention.NewMetrics(reg))
	m.Fold = fold.NewMetrics(reg)
	registries.Store(m, reg)
	return m
}

func counterValue(t *testing.T, m *Metrics, name, outcome string) float64 {
	t.Helper()
	reg, _ := registries.Load(m)
	return promtest.Counter(t, reg.(*prometheus.Registry), name, outcome)
}

// published is the recorder of m.
func published(m *Maintainer) *recorder { return m.Publish.(*recorder) }

// deleteSweep is `siglake delete-sweep --apply` over tables with e's configuration.
func deleteSweep(t *testing.T, e *env, tables []string) []sweep.Report {
	t.Helper()
	m := &Maintainer{Cfg: e.cfg.Config, Lake: e.lake, Metrics: newTestMetrics(), Log: e.te.Log, Now: time.Now}
	reps, err := m.Deletes().SweepTables(context.Background(), tables, true)
	if err != nil {
		t.Fatal(err)
	}
	return reps
}

// localPath is a local warehouse URI as a path.
func localPath(p string) string { return testlake.LocalPath(p) }
