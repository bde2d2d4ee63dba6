package drain

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/localwal/walwriter"
	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// loadCounter is a real catalog that counts its table loads.
type loadCounter struct {
	catalog.Catalog
	n atomic.Int32
}

func (c *loadCounter) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	c.n.Add(1)
	return c.Catalog.LoadTable(ctx, id)
}

// cacheEnv is a drain with a group committer whose committer commits through a second Lake on the
// same catalog (as the table's owner, another process, does), so that the drain's own catalog
// loads are counted apart, on a clock the test moves.
type cacheEnv struct {
	*env
	g     *groupCommitter
	other *lake.Lake
	loads *loadCounter
	clock atomic.Int64
}

func newCacheEnv(t *testing.T) *cacheEnv {
	e := newEnv(t, func(c *testConfig) { c.CommitBatchTargetBytes = 0 }) // one segment per batch
	other, err := openLakeOf(t, e)
	if err != nil {
		t.Fatal(err)
	}
	ce := &cacheEnv{env: e, g: newGroupCommitter(t, other), other: other, loads: &loadCounter{}}
	e.drain.Group = ce.g
	e.lake.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { ce.loads.Catalog = c; return ce.loads })
	ce.clock.Store(time.Now().UnixNano())
	e.drain.Now = func() time.Time { return time.Unix(0, ce.clock.Load()) }
	return ce
}

func (ce *cacheEnv) advance(d time.Duration) { ce.clock.Add(int64(d)) }

// cycleLoads runs one flush cycle and returns how many times the drain loaded a table.
func (ce *cacheEnv) cycleLoads(wantErr bool) int32 {
	ce.t.Helper()
	ce.loads.n.Store(0)
	res, err := ce.drain.Cycle(context.Background(), true)
	if (err != nil) != wantErr {
		ce.t.Fatalf("cycle %+v: error %v, want an error: %v", res, err, wantErr)
	}
	return ce.loads.n.Load()
}

// TestGroupTableCache: with a group committer the drain loads a table once per tableCacheTTL,
// not once per batch, and loads it again after a failed commit and once the TTL has passed.
func TestGroupTableCache(t *testing.T) {
	ce := newCacheEnv(t)
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	want := ce.writeSegments("events", 1, 500, 11, start)
	if n := ce.cycleLoads(false); n == 0 {
		t.Fatal("the first batch did not load the table")
	}
	want.Merge(ce.writeSegments("events", 4, 500, 12, start.Add(time.Hour)))
	if n := ce.cycleLoads(false); n != 0 {
		t.Fatalf("4 batches within the TTL loaded the table %d times, want 0 (the cache)", n)
	}
	if len(ce.g.sent) != 5 {
		t.Fatalf("%d requests, want 5 batches", len(ce.g.sent))
	}

	// A failed commit forgets the table: the retry loads it.
	want.Merge(ce.writeSegments("events", 1, 500, 13, start.Add(2*time.Hour)))
	ce.g.set(func(g *groupCommitter) { g.failHandedOff = 1 })
	if n := ce.cycleLoads(true); n != 0 {
		t.Fatalf("the failing batch loaded the table %d times, want 0 (still cached)", n)
	}
	if n := ce.cycleLoads(false); n != 1 {
		t.Fatalf("the batch after a failed commit loaded the table %d times, want 1", n)
	}

	want.Merge(ce.writeSegments("events", 2, 500, 14, start.Add(3*time.Hour)))
	ce.advance(tableCacheTTL)
	if n := ce.cycleLoads(false); n != 1 {
		t.Fatalf("2 batches past the TTL loaded the table %d times, want 1", n)
	}
	if got := ce.tableSum("events"); got != want {
		t.Fatalf("table %+v, want %+v", got, want)
	}
}

