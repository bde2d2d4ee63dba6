// Package filtered is the filtered rewrite that delete tasks and retention share: count the rows
// of one live file that a row filter matches, and rewrite the file without them through the one
// rewrite executor, recording the outcome like any rewrite's and handing a failure to the
// set-aside accounting. Its callers decide which files, which filter and what the commit stages
// with the replace; this package decides nothing.
package filtered

import (
	"context"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/rowfilter"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Rewriter runs filtered rewrites. Its zero value is not usable: Executor, RewriteMetrics and Log
// are needed.
type Rewriter struct {
	Executor *rewrite.Executor
	// RewriteMetrics count filtered rewrites with every other rewrite.
	RewriteMetrics *rewrite.Metrics
	Log            *zap.Logger
	// OnFailure, when set, receives every failed filtered rewrite or read of a file (the
	// maintainer's set-aside accounting).
	OnFailure rewrite.FailureFunc
}

// Source is a table as a filtered run reads its files, opened once per run.
type Source struct {
	Table  *table.Table
	Name   string
	FS     icebergio.IO
	Schema *arrow.Schema
}

// Open opens t for reading its files.
func Open(ctx context.Context, t *table.Table) (Source, error) {
	src := Source{Table: t, Name: t.Identifier()[len(t.Identifier())-1]}
	sc, err := lake.ArrowSchema(t)
	if err != nil {
		return src, err
	}
	fsys, err := t.FS(ctx)
	if err != nil {
		return src, err
	}
	src.FS, src.Schema = fsys, sc
	return src, nil
}

// Read is one file read against a row filter.
type Read struct {
	// Kind is the rewrite kind a failure is counted under (delete-task, retention).
	Kind   string
	File   lake.File
	Filter *rowfilter.Filter
}

func (rd Read) job() rewrite.Job {
	return rewrite.Job{Kind: rd.Kind, Partition: rd.File.Partition, Inputs: []lake.File{rd.File}}
}

// Count returns the rows of rd.File each condition of rd.Filter matches. A read that fails is
// recorded as a failed rewrite of the file when record is set, so the failure accounting treats
// both alike.
func (w Rewriter) Count(ctx context.Context, src Source, rd Read, record bool) ([]int64, error) {
	per, _, err := merge.CountMatches(ctx, src.FS, rd.File.Path, src.Schema, lake.TimestampColumn, rd.Filter, nil)
	if err != nil && record {
		job := rd.job()
		out := rewrite.Observer{Metrics: w.RewriteMetrics, Log: w.Log}.ReadFailed(src.Name, job, err)
		if w.OnFailure != nil {
			w.OnFailure(ctx, src.Name, job, out)
		}
	}
	return per, err
}

// Rewrite is one filtered rewrite: rd.File rewritten without the rows rd.Filter matches.
type Rewrite struct {
	Read
	// Generation is the outputs' generation (0 for a delete task, promise 5).
	Generation int
	// TargetFileBytes splits the output; a filtered rewrite never splits a file for size alone,
	// so the file's own size is the least it uses.
	TargetFileBytes int64
	Metadata        lake.MetadataFunc
	DeleteTask      bool
	Reason          string
	Props           func(res merge.RewriteResult) iceberg.Properties
	Stage           func(res merge.RewriteResult, cur *table.Table, txn *table.Transaction) error
	// RowsField names the removed rows in the rewrite's log line; Fields come before it.
	RowsField string
	Fields    []zap.Field
}

// Rewrite runs rw on src's table through the rewrite executor, records its outcome and hands a
// failure to OnFailure.
func (w Rewriter) Rewrite(ctx context.Context, src Source, rw Rewrite) rewrite.Outcome {
	job := rw.job()
	// The output goes beside the input (same partition directory). Not path.Dir: it would fold
	// "s3://bucket" into "s3:/bucket" (see lake.DataDir).
	job.Dir = rw.File.Path[:strings.LastIndex(rw.File.Path, "/")]
	job.Generation = rw.Generation
	job.TargetFileBytes = max(rw.TargetFileBytes, rw.File.Size)
	job.Metadata = rw.Metadata.For(src.Table)
	job.RowFilter, job.DeleteTask, job.Reason = rw.Filter, rw.DeleteTask, rw.Reason
	job.Props, job.Stage = rw.Props, rw.Stage
	out := w.Executor.Run(ctx, src.Table, job)
	fields := append([]zap.Field{zap.String("path", rw.File.Path)}, rw.Fields...)
	fields = append(fields, zap.Int64(rw.RowsField, Removed(out.Merge)), zap.Int64("rows_before", rw.File.Rows))
	rewrite.Observer{Metrics: w.RewriteMetrics, Log: w.Log}.Observe(src.Name, job, out, fields...)
	if out.Status == rewrite.Failed && w.OnFailure != nil {
		w.OnFailure(ctx, src.Name, job, out)
	}
	return out
}

// Removed is the rows a rewrite's filter removed.
func Removed(res merge.RewriteResult) (n int64) {
	for _, d := range res.Deleted {
		n += d
	}
	return n
}

// SetAside splits files, in order, into those a filtered run reads and those set aside after
// failed rewrites (the siglake skipped list in props), which it never reads: the one set-aside
// rule of delete tasks and retention. path is a file's path.
func SetAside[F any](props iceberg.Properties, files []F, path func(F) string) (read, aside []F) {
	skipped := lake.SkippedFiles(props)
	for _, f := range files {
		if _, ok := skipped[path(f)]; ok {
			aside = append(aside, f)
			continue
		}
		read = append(read, f)
	}
	return read, aside
}
