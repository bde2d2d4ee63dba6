package sidecar

import (
	"context"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/groupcommit"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/marks"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// advertisesGroupCommit says whether this process announces a committer in its gossip metadata
// ("gc"): it maintains tables (the committer is the table's maintenance owner) and group commit
// can be on. Pods hand off only to an owner that announces it, so a rolling upgrade or an owner
// with the option off keeps its pods committing directly.
func advertisesGroupCommit(p *Process, keys int) bool {
	return p.Cfg.GroupCommit && p.Cfg.Role.Maintains() && keys > 0
}

// startGroupCommit builds this process's side of group commit when it is on: the client that
// hands the drain's batches to their tables' committers, and (when it maintains tables) the
// committer that commits every pod's batches for the tables it owns. Off, every batch is committed
// directly, as before group commit; the reason is logged and shown in /debug/status.
func (p *Process) startGroupCommit(l *lake.Lake, once bool) {
	on, why := groupCommitEnabled(p.Cfg, p.cluster)
	if on && p.cluster == nil {
		on, why = p.startPeerGroup(l, once)
		p.peerWhy = why
	}
	if !on {
		if p.cluster != nil || p.Cfg.CatalogClaim && p.Cfg.GroupCommit {
			p.Log.Info("group commit off: every batch is committed directly", zap.String("reason", why))
		}
		return
	}
	var tr peermsg.Transport
	var g commit.Membership
	if p.peer != nil {
		tr, g = peermsg.Loopback(p.peer.tr), p.peer.members // an owner's own batches stay in the process
	} else {
		gc := groupCluster{c: p.cluster, ns: p.Cfg.Namespace}
		tr, g = peermsg.Loopback(gc), gc
	}
	obs := groupcommit.NewObserver(p.Metrics.GroupCommit, p.Log.Named("groupcommit"))
	maxWait, lowered := config.GroupCommitMaxWait(p.Cfg)
	if lowered {
		p.Log.Warn("--group-commit-max-wait would make pods wait for an answer past --group-commit-fallback-after: waiting less",
			zap.Duration("max_wait", p.Cfg.GroupCommitMaxWait), zap.Duration("fallback_after", p.Cfg.GroupCommitFallbackAfter),
			zap.Duration("interval", p.Cfg.GroupCommitInterval), zap.Duration("waiting", maxWait))
	}
	if p.Cfg.Role.Maintains() && !once {
		cfg := commit.CommitterConfig{Lake: l, Interval: p.Cfg.GroupCommitInterval,
			MaxWait: maxWait, TargetBytes: int64(p.Cfg.GroupCommitTargetMB) << 20,
			MaxFiles: p.Cfg.GroupCommitMaxFiles, QueueMax: p.Cfg.GroupCommitQueueMax, CommitTimeout: p.Cfg.CommitTimeout,
			Reserve: p.memory.For(membudget.LoopGroupCommit).TryReserve, Observer: obs, Now: p.Now}
		newMarkPruner(p.markPruneAfter(), obs).install(&cfg)
		p.committer = commit.NewCommitter(cfg, tr, g)
	}
	if p.Cfg.Role.Drains() {
		p.groupClient = commit.NewClient(commit.ClientConfig{Lake: l, Retry: lake.DefaultRetry, Interval: p.Cfg.GroupCommitInterval, MaxWait: maxWait,
			FallbackAfter: p.Cfg.GroupCommitFallbackAfter, CommitTimeout: p.Cfg.CommitTimeout,
			Every: p.heartbeatEvery, Observer: obs, Now: p.Now}, tr, g)
	}
	p.Log.Info("group commit on", zap.Bool("committer", p.committer != nil), zap.Bool("hand_off", p.groupClient != nil),
		zap.Duration("interval", p.Cfg.GroupCommitInterval), zap.Bool("catalog_claims", p.peer != nil))
}

// heartbeatEvery is how often this pod reports on a table to its committer, by a batch or a
// heartbeat: every batch age (commitBatch.maxAge or the committer's slow-down), and no more often
// than the drain scans. The committer counts a stream live for three of these.
func (p *Process) heartbeatEvery(table string) time.Duration {
	every := max(p.Cfg.CommitBatchMaxAge, p.Cfg.DrainPollInterval)
	if p.groupClient != nil {
		every = max(every, p.groupClient.SlowDown(table))
	}
	return every
}

// runCommitter runs the committer (if any) until done is cancelled, and publishes group commit's
// status every second meanwhile.
func (p *Process) runCommitter(done context.Context) {
	var wg sync.WaitGroup
	if p.committer != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := p.committer.Run(done); err != nil {
				p.Log.Error("group committer stopped", zap.Error(err))
			}
		}()
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if p.committer != nil {
			p.committer.Tidy()
		}
		p.publishGroupCommit()
		select {
		case <-done.Done():
			wg.Wait()
			p.publishGroupCommit()
			return
		case <-t.C:
		}
	}
}

