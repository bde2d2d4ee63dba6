package sidecar

import (
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/retention"
)

// DrainConfig is the part of the options the drain needs.
func DrainConfig(c config.Config) drain.Config {
	return drain.Config{WALDir: c.WALDir, NodeName: c.NodeName, CommitBatchTargetBytes: c.CommitBatchTargetBytes,
		CommitBatchMaxAge: c.CommitBatchMaxAge, MaxSegmentBytes: c.WALSegmentMaxBytes, TargetFileBytes: c.TargetFileBytes, SplitSparse: c.SplitSparse, Metadata: c.MetadataOptions,
		PastRetention: retention.DrainFilter(c.RetentionPeriod)}
}

// MaintainConfig is the part of the options the maintenance loop needs.
func MaintainConfig(c config.Config) maintain.Config {
	return maintain.Config{SnapshotExpireInterval: c.SnapshotExpireInterval, SnapshotRetain: c.SnapshotRetain,
		DeleteTasks: c.DeleteTasks, Sweep: SweepConfig(c), IndexRebuild: c.IndexRebuild, MergeMemoryBytes: c.MergeMemoryBytes,
		MergeChunkRows: c.MergeChunkRows, MergeSpliceMinRows: c.MergeSpliceMinRows, MergeSpliceUnverified: !c.MergeSpliceVerify, MaxFanIn: c.MaxFanIn, SplitSparse: c.SplitSparse, Metadata: c.MetadataOptions,
		RetentionInterval: c.RetentionInterval, Retention: RetentionConfig(c), SkipAfterFailures: c.SkipAfterFailures,
		FailureBackoff: c.FailureBackoff, FoldMaxGroups: c.FoldMaxGroups, FoldMinFiles: c.FoldMinFiles}
}

// RetentionConfig is the part of the options retention needs.
func RetentionConfig(c config.Config) retention.Config {
	return retention.Config{DefaultPeriod: c.RetentionPeriod, DeleteDelay: c.RetentionDeleteDelay, MaxFiles: c.RetentionMaxFiles,
		MaxBytes: c.RetentionMaxBytes, TargetFileBytes: c.TargetFileBytes, Metadata: c.MetadataOptions}
}

// SweepConfig is the part of the options the delete sweeper needs.
func SweepConfig(c config.Config) sweep.Config {
	return sweep.Config{MaxFiles: c.DeleteSweepMaxFiles, MaxBytes: c.DeleteSweepMaxBytes, TargetFileBytes: c.TargetFileBytes,
		Sweeps: c.DeleteTasks, Metadata: c.MetadataOptions, CancelPeriod: c.DeleteCancelPeriod}
}
