// Package testlake is the tests' lake on the embedded default: a SQLite catalog and a local
// warehouse in a temp dir, filled the way production fills it, by the real drain from sealed WAL
// segments of walgen rows. Only tests import it.
package testlake

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/drain"
	drainmetrics "github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// Env is one lake with a drain over one WAL dir.
type Env struct {
	T     testing.TB
	Dir   string
	WAL   string
	Cfg   lake.Config
	Lake  *lake.Lake
	Drain *drain.Drain
	Log   *zap.Logger
}

// New opens a fresh lake whose drain commits every segment on its own (one file per segment and
// day), so tests decide the file layout by the segments they write.
func New(t testing.TB) *Env { return NewWith(t, nil) }

// NewWith is New with the lake configuration changed by mutate (an S3 warehouse, say).
func NewWith(t testing.TB, mutate func(*lake.Config)) *Env {
	t.Helper()
	dir := t.TempDir()
	e := &Env{T: t, Dir: dir, WAL: filepath.Join(dir, "wal"),
		Cfg: lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"}}
	if mutate != nil {
		mutate(&e.Cfg)
	}
	l, err := lake.Open(context.Background(), e.Cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	e.Lake = l
	e.Log = zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	reg := prometheus.NewRegistry()
	e.Drain = &drain.Drain{Lake: l, Metrics: drainmetrics.New(reg, instrument.NewMergeMetrics(reg)), Log: e.Log, Now: time.Now,
		Mem: memory.DefaultAllocator, Retry: lake.Retry{Attempts: 3, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond},
		Cfg: drain.Config{WALDir: e.WAL, NodeName: "test", CommitBatchMaxAge: 10 * time.Second, TargetFileBytes: 256 << 20,
			Metadata: func(t *table.Table) merge.MetadataOptions { return lake.WriteMetadata(t, false, 1<<20) }}}
	return e
}

// Seal writes recs into the WAL, one sealed segment each, to table.
func (e *Env) Seal(table string, recs ...arrow.RecordBatch) {
	e.T.Helper()
	w, err := walwriter.New(e.WAL, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
	if err != nil {
		e.T.Fatal(err)
	}
	for _, rec := range recs {
		if err := w.Append(table, rec); err != nil {
			e.T.Fatal(err)
		}
		if err := w.SealDue(time.Now().Add(2 * time.Hour)); err != nil {
			e.T.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		e.T.Fatal(err)
	}
}

// SealRows seals `segments` segments of `rows` walgen rows each (5% late by up to a minute),
// segment i starting i*rows ms after start, and returns the fingerprint of what was sealed; the
// segments wait in the WAL (DrainAll drains them).
func (e *Env) SealRows(table string, segments, rows int, seed uint64, start time.Time) rowsum.Sum {
	e.T.Helper()
	g := walgen.New(walgen.Options{Seed: seed, LateFraction: 0.05, MaxLateness: time.Minute})
	var sum rowsum.Sum
	for i := 0; i < segments; i++ {
		rec := g.Batch(memory.DefaultAllocator, start.Add(time.Duration(i*rows)*time.Millisecond), rows, time.Millisecond)
		if err := sum.Add(rec, walgen.Columns...); err != nil {
			e.T.Fatal(err)
		}
		e.Seal(table, rec)
		rec.Release()
	}
	return sum
}

// DrainAll drains every sealed segment.
func (e *Env) DrainAll() {
	e.T.Helper()
	if _, err := e.Drain.Cycle(context.Background(), true); err != nil {
		e.T.Fatal(err)
	}
}

// Table loads a table.
func (e *Env) Table(name string) *table.Table {
	e.T.Helper()
	t, err := e.Lake.LoadTable(context.Background(), name)
	if err != nil {
		e.T.Fatal(err)
	}
	return t
}

// Sum reads the whole table through iceberg-go's scanner (a reader we did not write) and
// fingerprints it over the events columns.
func (e *Env) Sum(name string) rowsum.Sum {
	e.T.Helper()
	s, err := rowsum.Table(context.Background(), e.Table(name), walgen.Columns...)
	if err != nil {
		e.T.Fatal(err)
	}
	return s
}

// LocalPath is a local warehouse URI as a path.
func LocalPath(p string) string { return strings.TrimPrefix(p, "file://") }