// markPruneAfter is --mark-prune-after, raised to twice orphan gc's floor under --commit-timeout
// when it is shorter: a stream's mark must outlive every request of it a committer may still
// hold, or a late one could commit rows again after the prune forgot they were in.
func (p *Process) markPruneAfter() time.Duration {
	after, least := p.Cfg.MarkPruneAfter, 2*orphans.FloorMin(p.Cfg.CommitTimeout)
	if after != 0 && after < least {
		p.Log.Warn("--mark-prune-after is below twice orphan gc's floor under --commit-timeout: pruning after that instead",
			zap.Duration("mark_prune_after", after), zap.Duration("commit_timeout", p.Cfg.CommitTimeout), zap.Duration("pruning_after", least))
		return least
	}
	return after
}

// markPruner is the committer's extra table properties: once an hour per table, the marks of
// streams that committed nothing for after are pruned (marks.StreamProps). The hour counts from
// the last group commit that landed with a prune in it: an attempt that failed, or a commit whose
// outcome is unknown, spends no tick, and the next commit prunes again (pruning twice is harmless:
// it is recomputed from the table's properties each time).
type markPruner struct {
	after time.Duration
	obs   commit.Observer

	mu    sync.Mutex
	last  map[string]time.Time   // table -> the last prune that landed
	tried map[string]prunedTried // table -> the prune of the latest attempt
}

type prunedTried struct {
	at time.Time
	n  int
}

func newMarkPruner(after time.Duration, obs commit.Observer) *markPruner {
	return &markPruner{after: after, obs: obs, last: map[string]time.Time{}, tried: map[string]prunedTried{}}
}

// install sets cfg's Props and Landed to the pruner's; after 0 never prunes (nothing installed).
func (m *markPruner) install(cfg *commit.CommitterConfig) {
	if m.after <= 0 {
		return
	}
	cfg.Props, cfg.Landed = m.props, m.landed
}

// props is CommitterConfig.Props: the committing streams' seen, and once an hour the prune.
func (m *markPruner) props(t *table.Table, in []lake.GroupItem, now time.Time) (iceberg.Properties, []string) {
	name := t.Identifier()[len(t.Identifier())-1]
	m.mu.Lock()
	prune := now.Sub(m.last[name]) >= time.Hour
	m.mu.Unlock()
	streams := make([]string, len(in))
	for i, it := range in {
		streams[i] = it.Stream
	}
	set, remove, n := marks.StreamProps(t.Properties(), streams, now, m.after, prune)
	m.mu.Lock()
	if prune {
		m.tried[name] = prunedTried{at: now, n: n}
	}
	m.mu.Unlock()
	return set, remove
}

// landed is CommitterConfig.Landed: table's group commit landed, with the latest attempt's prune.
func (m *markPruner) landed(table string) {
	m.mu.Lock()
	p, ok := m.tried[table]
	delete(m.tried, table)
	if ok {
		m.last[table] = p.at
	}
	m.mu.Unlock()
	if ok && p.n > 0 {
		m.obs.MarksPruned(table, p.n)
	}
}
