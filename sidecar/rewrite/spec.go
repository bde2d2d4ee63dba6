package rewrite

import (
	"errors"
	"fmt"
	"math"

	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/folding"
	"github.com/siglake/siglake/sidecar/lake"
)

// Spec is the leasable part of a Job: plain values that travel as JSON to a worker, which makes
// its Job back with Spec.Job (design bin-leases, section 1). Nested merge options keep their Go
// field names as JSON keys. The fold travels whole rather than being re-derived from the table
// on the worker: its tier cutoffs are times computed at the owner's planning clock and the
// output tier was planned against them, so a worker with another clock (or a spec edited
// meanwhile) would fold rows to buckets the name does not say.
type Spec struct {
	Kind            string                `json:"kind"`
	Partition       string                `json:"partition"`
	Inputs          []SpecInput           `json:"inputs"`
	Generation      int                   `json:"generation"`
	Dir             string                `json:"dir"`
	TargetFileBytes int64                 `json:"target_file_bytes,omitempty"`
	SplitSparse     float64               `json:"split_sparse,omitempty"`
	Metadata        merge.MetadataOptions `json:"metadata"`
	Fold            *folding.Fold         `json:"fold,omitempty"`
	FoldTier        int                   `json:"fold_tier,omitempty"`
	Reason          string                `json:"reason,omitempty"`
}

// SpecInput is one input file as merge reads it (merge.Input).
type SpecInput struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Rows       int64  `json:"rows"`
	Generation int    `json:"generation"`
}

// ErrNotLeasable marks a job that must run where it was planned (SpecOf).
var ErrNotLeasable = errors.New("job cannot be leased")

// SpecOf is job's leasable part, or why it has none: a row filter, a delete task, a stage or a
// props function come from state the owner read (policies, progress records) and are not values
// a message can carry; such jobs run on the owner.
func SpecOf(job Job) (Spec, error) {
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
		return Spec{}, fmt.Errorf("%w: %s job of partition %s: %s", ErrNotLeasable, job.Kind, job.Partition, why)
	}
	s := Spec{Kind: job.Kind, Partition: job.Partition, Generation: job.Generation, Dir: job.Dir,
		TargetFileBytes: job.TargetFileBytes, SplitSparse: job.SplitSparse, Metadata: job.Metadata,
		FoldTier: job.FoldTier, Reason: job.Reason, Inputs: make([]SpecInput, len(job.Inputs))}
	if job.Fold != nil {
		f := *job.Fold
		s.Fold = &f
	}
	for i, f := range job.Inputs {
		s.Inputs[i] = SpecInput{Path: f.Path, Size: f.Size, Rows: f.Rows, Generation: f.Generation}
	}
	return s, nil
}

// Job is the job s describes, for a merge of t on a worker (Executor.Merge). Its inputs carry
// no data files: the owner commits with its own job, never with this one. s came over the
// network, so it is checked against t: outputs go to t's directory for the partition, above
// every input's generation (promise 5).
func (s Spec) Job(t *table.Table) (Job, error) {
	if err := s.check(t); err != nil {
		return Job{}, fmt.Errorf("job spec %s of partition %s: %w", s.Kind, s.Partition, err)
	}
	job := Job{Kind: s.Kind, Partition: s.Partition, Generation: s.Generation, Dir: s.Dir,
		TargetFileBytes: s.TargetFileBytes, SplitSparse: s.SplitSparse, Metadata: s.Metadata,
		FoldTier: s.FoldTier, Reason: s.Reason, Inputs: make([]lake.File, len(s.Inputs))}
	if s.Fold != nil {
		f := *s.Fold
		job.Fold = &f
	}
	for i, in := range s.Inputs {
		job.Inputs[i] = lake.File{Path: in.Path, Partition: s.Partition, Size: in.Size, Rows: in.Rows,
			Generation: in.Generation, Late: merge.ParseLate(in.Path)}
	}
	return job, nil
}

// check says why s is not a job a worker may merge for t.
func (s Spec) check(t *table.Table) error {
	if s.Kind == "" || len(s.Inputs) == 0 {
		return errors.New("kind and inputs are required")
	}
	if want := lake.DataDir(t, s.Partition); s.Dir != want {
		return fmt.Errorf("dir %q is not table %s's directory for the partition; accepted: %s", s.Dir, t.Identifier(), want)
	}
	if s.TargetFileBytes < 0 || s.SplitSparse < 0 || math.IsNaN(s.SplitSparse) || math.IsInf(s.SplitSparse, 0) {
		return fmt.Errorf("target_file_bytes %d, split_sparse %v; accepted: 0 or more", s.TargetFileBytes, s.SplitSparse)
	}
	if s.FoldTier < 0 || s.FoldTier > 0 && s.Fold == nil {
		return fmt.Errorf("fold tier %d; accepted: 0 or more, and above 0 only with a fold", s.FoldTier)
	}
	seen := make(map[string]bool, len(s.Inputs))
	for _, in := range s.Inputs {
		switch {
		case in.Path == "" || seen[in.Path]:
			return fmt.Errorf("input %q: accepted: a path, each once", in.Path)
		case in.Size < 0 || in.Rows < 0 || in.Generation < 0:
			return fmt.Errorf("input %q: size %d, rows %d, generation %d; accepted: 0 or more", in.Path, in.Size, in.Rows, in.Generation)
		case in.Generation >= s.Generation:
			return fmt.Errorf("input %q of generation %d: accepted: below the output generation %d", in.Path, in.Generation, s.Generation)
		}
		seen[in.Path] = true
	}
	return nil
}
