package lake

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
)

// File is a live data file as the manifests describe it: what the planner and the gauges need,
// read from metadata only (no data file is opened).
type File struct {
	Path      string
	Partition string // the day, YYYY-MM-DD
	Size      int64
	Rows      int64
	// Generation is parsed from the file name (0 when the name carries none, e.g. files added by
	// another tool).
	Generation int
	// Late marks a file of the late stream (merge.ParseLate): the planner plans it apart.
	Late bool
	// MinTime and MaxTime are the timestamp column bounds in microseconds, inclusive.
	MinTime, MaxTime int64
	DataFile         iceberg.DataFile
}

// LiveFiles lists the data files of t's current snapshot, sorted by partition then MinTime.
func LiveFiles(ctx context.Context, t *table.Table) ([]File, error) {
	return LiveFilesMatching(ctx, t, iceberg.AlwaysTrue{})
}

// LiveFilesMatching is LiveFiles for the files iceberg-go's scan planning keeps for a row filter
// (partition values and column bounds in the manifests): those that may hold a matching row.
func LiveFilesMatching(ctx context.Context, t *table.Table, filter iceberg.BooleanExpression) ([]File, error) {
	if t.CurrentSnapshot() == nil {
		return nil, nil
	}
	ts, ok := t.Schema().FindFieldByName(TimestampColumn)
	if !ok {
		return nil, fmt.Errorf("table %v has no %q column", t.Identifier(), TimestampColumn)
	}
	tasks, err := PlanDataFiles(ctx, t, filter)
	if err != nil {
		return nil, fmt.Errorf("list live files of %v: %w", t.Identifier(), err)
	}
	out := make([]File, 0, len(tasks))
	for _, task := range tasks {
		df := task.File
		f := File{Path: df.FilePath(), Size: df.FileSizeBytes(), Rows: df.Count(), DataFile: df}
		f.Generation, _ = merge.ParseGeneration(df.FilePath())
		f.Late = merge.ParseLate(df.FilePath())
		lo, hi := df.LowerBoundValues()[ts.ID], df.UpperBoundValues()[ts.ID]
		if len(lo) != 8 || len(hi) != 8 {
			return nil, fmt.Errorf("data file %s has no %s bounds in its manifest entry", df.FilePath(), TimestampColumn)
		}
		f.MinTime = int64(binary.LittleEndian.Uint64(lo))
		f.MaxTime = int64(binary.LittleEndian.Uint64(hi))
		f.Partition = partitionName(df, f.MinTime)
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		if out[i].MinTime != out[j].MinTime {
			return out[i].MinTime < out[j].MinTime
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// PlanDataFiles is iceberg-go's scan planning of t for filter with one task per data file, in
// path order, each spanning its whole file. iceberg-go splits a Parquet file above
// read.split.target-size (128 MiB by default) into one task per range of row groups; whoever
// counts, reads whole or replaces files must see each file once. An empty table plans nothing.
func PlanDataFiles(ctx context.Context, t *table.Table, filter iceberg.BooleanExpression) ([]table.FileScanTask, error) {
	if t.CurrentSnapshot() == nil {
		return nil, nil
	}
	tasks, err := t.Scan(table.WithRowFilter(filter)).PlanFiles(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]table.FileScanTask, 0, len(tasks))
	seen := make(map[string]bool, len(tasks))
	for _, task := range tasks {
		p := task.File.FilePath()
		if seen[p] {
			continue
		}
		seen[p] = true
		task.Start, task.Length = 0, task.File.FileSizeBytes()
		out = append(out, task)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File.FilePath() < out[j].File.FilePath() })
	return out, nil
}

// partitionName renders the day partition; files without a partition value fall back to the day
// of their lower bound, which is the same for files siglake writes.
func partitionName(df iceberg.DataFile, minTime int64) string {
	for _, v := range df.Partition() {
		switch d := v.(type) {
		case iceberg.Date:
			return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
		case int32:
			return time.Unix(int64(d)*86400, 0).UTC().Format("2006-01-02")
		}
	}
	return time.UnixMicro(minTime).UTC().Format("2006-01-02")
}

// DataDir is the directory of a partition's data files under t's location. path.Join must not
// see the location: it would fold "s3://bucket" into "s3:/bucket", which S3 FileIO then takes as
// an object key inside the bucket and no other reader can resolve.
func DataDir(t *table.Table, partition string) string { return dataDir(t.Location(), partition) }

func dataDir(location, partition string) string {
	return strings.TrimRight(location, "/") + "/" + path.Join("data", PartitionField+"="+partition)
}

// DataFiles describes written Parquet files as data files of t, with the column metrics from
// their footers: what an append or a replace commits.
func DataFiles(t *table.Table, outs []merge.Output) ([]iceberg.DataFile, error) {
	files := make([]iceberg.DataFile, 0, len(outs))
	for _, o := range outs {
		df, err := table.DataFileFromMetadata(table.DataFileArgs{
			Schema: t.Schema(), Spec: t.Spec(), Format: iceberg.ParquetFile, Metadata: o.Meta,
			FilePath: o.Path, FileSize: o.Size, Content: iceberg.EntryContentData,
			SortOrderID: t.SortOrder().OrderID(), Properties: t.Properties(), FormatVersion: t.Metadata().Version(),
		})
		if err != nil {
			return nil, fmt.Errorf("describe data file %s: %w", o.Path, err)
		}
		files = append(files, df)
	}
	return files, nil
}

// RemoveFiles deletes written files that no commit references and returns those it could not
// remove, with why: orphans for `siglake gc`, harmless either way.
func RemoveFiles(fsys icebergio.IO, outs []merge.Output) (orphans []string, err error) {
	var errs []error
	for _, o := range outs {
		if e := fsys.Remove(o.Path); e != nil {
			orphans = append(orphans, o.Path)
			errs = append(errs, fmt.Errorf("remove %s: %w", o.Path, e))
		}
	}
	return orphans, errors.Join(errs...)
}
