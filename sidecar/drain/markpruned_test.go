package drain

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

// TestPrunedMarkQuarantines: a pod commits two segments and dies before removing them, then stays
// away longer than the prune age, so the table's committer prunes its stream's mark. When it comes
// back, the drain finds segments of a stream without a mark, sealed before the pruned streams' last
// commit: it quarantines them (mark_pruned) instead of committing their rows a second time, and
// commits the segment sealed since.
func TestPrunedMarkQuarantines(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, nil)
	start := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	run := e.writeEach(2, 500, 7, start)
	saved := map[string][]byte{}
	for _, s := range run.segs {
		b, err := os.ReadFile(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		saved[s.Path] = b
	}
	if res, err := e.drain.Cycle(ctx, true); err != nil || res.Segments != 2 {
		t.Fatalf("first cycle %+v, %v", res, err)
	}
	want := e.tableSum("events")

	// The crash: the committed segments are back, sealed nine days ago; the commit was then too.
	sealed := time.Now().Add(-9 * 24 * time.Hour)
	for path, b := range saved {
		if err := os.WriteFile(path, b, 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, sealed, sealed); err != nil {
			t.Fatal(err)
		}
	}
	const pruneAfter = 7 * 24 * time.Hour
	err := e.lake.UpdateProperties(ctx, "events", func(p iceberg.Properties) (iceberg.Properties, []string) {
		p[marks.SeenPrefix+"pod-0"] = strconv.FormatInt(sealed.Add(time.Minute).Unix(), 10) // the commit's seen
		set, remove, pruned := marks.StreamProps(p, nil, time.Now(), pruneAfter, true)
		if pruned != 1 {
			t.Errorf("pruned %d streams, want pod-0", pruned)
		}
		return set, remove
	})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := e.lake.LoadTable(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if _, has, _ := marks.ReadMark(tbl, "pod-0"); has {
		t.Fatal("the stream's mark was not pruned")
	}

	// Back, with one new segment.
	fresh := e.writeEach(1, 300, 8, start.Add(time.Hour))
	want.Merge(fresh.sums[0])
	res, err := e.drain.Cycle(ctx, true)
	if err != nil {
		t.Fatalf("cycle: %v", err)
	}
	if res.Segments != 1 || res.Pending != 0 {
		t.Fatalf("cycle %+v: want only the fresh segment committed, nothing pending", res)
	}
	if got := e.tableSum("events"); got != want {
		t.Fatalf("table holds %+v, want %+v: the pruned stream's committed segments went in again", got, want)
	}
	if v := quarantinedByReason(t, e.drain.Metrics, metrics.ReasonMarkPruned); v != 2 {
		t.Fatalf("siglake_wal_quarantined_segments_total{reason=%q} = %v, want 2", metrics.ReasonMarkPruned, v)
	}
	for path := range saved {
		q := filepath.Join(e.cfg.WALDir, localwal.QuarantineDir, filepath.Base(path))
		raw, err := os.ReadFile(q + localwal.ReasonSuffix)
		if err != nil {
			t.Fatalf("segment %s not quarantined: %v", filepath.Base(path), err)
		}
		var rf localwal.ReasonFile
		if err := json.Unmarshal(raw, &rf); err != nil || rf.Reason != metrics.ReasonMarkPruned || rf.Detail == "" {
			t.Fatalf("reason file %s (%v), want %s with a detail", raw, err, metrics.ReasonMarkPruned)
		}
	}
	tbl, err = e.lake.LoadTable(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	if m, has, _ := marks.ReadMark(tbl, "pod-0"); !has || m.Incarnation != fresh.incarnation {
		t.Fatalf("mark %v (%v), want the fresh segment's", m, has)
	}
}
