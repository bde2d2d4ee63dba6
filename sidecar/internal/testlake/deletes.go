package testlake

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

// DeleteBase is where DeleteTable's rows start.
var DeleteBase = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// Hour is DeleteBase + h hours, as a request's time bound.
func Hour(h int) string { return DeleteBase.Add(time.Duration(h) * time.Hour).Format(time.RFC3339) }

// DeleteTable drains `segments` one-file commits of 1,500 rows to events, segment i at
// DeleteBase + 2h*i (no late rows, so the files are disjoint), and returns the generated records
// (released at cleanup). The drain must commit each segment on its own (New's does).
func (e *Env) DeleteTable(segments int) []arrow.RecordBatch {
	e.T.Helper()
	g := walgen.New(walgen.Options{Seed: 42})
	var recs []arrow.RecordBatch
	for i := 0; i < segments; i++ {
		recs = append(recs, g.Batch(memory.DefaultAllocator, DeleteBase.Add(time.Duration(i)*2*time.Hour), 1500, time.Millisecond))
	}
	e.Seal("events", recs...)
	e.T.Cleanup(func() {
		for _, r := range recs {
			r.Release()
		}
	})
	e.DrainAll()
	return recs
}

// RowMatch is the test's own evaluation of a filter on a generated row.
func RowMatch(rec arrow.RecordBatch, i int, r rows.Filter) bool {
	for _, c := range r.Where {
		col := rec.Column(rec.Schema().FieldIndices(c.Column)[0]).(*array.String)
		if col.IsNull(i) || !slices.Contains(c.Values, col.Value(i)) {
			return false
		}
	}
	ts := int64(rec.Column(0).(*array.Timestamp).Value(i))
	if r.From != "" {
		f, _ := rows.ParseTime("", r.From)
		if ts < f.UnixMicro() {
			return false
		}
	}
	if r.To != "" {
		to, _ := rows.ParseTime("", r.To)
		if ts >= to.UnixMicro() {
			return false
		}
	}
	return true
}

// ExpectAfter fingerprints the rows of recs no request matches, and counts the rows each matches
// (a row counts for the first request that matches, as the sweep counts).
func ExpectAfter(recs []arrow.RecordBatch, rs []deletes.Request) (rowsum.Sum, map[string]int64) {
	var sum rowsum.Sum
	counts := map[string]int64{}
	for _, rec := range recs {
		for i := 0; i < int(rec.NumRows()); i++ {
			hit := false
			for _, r := range rs {
				if RowMatch(rec, i, r.Filter()) {
					counts[r.ID]++
					hit = true
					break
				}
			}
			if !hit {
				s := rec.NewSlice(int64(i), int64(i+1))
				_ = sum.Add(s, walgen.Columns...)
				s.Release()
			}
		}
	}
	return sum, counts
}

// Record records a deletion request on events.
func Record(t testing.TB, l *lake.Lake, r deletes.Request) deletes.Request {
	t.Helper()
	got, err := deletes.Record(context.Background(), l, "events", r, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// LiveByPath lists the live files of events by path.
func LiveByPath(t testing.TB, l *lake.Lake) map[string]lake.File {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]lake.File{}
	for _, f := range files {
		out[f.Path] = f
	}
	return out
}

// StoredRequests are the deletion requests stored in events, by id.
func StoredRequests(t testing.TB, l *lake.Lake) map[string]deletes.Request {
	t.Helper()
	tbl, err := l.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	rs, bad := deletes.List(tbl.Properties())
	if len(bad) > 0 {
		t.Fatal(bad)
	}
	out := map[string]deletes.Request{}
	for _, r := range rs {
		out[r.ID] = r
	}
	return out
}
