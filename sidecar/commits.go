package sidecar

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/drain/batches"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/deadline"
)

// writeErrors are the tables whose last commit failed, with why. Kept per table: one table whose
// commits are refused must keep the process unwritable while other tables commit, or the signal
// (and the alert on it) would flap with every other commit.
type writeErrors struct {
	mu   sync.Mutex
	errs map[string]string
}

// observeCommit is the process's observer of the lake's catalog commits (lake.WatchCommits): a
// commit still running past half its deadline is logged at warn and counted, one abandoned at the
// deadline too; every commit's answer says whether the catalog takes writes
// (siglake_catalog_writable, /readyz), which the read ping of watchCatalog cannot tell (a catalog
// on a full disk answers reads and refuses every commit).
func (p *Process) observeCommit(ev deadline.CommitEvent) {
	log := p.Log.With(zap.String("table", ev.Table), zap.Duration("elapsed", ev.Elapsed), zap.Duration("deadline", ev.Deadline))
	switch ev.Phase {
	case deadline.CommitSlow:
		p.Metrics.CommitSlow.WithLabelValues(ev.Table).Inc()
		log.Warn("catalog commit still running past half its deadline (--commit-timeout); it is abandoned at the deadline")
	case deadline.CommitTimedOut:
		p.Metrics.CommitTimeouts.WithLabelValues(ev.Table).Inc()
		log.Warn("catalog commit abandoned at its deadline; its outcome is unknown: its files are kept and the retry re-reads the stream mark",
			zap.Error(ev.Err))
		p.Metrics.CommitsAbandonedInFlight.Set(float64(ev.Abandoned))
		p.setWritable(ev.Table, ev.Err)
	case deadline.CommitAbandonedEnded:
		// A late answer says nothing of the catalog now; the retry re-read the mark already.
		p.Metrics.CommitsAbandonedInFlight.Set(float64(ev.Abandoned))
		log.Info("an abandoned catalog commit returned", zap.NamedError("late_answer", ev.Err))
	case deadline.CommitDone:
		if ev.Err != nil && !lake.IsConflict(ev.Err) {
			p.setWritable(ev.Table, ev.Err)
			return
		}
		// A conflict is an answer too: the catalog validated the commit, it takes writes.
		p.setWritable(ev.Table, nil)
	}
}

// observeFull is the process's observer of the lake's waits for a catalog with no connection
// left (lake.WatchFull): counted, and logged at most every fullLogEvery so a fleet-wide herd does
// not flood the log.
func (p *Process) observeFull(ev lake.FullEvent) {
	p.Metrics.CatalogFullWaits.WithLabelValues(ev.Op).Inc()
	now := time.Now().UnixNano()
	last := p.fullLogged.Load()
	if now-last < int64(fullLogEvery) || !p.fullLogged.CompareAndSwap(last, now) {
		return
	}
	p.Log.Warn("the catalog has no connection left; the call waits and is made again (siglake_catalog_full_waits_total; size max_connections for every pod and committer, docs/operations.md)",
		zap.String("op", ev.Op), zap.Duration("wait", ev.Wait), zap.Error(ev.Err))
}

// fullLogEvery spaces observeFull's log lines.
const fullLogEvery = 10 * time.Second

// setWritable records whether the catalog took table's last commit: a failure marks the table,
// only a success (or a conflict) on that table clears it. table "" with err nil clears every
// table (the catalog was opened).
func (p *Process) setWritable(table string, err error) {
	w := &p.writeErrs
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil && table == "":
		w.errs = nil
	case err == nil:
		delete(w.errs, table)
	default:
		msg := "catalog refuses commits: " + err.Error()
		if errors.Is(err, deadline.ErrCommitDeadline) {
			msg = "catalog commit hung past --commit-timeout: " + err.Error()
		}
		if w.errs == nil {
			w.errs = map[string]string{}
		}
		w.errs[table] = msg
	}
	p.publishWritable()
}

// forgetWriteErrors drops the failing tables the process no longer commits to: neither owned
// nor with sealed segments waiting in its WAL. Nothing would ever clear them otherwise.
func (p *Process) forgetWriteErrors() {
	w := &p.writeErrs
	w.mu.Lock()
	n := len(w.errs)
	w.mu.Unlock()
	if n == 0 {
		return
	}
	active := map[string]bool{}
	for _, t := range p.Status.Snapshot(p.Now()).Owned {
		active[t] = true
	}
	if p.Cfg.Role.Drains() {
		for _, s := range p.sealedSegments() {
			active[s.Table] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for t := range w.errs {
		if !active[t] {
			delete(w.errs, t)
		}
	}
	p.publishWritable()
}

// publishWritable shows the failing tables in the gauge, /readyz and the status; w.mu is held.
func (p *Process) publishWritable() {
	errs := p.writeErrs.errs
	if len(errs) == 0 {
		p.Metrics.CatalogWritable.Set(1)
		p.Ready.SetWriteError("")
		p.Status.Update(func(r *StatusReport) { r.CatalogWriteError, r.CatalogWriteErrors = "", nil })
		return
	}
	tables := make([]string, 0, len(errs))
	for t := range errs {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	byTable := make(map[string]string, len(errs))
	for t, m := range errs {
		byTable[t] = m
	}
	msg := errs[tables[0]]
	if len(tables) > 1 {
		msg = fmt.Sprintf("commits failing on %d tables (%s); %s: %s", len(tables), strings.Join(tables, ", "), tables[0], msg)
	} else {
		msg = tables[0] + ": " + msg
	}
	p.Metrics.CatalogWritable.Set(0)
	p.Ready.SetWriteError(msg)
	p.Status.Update(func(r *StatusReport) { r.CatalogWriteError, r.CatalogWriteErrors = msg, byTable })
}

// sealedSegments are the sealed segments in this process's WAL dirs (what can be scanned).
func (p *Process) sealedSegments() []localwal.SegmentInfo {
	dirs := []string{p.Cfg.WALDir}
	if p.Cfg.CatalogClaim {
		streams, _, _ := batches.StreamDirs(p.Cfg.WALDir)
		for i, s := range streams {
			streams[i] = filepath.Join(p.Cfg.WALDir, s)
		}
		dirs = streams
	}
	segs, _, _ := batches.ScanDirs(dirs)
	return segs
}
