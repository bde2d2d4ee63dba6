//go:build !mergeonly

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"

	"github.com/siglake/siglake/sidecar/lake"
)

// icebergRewrite registers the inputs in a fresh table of an embedded SQLite
// catalog (not timed), then times one Table.RewriteDataFiles over all of them
// as one group: iceberg-go's own compaction (bin-packing; it does not sort).
func icebergRewrite(ctx context.Context, s inputSet, out string) (childResult, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return childResult{}, err
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(out, "catalog.db"))
	if err != nil {
		return childResult{}, err
	}
	defer db.Close()
	loc := "file://" + filepath.Join(out, "table")
	cat, err := sqlcat.NewCatalog("bench", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + out})
	if err != nil {
		return childResult{}, err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"bench"}, nil); err != nil {
		return childResult{}, err
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{"bench", "logs"}, iceSchema(), catalog.WithLocation(loc))
	if err != nil {
		return childResult{}, err
	}
	var dfs []iceberg.DataFile
	for _, in := range s.Inputs {
		r, err := file.OpenParquetFile(in.Path, false)
		if err != nil {
			return childResult{}, err
		}
		df, err := table.DataFileFromMetadata(table.DataFileArgs{
			Schema: tbl.Schema(), Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: r.MetaData(),
			FilePath: in.Path, FileSize: in.Size, Content: iceberg.EntryContentData, FormatVersion: tbl.Metadata().Version(),
		})
		_ = r.Close()
		if err != nil {
			return childResult{}, err
		}
		dfs = append(dfs, df)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(ctx, dfs, nil); err != nil {
		return childResult{}, err
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		return childResult{}, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return childResult{}, err
	}
	// Sizes and rows per data file: scan planning splits a file above 128 MiB into row-group ranges.
	whole, err := lake.PlanDataFiles(ctx, tbl, iceberg.AlwaysTrue{})
	if err != nil {
		return childResult{}, err
	}
	var total int64
	for _, t := range whole {
		total += t.File.FileSizeBytes()
	}
	start, cpu0 := time.Now(), cpuSeconds()
	res, err := tbl.RewriteDataFiles(ctx, []table.CompactionTaskGroup{{PartitionKey: "all", Tasks: tasks, TotalSizeBytes: total}}, table.RewriteDataFilesOptions{})
	if err != nil {
		return childResult{}, fmt.Errorf("RewriteDataFiles: %w", err)
	}
	r := childResult{Seconds: time.Since(start).Seconds(), CPU: cpuSeconds() - cpu0, Files: res.AddedDataFiles, OutBytes: res.BytesAfter}
	after, err := lake.PlanDataFiles(ctx, res.Table, iceberg.AlwaysTrue{})
	if err != nil {
		return childResult{}, err
	}
	for _, t := range after {
		r.Rows += t.File.Count()
	}
	return r, nil
}

func iceSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "timestamp", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 2, Name: "service", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "host", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "level", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 5, Name: "raw", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 6, Name: "trace_id", Type: iceberg.PrimitiveTypes.String},
	)
}

// checkSchema fails when arrowSchema, built by hand for merge-child, is not the schema iceberg-go
// converts iceSchema to: every contender must write the same table.
func checkSchema() error {
	want, err := table.SchemaToArrowSchema(iceSchema(), nil, true, false)
	if err != nil {
		return err
	}
	if got := arrowSchema(); !got.Equal(want) || got.String() != want.String() {
		return fmt.Errorf("arrowSchema %v differs from iceberg-go's %v", got, want)
	}
	return nil
}
