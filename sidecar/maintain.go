package sidecar

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/retention"
)

// MaintainConfig is the part of the options the maintenance loop needs.
func MaintainConfig(c config.Config) maintain.Config {
	return maintain.Config{SnapshotExpireInterval: c.SnapshotExpireInterval, SnapshotRetain: c.SnapshotRetain,
		DeleteTasks: c.DeleteTasks, Sweep: sweepConfig(c), IndexRebuild: c.IndexRebuild, MergeMemoryBytes: c.MergeMemoryBytes,
		MergeChunkRows: c.MergeChunkRows, MergeSpliceMinRows: c.MergeSpliceMinRows, MergeSpliceUnverified: !c.MergeSpliceVerify, MaxFanIn: c.MaxFanIn, SplitSparse: c.SplitSparse, Metadata: c.MetadataOptions,
		RetentionInterval: c.RetentionInterval, Retention: retentionConfig(c), SkipAfterFailures: c.SkipAfterFailures,
		FailureBackoff: c.FailureBackoff, FoldMaxGroups: c.FoldMaxGroups, FoldMinFiles: c.FoldMinFiles,
		RewriteMaxAge: orphans.HandoffMaxAge(c.CommitTimeout)}
}

// retentionConfig is the part of the options retention needs.
func retentionConfig(c config.Config) retention.Config {
	return retention.Config{DefaultPeriod: c.RetentionPeriod, DeleteDelay: c.RetentionDeleteDelay, MaxFiles: c.RetentionMaxFiles,
		MaxBytes: c.RetentionMaxBytes, TargetFileBytes: c.TargetFileBytes, Metadata: c.MetadataOptions}
}

// sweepConfig is the part of the options the delete sweeper needs.
func sweepConfig(c config.Config) sweep.Config {
	return sweep.Config{MaxFiles: c.DeleteSweepMaxFiles, MaxBytes: c.DeleteSweepMaxBytes, TargetFileBytes: c.TargetFileBytes,
		Sweeps: c.DeleteTasks, Metadata: c.MetadataOptions, CancelPeriod: c.DeleteCancelPeriod}
}

// maintain ticks the maintainer until stop is done; gauges and expiry keep running with rewrites off.
func (p *Process) maintain(stop, work context.Context, l *lake.Lake) {
	p.Metrics.Maintain.LastSuccess.WithLabelValues() // exported (at 0) even if maintenance cannot start
	pc, err := config.PlanConfig(p.Cfg)
	if err != nil {
		p.Log.Error("maintenance disabled: bad compaction settings", zap.Error(err))
		return
	}
	m := &maintain.Maintainer{Cfg: MaintainConfig(p.Cfg), Plan: pc, Lake: l, Metrics: p.Metrics.Maintain, Publish: p.Status, Log: p.Log, Now: p.Now,
		Owns: p.owns, Backlog: p.backlog, Stop: stop}
	if p.memory != nil {
		m.Reserve = p.memory.Reserve
	}
	m.Leases = p.startBinLeases(stop, work, m)
	tick := p.Cfg.ReclusterInterval
	if tick == 0 || tick > 10*time.Second {
		tick = 10 * time.Second // gauges and expiry keep running with rewrites off
	}
	m.Run(stop, work, tick)
}

// owns says whether this process maintains table now. With gossip it owns nothing until it knows
// its catalog's identity (ownsLease); without gossip it owns every table, unless committer claims
// elect the tables' committers: then exactly the tables whose claim it holds (one loop per table).
func (p *Process) owns(table string) bool {
	switch {
	case p.cluster != nil:
		return ownsLease(p.cluster, p.Cfg.Namespace, table)
	case p.peer != nil:
		return p.peer.members.Owns(table)
	}
	return true
}