// TestGroupTableCacheSeesOtherWritersColumns: another writer adds a column while the drain holds
// the table in its cache. A segment with that column loads the table again: its values land in
// the column (not dropped against the cached schema), and a segment that has the column with
// another type is quarantined against the current schema.
func TestGroupTableCacheSeesOtherWritersColumns(t *testing.T) {
	for _, c := range []struct {
		name       string
		theirs     arrow.DataType // the other writer's type of tenant
		quarantine bool
	}{{"same-type", arrow.BinaryTypes.String, false}, {"other-type", arrow.PrimitiveTypes.Int64, true}} {
		t.Run(c.name, func(t *testing.T) {
			ce := newCacheEnv(t)
			run := ce.writeEach(2, 1000, 21, time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC))
			if n := ce.cycleLoads(false); n == 0 {
				t.Fatal("the first batch did not load the table")
			}
			tbl, err := ce.other.LoadTable(context.Background(), "events")
			if err != nil {
				t.Fatal(err)
			}
			sc, err := lake.ArrowSchema(tbl)
			if err != nil {
				t.Fatal(err)
			}
			wider := arrow.NewSchema(append(sc.Fields(), arrow.Field{Name: "tenant", Type: c.theirs, Nullable: true}), nil)
			if _, err := ce.other.EnsureTable(context.Background(), "events", rows.TableSchema(wider, lake.TimestampColumn)); err != nil {
				t.Fatal(err)
			}

			wide := writeTenantSegment(t, ce.env, 22, time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
			defer wide.Release()
			if n := ce.cycleLoads(false); n != 1 {
				t.Fatalf("the segment with the new column loaded the table %d times, want 1", n)
			}
			if q := quarantinedByReason(t, ce.drain.Metrics, metrics.ReasonIncompatibleSchema); (q == 1) != c.quarantine {
				t.Fatalf("quarantined as incompatible: %v, want quarantined: %v", q, c.quarantine)
			}
			columns := append(append([]string(nil), eventColumns...), "tenant")
			var want rowsum.Sum
			for _, r := range run.recs {
				withTenant := withNullColumn(r, "tenant", c.theirs)
				if err := want.Add(withTenant, columns...); err != nil {
					t.Fatal(err)
				}
				withTenant.Release()
			}
			if !c.quarantine {
				if err := want.Add(wide, columns...); err != nil {
					t.Fatal(err)
				}
			}
			if got := tableRowSum(t, ce.lake, "events", columns...); got != want {
				t.Fatalf("table holds %+v over %v, want %+v", got, columns, want)
			}
		})
	}
}

// TestGroupTableCacheSeesColumnMadeOptional: another writer makes a required column optional
// while the drain holds the table in its cache. A segment with nulls in that column does not fit
// the cached schema; it is checked again on the current one and committed, not quarantined.
func TestGroupTableCacheSeesColumnMadeOptional(t *testing.T) {
	ce := newCacheEnv(t)
	code := func(nullable bool, seed uint64, start time.Time) arrow.RecordBatch {
		rec := walgen.New(walgen.Options{Seed: seed}).Batch(memory.DefaultAllocator, start, 1000, time.Millisecond)
		defer rec.Release()
		b := array.NewInt64Builder(memory.DefaultAllocator)
		for r := 0; r < 1000; r++ {
			if nullable && r%4 == 0 {
				b.AppendNull()
			} else {
				b.Append(int64(r))
			}
		}
		col := b.NewArray()
		defer col.Release()
		return withColumn(rec, arrow.Field{Name: "code", Type: arrow.PrimitiveTypes.Int64, Nullable: nullable}, col)
	}
	seal := func(rec arrow.RecordBatch) {
		w, err := walwriter.New(ce.cfg.WALDir, walwriter.Options{Stream: "pod-0", RollBytes: 1 << 40, RollAge: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append("events", rec); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	columns := append(append([]string(nil), eventColumns...), "code")
	var want rowsum.Sum
	for i, nullable := range []bool{false, true} {
		if i == 1 { // the other writer relaxes code, the cache still says required
			tbl, err := ce.other.LoadTable(context.Background(), "events")
			if err != nil {
				t.Fatal(err)
			}
			if f, ok := tbl.Schema().FindFieldByName("code"); !ok || !f.Required {
				t.Fatalf("table schema %v: want a required column code", tbl.Schema())
			}
			txn := tbl.NewTransaction()
			if err := txn.UpdateSchema(true, false).UpdateColumn([]string{"code"},
				table.ColumnUpdate{Required: iceberg.Optional[bool]{Valid: true, Val: false}}).Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		rec := code(nullable, 41+uint64(i), time.Date(2026, 11, 28, 8+i, 0, 0, 0, time.UTC))
		if err := want.Add(rec, columns...); err != nil {
			t.Fatal(err)
		}
		seal(rec)
		rec.Release()
		ce.cycleLoads(false)
	}
	if q := counterValue(t, ce.drain.Metrics, "siglake_wal_quarantined_segments_total", ""); q != 0 {
		t.Fatalf("%v segments quarantined against the cached schema", q)
	}
	if got := tableRowSum(t, ce.lake, "events", columns...); got != want {
		t.Fatalf("table holds %+v over %v, want %+v", got, columns, want)
	}
}
