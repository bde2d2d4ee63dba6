package lake

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/walgen"
)

// TestLiveFilesOncePerFile: iceberg-go's scan planning splits a Parquet file larger than
// read.split.target-size (128 MiB by default, so every L2 file) into one task per range of row
// groups. LiveFiles must still list each data file once: the planner would otherwise see a
// terminal file three times and merge its rows three times.
func TestLiveFilesOncePerFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := Open(ctx, Config{Catalog: "sqlite:" + filepath.Join(dir, "catalog.db"), Warehouse: filepath.Join(dir, "warehouse"), Namespace: "siglake"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec := walgen.New(walgen.Options{Seed: 1}).Batch(memory.DefaultAllocator, time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), 4000, time.Millisecond)
	defer rec.Release()
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	sc := arrow.NewSchema(fields, nil)
	tbl, err := l.EnsureTable(ctx, "events", sc)
	if err != nil {
		t.Fatal(err)
	}
	// A split target below one row group's bytes: every row group becomes a scan task.
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.ReadSplitTargetSizeKey: "1024"}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := writer.WriteSorted(ctx, fsys.(icebergio.WriteFileIO), func(int) string { return DataDir(tbl, "2026-11-29") + "/" + merge.DataFileName(0) },
		sc, []arrow.RecordBatch{rec}, merge.WriterOptions{TimestampColumn: TimestampColumn, RowGroupRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	files, err := DataFiles(tbl, outs)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(files[0].SplitOffsets()); n != 4 {
		t.Fatalf("the file has %d split offsets, want 4 (one per row group)", n)
	}
	m := marks.Mark{Incarnation: 1, Seq: 1}
	if _, err := l.CommitAppend(ctx, AppendRequest{Table: "events", Files: files, Stream: "s", First: m, Last: m}, quickRetry); err != nil {
		t.Fatal(err)
	}
	if tbl, err = l.LoadTable(ctx, "events"); err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 2 {
		t.Fatalf("iceberg-go planned %d scan tasks: the test no longer splits the file", len(tasks))
	}
	live, err := LiveFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Rows != 4000 {
		t.Fatalf("LiveFiles listed %d files (%d scan tasks) for one data file of 4000 rows", len(live), len(tasks))
	}
	// The one entry describes the whole written file, not one of its row-group ranges.
	ts := rec.Column(rec.Schema().FieldIndices(TimestampColumn)[0]).(*array.Timestamp)
	lo, hi := int64(ts.Value(0)), int64(ts.Value(0))
	for i := 0; i < ts.Len(); i++ {
		lo, hi = min(lo, int64(ts.Value(i))), max(hi, int64(ts.Value(i)))
	}
	if f := live[0]; f.Path != outs[0].Path || f.Size != outs[0].Size || f.MinTime != lo || f.MaxTime != hi {
		t.Fatalf("LiveFiles: %s, %d bytes, time [%d, %d]; written %s, %d bytes, time [%d, %d]",
			f.Path, f.Size, f.MinTime, f.MaxTime, outs[0].Path, outs[0].Size, lo, hi)
	}
	planned, err := PlanDataFiles(ctx, tbl, iceberg.AlwaysTrue{})
	if err != nil {
		t.Fatal(err)
	}
	if len(planned) != 1 || planned[0].Start != 0 || planned[0].Length != outs[0].Size {
		t.Fatalf("PlanDataFiles: %d tasks %+v, want one spanning the %d-byte file", len(planned), planned, outs[0].Size)
	}
}
