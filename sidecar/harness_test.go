package sidecar

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/walgen"
)

var eventColumns = EventColumns

// env is a drain on the embedded catalog (SQLite file + local warehouse) in a temp dir.
type env struct {
	t     *testing.T
	dir   string
	cfg   Config
	lake  *lake.Lake
	drain *drain.Drain
}

func newEnv(t *testing.T, mutate func(*Config)) *env {
	t.Helper()
	dir := t.TempDir()
	cfg, err := Load(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.WALDir = filepath.Join(dir, "wal")
	cfg.Catalog = "sqlite:" + filepath.Join(dir, "catalog.db")
	cfg.Warehouse = filepath.Join(dir, "warehouse")
	if mutate != nil {
		mutate(&cfg)
	}
	ctx := context.Background()
	l, err := lake.Open(ctx, LakeConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	d := &drain.Drain{Cfg: DrainConfig(cfg), Lake: l, Metrics: NewMetrics().Drain, Publish: NewStatus("test", cfg.Role, "test", time.Now()),
		Log: log, Now: time.Now, Mem: memory.DefaultAllocator, Retry: lake.Retry{Attempts: 3, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond}}
	return &env{t: t, dir: dir, cfg: cfg, lake: l, drain: d}
}

// writeSegments seals `segments` segments of `rows` generated rows each into the WAL and returns
// the fingerprint of what was sealed.
func (e *env) writeSegments(table string, segments, rows int, seed uint64, start time.Time) RowSum {
	e.t.Helper()
	w, err := localwal.NewWriter(e.cfg.WALDir, localwal.WriterOptions{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		e.t.Fatal(err)
	}
	g := walgen.New(walgen.Options{Seed: seed, LateFraction: 0.05, MaxLateness: time.Minute})
	var sum RowSum
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		sum.Add(rec, eventColumns...)
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

func tableRowSum(t *testing.T, l *lake.Lake, name string) RowSum {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := TableRowSum(context.Background(), tbl, eventColumns)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func counterValue(t *testing.T, m *Metrics, name, outcome string) float64 {
	t.Helper()
	fams, err := m.Reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, mm := range f.GetMetric() {
			if outcome == "" || hasLabel(mm, "outcome", outcome) {
				total += mm.GetCounter().GetValue()
			}
		}
	}
	return total
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// localPath is a local warehouse URI as a path.
func localPath(p string) string { return strings.TrimPrefix(p, "file://") }
