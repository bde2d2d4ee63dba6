package lake_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
)

func TestMergeProps(t *testing.T) {
	on := iceberg.Properties{table.ManifestMergeEnabledKey: "true", table.ManifestMinMergeCountKey: "4"}
	for _, c := range []struct {
		name     string
		current  iceberg.Properties
		minCount int
		want     iceberg.Properties
	}{
		{"off leaves a table alone", on, 0, nil},
		{"off leaves a table without settings alone", nil, 0, nil},
		{"a new table", nil, 4, on},
		{"in step", on, 4, nil},
		{"another count", on, 100, iceberg.Properties{table.ManifestMergeEnabledKey: "true", table.ManifestMinMergeCountKey: "100"}},
		{"merge switched off by hand", iceberg.Properties{table.ManifestMergeEnabledKey: "false", table.ManifestMinMergeCountKey: "4"}, 4, on},
		{"iceberg's default count is not written out", iceberg.Properties{table.ManifestMergeEnabledKey: "true"}, table.ManifestMinMergeCountDefault, nil},
	} {
		got := lake.MergeProps(c.current, c.minCount)
		if len(got) != len(c.want) {
			t.Errorf("%s: MergeProps = %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: MergeProps = %v, want %v", c.name, got, c.want)
			}
		}
	}
}

// TestManifestMerge: with merge off every append adds a manifest to the head's manifest list;
// with it on, on a table siglake creates and on one created before it was turned on, the list
// stays below minCount + 2 over 3 x minCount appends, and every row is still read by iceberg-go.
func TestManifestMerge(t *testing.T) {
	const minCount, appends, rowsPerBatch = 4, 3 * 4, 200
	for _, c := range []struct {
		name       string
		createWith int // the merge setting of the lake that creates the table (first append)
		commitWith int // the one of the lake doing the appends after the first
	}{
		{"off", 0, 0},
		{"on", minCount, minCount},
		{"turned on for an existing table", 0, minCount},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			creator, committer := openMergeLake(t, dir, c.createWith), openMergeLake(t, dir, c.commitWith)
			for i := 1; i <= appends; i++ {
				l := committer
				if i == 1 {
					l = creator
				}
				req := lake.WriteBatch(t, l, uint64(i))
				if _, err := l.CommitAppend(ctx, req, lake.QuickRetry); err != nil {
					t.Fatal(err)
				}
				n := manifestCount(t, committer)
				if c.commitWith == 0 && n != i {
					t.Fatalf("merge off: %d manifests after %d appends, want one per append", n, i)
				}
				if c.commitWith > 0 && n >= minCount+2 {
					t.Fatalf("merge on (%d): %d manifests after %d appends, want fewer than %d", minCount, n, i, minCount+2)
				}
			}
			tbl, err := committer.LoadTable(ctx, "events")
			if err != nil {
				t.Fatal(err)
			}
			if c.commitWith > 0 && lake.MergeProps(tbl.Properties(), minCount) != nil {
				t.Errorf("the table's merge settings %v are not in step after the appends", tbl.Properties())
			}
			got, err := tbl.Scan().ToArrowTable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.NumRows() != appends*rowsPerBatch {
				t.Fatalf("iceberg-go reads %d rows, want %d", got.NumRows(), appends*rowsPerBatch)
			}
			if m, _, _ := marks.ReadMark(tbl, "s"); m != mark(appends) {
				t.Fatalf("mark %s, want %s", m, mark(appends))
			}
		})
	}
}

// openMergeLake opens a lake on dir's catalog and warehouse with manifest merge at minCount.
func openMergeLake(t *testing.T, dir string, minCount int) *lake.Lake {
	t.Helper()
	l, err := lake.Open(context.Background(), lake.Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"),
		Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake", ManifestMergeMinCount: minCount})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// manifestCount is the length of the manifest list of the head of table events.
func manifestCount(t *testing.T, l *lake.Lake) int {
	t.Helper()
	ctx := context.Background()
	tbl, err := l.LoadTable(ctx, "events")
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return len(ms)
}
