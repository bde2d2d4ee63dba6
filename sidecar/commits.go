package sidecar

import (
	"errors"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/lake"
)

// observeCommit is the process's observer of the lake's catalog commits (lake.WatchCommits): a
// commit still running past half its deadline is logged at warn and counted, one abandoned at the
// deadline too; every commit's answer says whether the catalog takes writes
// (siglake_catalog_writable, /readyz), which the read ping of watchCatalog cannot tell (a catalog
// on a full disk answers reads and refuses every commit).
func (p *Process) observeCommit(ev lake.CommitEvent) {
	log := p.Log.With(zap.String("table", ev.Table), zap.Duration("elapsed", ev.Elapsed), zap.Duration("deadline", ev.Deadline))
	switch ev.Phase {
	case lake.CommitSlow:
		p.Metrics.CommitSlow.WithLabelValues(ev.Table).Inc()
		log.Warn("catalog commit still running past half its deadline (--commit-timeout); it is abandoned at the deadline")
	case lake.CommitTimedOut:
		p.Metrics.CommitTimeouts.WithLabelValues(ev.Table).Inc()
		log.Warn("catalog commit abandoned at its deadline; its outcome is unknown: its files are kept and the retry re-reads the stream mark",
			zap.Error(ev.Err))
		p.setWritable(ev.Err)
	case lake.CommitDone:
		if ev.Err != nil && !lake.IsConflict(ev.Err) {
			p.setWritable(ev.Err)
			return
		}
		// A conflict is an answer too: the catalog validated the commit, it takes writes.
		p.setWritable(nil)
	}
}

// setWritable records whether the catalog takes this process's commits.
func (p *Process) setWritable(err error) {
	if err == nil {
		p.Metrics.CatalogWritable.Set(1)
		p.Ready.SetWriteError("")
		p.Status.Update(func(r *StatusReport) { r.CatalogWriteError = "" })
		return
	}
	msg := "catalog refuses commits: " + err.Error()
	if errors.Is(err, lake.ErrCommitDeadline) {
		msg = "catalog commit hung past --commit-timeout: " + err.Error()
	}
	p.Metrics.CatalogWritable.Set(0)
	p.Ready.SetWriteError(msg)
	p.Status.Update(func(r *StatusReport) { r.CatalogWriteError = msg })
}
