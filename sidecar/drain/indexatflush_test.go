package drain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/merge/index"
	"github.com/siglake/siglake/sidecar/lake"
)

// footerKeys returns the footer key-value keys of every live file of the table.
func footerKeys(t *testing.T, e *env) []map[string]bool {
	t.Helper()
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	files, err := lake.LiveFiles(context.Background(), tbl)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]bool
	for _, f := range files {
		r, err := file.OpenParquetFile(strings.TrimPrefix(f.Path, "file://"), false)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for _, kv := range r.MetaData().KeyValueMetadata() {
			keys[kv.Key] = true
		}
		r.Close()
		out = append(out, keys)
	}
	return out
}

// TestIndexAtFlush: the table setting index_at_flush decides whether drain flushes (generation 0)
// write the whole-file trigram bloom; the per-row-group metadata is written either way.
func TestIndexAtFlush(t *testing.T) {
	e := newEnv(t, nil)
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	e.writeSegments("events", 1, 2000, 1, start)
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for _, keys := range footerKeys(t, e) {
		if !keys[index.KeyRowGroups] || keys[index.KeyFileTrigrams] {
			t.Fatalf("index_at_flush off: footer keys %v, want row-group blooms and no whole-file bloom", keys)
		}
	}
	tbl, err := e.lake.LoadTable(context.Background(), "events")
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{lake.IndexAtFlushProperty: "true"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.writeSegments("events", 1, 2000, 2, start.Add(time.Hour))
	if _, err := e.drain.Cycle(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	with := 0
	for _, keys := range footerKeys(t, e) {
		if keys[index.KeyFileTrigrams] {
			with++
		}
	}
	if with != 1 {
		t.Fatalf("%d files carry the whole-file bloom, want exactly the one flushed with index_at_flush on", with)
	}
}
