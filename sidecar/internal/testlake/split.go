package testlake

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/walgen"
)

// SplitFile appends to events one data file of rows walgen rows (seed, from start, step apart) in
// row groups of rowGroupRows, and sets read.split.target-size to 1 KiB, so iceberg-go's scan
// planning splits the file into one task per row group as it does every file above 128 MiB. It
// returns the rows (released at cleanup) and the number of scan tasks planned for the file.
func (e *Env) SplitFile(seed uint64, start time.Time, rows int, step time.Duration, rowGroupRows int64) (arrow.RecordBatch, int) {
	e.T.Helper()
	ctx := context.Background()
	rec := walgen.New(walgen.Options{Seed: seed}).Batch(memory.DefaultAllocator, start, rows, step)
	e.T.Cleanup(rec.Release)
	fields := append([]arrow.Field(nil), rec.Schema().Fields()...)
	for i := range fields {
		fields[i].Metadata = arrow.Metadata{}
	}
	sc := arrow.NewSchema(fields, nil)
	tbl, err := e.Lake.EnsureTable(ctx, "events", sc)
	if err != nil {
		e.T.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.ReadSplitTargetSizeKey: "1024"}); err != nil {
		e.T.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		e.T.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	day := start.UTC().Format("2006-01-02")
	outs, err := writer.WriteSorted(ctx, fsys.(icebergio.WriteFileIO), func(int) string { return lake.DataDir(tbl, day) + "/" + merge.DataFileName(0) },
		sc, []arrow.RecordBatch{rec}, merge.WriterOptions{TimestampColumn: lake.TimestampColumn, RowGroupRows: rowGroupRows})
	if err != nil {
		e.T.Fatal(err)
	}
	files, err := lake.DataFiles(tbl, outs)
	if err != nil {
		e.T.Fatal(err)
	}
	m := marks.Mark{Incarnation: 1, Seq: 1}
	if _, err := e.Lake.CommitAppend(ctx, lake.AppendRequest{Table: "events", Files: files, Stream: "split", First: m, Last: m},
		lake.Retry{Attempts: 3, MinWait: time.Millisecond, MaxWait: 10 * time.Millisecond}); err != nil {
		e.T.Fatal(err)
	}
	tasks, err := e.Table("events").Scan().PlanFiles(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	return rec, len(tasks)
}
