package rewrite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/codec"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/work"
)

// ErrNotLeasable marks a job that must run where it was planned (Leasable).
var ErrNotLeasable = errors.New("job cannot be leased")

// Leasable is job as a bin lease carries it (work.Job, docs/format/bin-lease-messages.md "Job"),
// or why it cannot travel: a row filter, a delete task, a stage or a props function come from
// state the owner read (policies, progress records) and are not values a message can carry, and
// a job that breaks the format's rules or does not fit a message would be refused on the way.
// Such jobs run on the owner.
func Leasable(job Job) (work.Job, error) {
	why := ""
	switch {
	case job.DeleteTask:
		why = "a delete task records its progress in its own commit"
	case job.RowFilter != nil:
		why = "it has a row filter (delete tasks and retention run on the owner)"
	case job.Stage != nil:
		why = "it stages changes of its own into the commit"
	case job.Props != nil:
		why = "it adds snapshot properties by a function"
	case len(job.Inputs) == 0:
		why = "it has no inputs"
	}
	if why != "" {
		return work.Job{}, fmt.Errorf("%w: %s job of partition %s: %s", ErrNotLeasable, job.Kind, job.Partition, why)
	}
	w := work.Job{Kind: job.Kind, Partition: job.Partition, Generation: job.Generation, Dir: job.Dir,
		TargetFileBytes: job.TargetFileBytes, SplitSparse: job.SplitSparse, Metadata: work.MetadataOf(job.Metadata),
		FoldTier: job.FoldTier, Reason: job.Reason, Inputs: make([]work.Input, len(job.Inputs))}
	if job.Fold != nil {
		w.Fold = work.FoldOf(*job.Fold)
	}
	for i, f := range job.Inputs {
		w.Inputs[i] = work.Input{Path: f.Path, Size: f.Size, Rows: f.Rows, Generation: f.Generation}
	}
	if err := w.Validate(); err != nil {
		return work.Job{}, fmt.Errorf("%w: %s job of partition %s: %w", ErrNotLeasable, job.Kind, job.Partition, err)
	}
	if enc, err := json.Marshal(w); err != nil || len(enc) > work.MaxJobBytes {
		return work.Job{}, fmt.Errorf("%w: %s job of %d inputs of partition %s encodes to %d bytes (%v); accepted: at most %d",
			ErrNotLeasable, job.Kind, len(job.Inputs), job.Partition, len(enc), err, work.MaxJobBytes)
	}
	return w, nil
}

// FromLease is the job a lease carries, for a merge of t on a worker (Executor.Merge). Its inputs
// carry no data files: the owner commits with its own job, never with this one. j came over the
// network, so it is held to the format's rules (work.Job.Validate: outputs above every input's
// generation, promise 5) and checked against t: outputs go to t's directory for the partition.
func FromLease(t *table.Table, j work.Job) (Job, error) {
	if err := j.Validate(); err != nil {
		return Job{}, fmt.Errorf("leased %s job of partition %s: %w", j.Kind, j.Partition, err)
	}
	if want := lake.DataDir(t, j.Partition); j.Dir != want {
		return Job{}, fmt.Errorf("leased %s job of partition %s: dir %q is not table %s's directory for the partition; accepted: %s",
			j.Kind, j.Partition, j.Dir, t.Identifier(), want)
	}
	job := Job{Kind: j.Kind, Partition: j.Partition, Generation: j.Generation, Dir: j.Dir,
		TargetFileBytes: j.TargetFileBytes, SplitSparse: j.SplitSparse, Metadata: j.Metadata.Options(),
		FoldTier: j.FoldTier, Reason: j.Reason, Inputs: make([]lake.File, len(j.Inputs))}
	if j.Fold != nil {
		f := j.Fold.Folding()
		job.Fold = &f
	}
	for i, in := range j.Inputs {
		job.Inputs[i] = lake.File{Path: in.Path, Partition: j.Partition, Size: in.Size, Rows: in.Rows,
			Generation: in.Generation, Late: merge.ParseLate(in.Path)}
	}
	return job, nil
}

// EncodeOutputs is m's outputs as a result message carries them: iceberg-go's cross-process
// encoding against t's format version, current schema and spec (as group commit's hand-offs).
func EncodeOutputs(t *table.Table, m Merged) ([][]byte, error) {
	out := make([][]byte, len(m.files))
	for i, f := range m.files {
		b, err := codec.EncodeDataFile(f, t.Spec(), t.Schema(), t.Metadata().Version())
		if err != nil {
			return nil, fmt.Errorf("encode output %s: %w", f.FilePath(), err)
		}
		out[i] = b
	}
	return out, nil
}

// DecodeOutputs is EncodeOutputs undone against t, the owner's table: a worker encodes against
// the same current schema and spec unless the table evolved meanwhile, which fails here.
func DecodeOutputs(t *table.Table, files [][]byte) ([]iceberg.DataFile, error) {
	out := make([]iceberg.DataFile, len(files))
	for i, b := range files {
		df, err := codec.DecodeDataFile(b, t.Spec(), t.Schema(), t.Metadata().Version())
		if err != nil {
			return nil, fmt.Errorf("decode output %d of %d: %w", i+1, len(files), err)
		}
		out[i] = df
	}
	return out, nil
}

// RemoveRefused removes the outputs a refused result named for job (its lease ended before the
// result came, or its commit definitely failed): only files CheckOutputs accepts as job's and that
// are not live in t, the table's head now. A result is authenticated, not trusted: removing a
// live file (the committed outputs of the same bin run again elsewhere) would lose its rows. It
// returns the paths removed.
func RemoveRefused(ctx context.Context, t *table.Table, job Job, files []iceberg.DataFile) ([]string, error) {
	if err := CheckOutputs(t, job, files); err != nil {
		return nil, fmt.Errorf("remove refused outputs: %w", err)
	}
	live, err := lake.LiveFiles(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("remove refused outputs: %w", err)
	}
	isLive := make(map[string]bool, len(live))
	for _, f := range live {
		isLive[f.Path] = true
	}
	var outs []merge.Output
	for _, f := range files {
		if !isLive[f.FilePath()] {
			outs = append(outs, merge.Output{Path: f.FilePath()})
		}
	}
	fs, err := writeFS(ctx, t)
	if err != nil {
		return nil, fmt.Errorf("remove refused outputs: %w", err)
	}
	orphans, err := lake.RemoveFiles(fs, outs)
	removed := make([]string, 0, len(outs))
	for _, o := range outs {
		if !slices.Contains(orphans, o.Path) {
			removed = append(removed, o.Path)
		}
	}
	return removed, err
}
