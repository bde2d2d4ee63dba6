package sidecar

import (
	"github.com/siglake/siglake/sidecar/config"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/internal/testlake"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

var eventColumns = walgen.Columns

// RowSum is the row fingerprint the tests compare tables with.
type RowSum = rowsum.Sum

// env is a drain on the embedded catalog (SQLite file + local warehouse) in a temp dir, with the
// process options the maintenance under test reads.
type env struct {
	t     *testing.T
	dir   string
	cfg   config.Config
	lake  *lake.Lake
	drain *drain.Drain
	te    *testlake.Env
}

func newEnv(t *testing.T, mutate func(*config.Config)) *env {
	t.Helper()
	te := testlake.New(t)
	cfg, err := config.Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.WALDir, cfg.Catalog, cfg.Warehouse = te.WAL, te.Cfg.Catalog, te.Cfg.Warehouse
	if mutate != nil {
		mutate(&cfg)
	}
	te.Drain.Cfg = DrainConfig(cfg)
	te.Drain.Publish = NewStatus("test", cfg.Role, "test", time.Now())
	return &env{t: t, dir: te.Dir, cfg: cfg, lake: te.Lake, drain: te.Drain, te: te}
}

// writeSegments seals `segments` segments of `rows` generated rows each into the WAL and returns
// the fingerprint of what was sealed.
func (e *env) writeSegments(table string, segments, rows int, seed uint64, start time.Time) RowSum {
	e.t.Helper()
	return e.te.SealRows(table, segments, rows, seed, start)
}

// tableSum reads the whole table through iceberg-go's scanner (a reader we did not write).
func (e *env) tableSum(name string) RowSum {
	e.t.Helper()
	return e.te.Sum(name)
}

func counterValue(t *testing.T, m *Metrics, name, outcome string) float64 {
	t.Helper()
	return promtest.Counter(t, m.Reg, name, outcome)
}

func hasLabel(m *dto.Metric, name, value string) bool { return promtest.HasLabel(m, name, value) }

// localPath is a local warehouse URI as a path.
func localPath(p string) string { return testlake.LocalPath(p) }
