package drain

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// eventColumns are the columns of walgen's events table, in schema order.
var eventColumns = walgen.Columns

// RowSum is the row fingerprint the tests compare tables with.
type RowSum = rowsum.Sum

// testConfig is a drain's configuration plus what the tests set around it.
type testConfig struct {
	Config
	Lake            lake.Config
	CatalogClaim    bool
	CatalogClaimTTL time.Duration
}

// env is a drain on the embedded catalog (SQLite file + local warehouse) in a temp dir, with the
// process defaults.
type env struct {
	t     *testing.T
	dir   string
	cfg   testConfig
	lake  *lake.Lake
	drain *Drain
}

// testMaxSegment is the tests' segment size limit, the process's default.
const testMaxSegment = 64 << 20

// defaultConfig is the drain part of the process defaults (docs/configuration.md).
func defaultConfig(dir string) testConfig {
	return testConfig{
		Config: Config{WALDir: filepath.Join(dir, "wal"), NodeName: "test", CommitBatchTargetBytes: 32 << 20,
			CommitBatchMaxAge: 10 * time.Second, MaxSegmentBytes: testMaxSegment, TargetFileBytes: 256 << 20,
			Metadata: func(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }},
		Lake:            lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"},
		CatalogClaimTTL: 30 * time.Second,
	}
}

func newEnv(t *testing.T, mutate func(*testConfig)) *env {
	t.Helper()
	dir := t.TempDir()
	cfg := defaultConfig(dir)
	if mutate != nil {
		mutate(&cfg)
	}
	ctx := context.Background()
	l, err := lake.Open(ctx, cfg.Lake)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	d := &Drain{Cfg: cfg.Config, Lake: l, Metrics: newMetrics(), Log: log, Now: time.Now, Mem: memory.DefaultAllocator,
		Retry: lake.Retry{Attempts: 3, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond}}
	return &env{t: t, dir: dir, cfg: cfg, lake: l, drain: d}
}

// newMetrics registers a drain's metrics on a registry of their own.
func newMetrics() *metrics.Metrics {
	reg := prometheus.NewRegistry()
	m := metrics.New(reg, instrument.NewMergeMetrics(reg))
	registries.Store(m, reg)
	return m
}

// registries finds the registry of the metrics newMetrics made (tests run in parallel).
var registries sync.Map // *metrics.Metrics -> *prometheus.Registry

func registryOf(m *metrics.Metrics) *prometheus.Registry {
	r, _ := registries.Load(m)
	return r.(*prometheus.Registry)
}

// writeSegments seals `segments` segments of `rows` generated rows each into the WAL and returns
// the fingerprint of what was sealed.
func (e *env) writeSegments(table string, segments, rows int, seed uint64, start time.Time) RowSum {
	e.t.Helper()
	return e.writeSegmentsAs(walwriter.CompressionNone, table, segments, rows, seed, start)
}

// writeSegmentsAs is writeSegments with the given body compression.
func (e *env) writeSegmentsAs(comp walwriter.Compression, table string, segments, rows int, seed uint64, start time.Time) RowSum {
	e.t.Helper()
	w, err := walwriter.New(e.cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour, Compression: comp})
	if err != nil {
		e.t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: seed, LateFraction: 0.05, MaxLateness: time.Minute})
	var sum RowSum
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		if err := sum.Add(rec, eventColumns...); err != nil {
			e.t.Fatal(err)
		}
		if err := w.Append(table, rec); err != nil {
			e.t.Fatal(err)
		}
		rec.Release()
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.t.Fatal(err)
	}
	return sum
}

// tableSum reads the whole table through iceberg-go's scanner (a reader we did not write).
func (e *env) tableSum(name string) RowSum {
	e.t.Helper()
	return tableRowSum(e.t, e.lake, name)
}

// tableRowSum is the fingerprint of table name over columns (none: the event columns).
func tableRowSum(t *testing.T, l *lake.Lake, name string, columns ...string) RowSum {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	if len(columns) == 0 {
		columns = eventColumns
	}
	sum, err := rowsum.Table(context.Background(), tbl, columns...)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func counterValue(t *testing.T, m *metrics.Metrics, name, outcome string) float64 {
	t.Helper()
	return promtest.Counter(t, registryOf(m), name, outcome)
}

func hasLabel(m *dto.Metric, name, value string) bool { return promtest.HasLabel(m, name, value) }

// localPath is a local warehouse URI as a path.
func localPath(p string) string { return strings.TrimPrefix(p, "file://") }
