package sidecar

import (
	"context"
	crand "crypto/rand"
	"math/rand/v2"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/binleases"
	"github.com/siglake/siglake/sidecar/lake/orphans"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/peermsg"
	"github.com/siglake/siglake/sidecar/work"
)

// advertisesBinLeases says whether this process takes part in bin leases (gossip meta "wk"): it
// maintains tables, --bin-leases is on and gossip has a key (leases and results are gossip
// messages, which only a key authenticates).
func advertisesBinLeases(p *Process, keys int) bool {
	return p.Cfg.BinLeases && p.Cfg.Role.Maintains() && keys > 0
}

// binLeasesOn says whether bin leases run here now, and why not.
func binLeasesOn(p *Process) (bool, string) {
	switch {
	case !p.Cfg.BinLeases:
		return false, "--bin-leases is off"
	case p.cluster == nil:
		return false, "gossip is off (--gossip-bind)"
	case !p.binWorker:
		return false, "gossip has no key (--gossip-key-file): leases travel only as authenticated gossip messages"
	}
	return true, ""
}

// startBinLeases starts this process's owner and worker of bin leases (docs/design/bin-leases.md)
// and returns what the maintainer offers through; nil, with the reason logged, when they are off.
// The owner answers under working (its commits in flight finish on shutdown); the worker stops
// asking and merging at stop. It waits for the catalog's identity (leases name it): until then
// the process owns no table either.
func (p *Process) startBinLeases(stop, working context.Context, m *maintain.Maintainer) *maintain.Leases {
	if on, why := binLeasesOn(p); !on {
		p.publishBinLeases(binleases.Status{DisabledReason: why})
		if p.cluster != nil {
			p.Log.Info("bin leases off: this process rewrites only the tables it owns", zap.String("reason", why))
		}
		return nil
	}
	catalog := p.waitCatalog(stop)
	if catalog == "" {
		return nil
	}
	tr := peermsg.Loopback(groupCluster{c: p.cluster, ns: p.Cfg.Namespace}) // an owner's own worker stays in the process
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand panics instead)
	maxAge := orphans.HandoffMaxAge(p.Cfg.CommitTimeout)
	ownerWait := p.Cfg.BinLeaseOwnerWait
	if ownerWait == 0 {
		ownerWait = time.Nanosecond // --bin-lease-owner-wait 0 keeps no bin from the owner; the book reads 0 as its default
	}
	book := work.NewBook(work.Config{MinDuration: p.Cfg.BinLeaseDuration, OwnerWait: ownerWait, MaxAge: maxAge}, rand.NewChaCha8(seed))
	check, commit, remove := m.OwnerCallbacks()
	log := p.Log.Named("binleases")
	obs := binleases.NewObserver(p.Metrics.BinLeases, log)
	ocfg := work.OwnerConfig{Book: book, Catalog: catalog, Authenticated: p.cluster.Authenticated,
		Check: check, Commit: commit, Remove: remove, Now: time.Now, Ended: m.LeaseEnded, Workers: p.binWorkers}
	obs.InstrumentOwner(&ocfg)
	owner := work.NewOwner(ocfg, tr)
	// A result waits for its answer about as long as the owner may still commit it, not one
	// lease duration: an owner's commits run one at a time, and behind a slow store a queued
	// result's turn comes later than that. maintain starts no commit past the lease's age bound,
	// and a commit started just before it may retry for about as long again (the commit's
	// attempts, each --commit-timeout); a lost answer only leaves the outputs to orphan gc.
	wcfg := work.WorkerConfig{Catalog: catalog, Owners: p.binOwners, Budget: p.binBudget, Merge: m.MergeLeased, Now: time.Now,
		AnswerWait: max(2*maxAge, p.Cfg.BinLeaseDuration),
		Done: func(g work.Grant, outcome string) {
			log.Info("leased bin ended", zap.String("table", g.Table), zap.String("lease", g.ID), zap.String("kind", g.Job.Kind),
				zap.String("partition", g.Job.Partition), zap.Int("inputs", len(g.Job.Inputs)), zap.String("outcome", outcome))
		}}
	obs.InstrumentWorker(&wcfg)
	worker := work.NewWorker(wcfg, tr)
	go func() {
		if err := owner.Run(working); err != nil {
			log.Error("bin-lease owner stopped", zap.Error(err))
		}
	}()
	go func() {
		if err := worker.Run(stop); err != nil {
			log.Error("bin-lease worker stopped", zap.Error(err))
		}
	}()
	go p.advertiseOffers(stop, book, obs)
	log.Info("bin leases on", zap.Duration("lease_duration", p.Cfg.BinLeaseDuration), zap.Duration("owner_wait", p.Cfg.BinLeaseOwnerWait),
		zap.Duration("lease_max_age", maxAge))
	return &maintain.Leases{Owner: owner, Book: book, Workers: p.binWorkers, Offered: p.advertiseOffering, Forget: obs.Forget,
		Usable: p.cluster.Authenticated}
}

// waitCatalog returns the catalog's identity once gossip knows it, or "" at stop.
func (p *Process) waitCatalog(stop context.Context) string {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if id := p.cluster.Catalog(); id != "" {
			return id
		}
		select {
		case <-stop.Done():
			return ""
		case <-t.C:
		}
	}
}

// advertiseOffers keeps this member's gossip meta "wo" true while its book has bins on offer, so
// workers ask it (and only it and the other offering owners), and publishes bin leases' status
// and gauges, every second.
func (p *Process) advertiseOffers(stop context.Context, book *work.Book, obs *binleases.Observer) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		p.advertiseOffering(book.Offering())
		st := obs.Snapshot(book, true)
		st.Enabled = true
		p.publishBinLeases(st)
		select {
		case <-stop.Done():
			_ = p.cluster.SetBinOffers(false, time.Second)
			return
		case <-t.C:
		}
	}
}

// advertiseOffering sets this member's gossip meta "wo" now (a pass just offered), rather than at
// the next tick of advertiseOffers.
func (p *Process) advertiseOffering(offering bool) {
	if err := p.cluster.SetBinOffers(offering, time.Second); err != nil {
		p.Log.Debug("gossiping bin offers failed; retried in a second", zap.Error(err))
	}
}

// binOwners are the members with bins on offer, alive and staying (this one included).
func (p *Process) binOwners() []string {
	var out []string
	for _, m := range p.cluster.Members() {
		if m.BinOffers && m.State == gossip.StateAlive && !m.Leaving && m.Catalog == p.cluster.Catalog() {
			out = append(out, m.Name)
		}
	}
	return out
}

// binWorkers is how many members of this catalog take leased bins now, this one included: the
// pass's budgets are per worker (plan.Input.Workers).
func (p *Process) binWorkers() int {
	n, catalog := 0, p.cluster.Catalog()
	for _, m := range p.cluster.Members() {
		if m.BinWorker && m.State == gossip.StateAlive && !m.Leaving && m.Catalog == catalog {
			n++
		}
	}
	return max(n, 1)
}

// binBudget is this worker's ask: the process memory budget's free bytes less what other loops
// wait for, and one merge's share (--merge-memory-bytes), so an owner leases no more bins than
// the worker can merge at once. A share above the whole budget asks for the whole budget, which
// is what a merge then gets (membudget cuts a reservation to its limit): asked for as is, no
// want would ever hold a merge and the table's bins would wait on offer forever.
func (p *Process) binBudget() work.Want {
	mergeBytes := p.Cfg.MergeMemoryBytes
	if mergeBytes <= 0 {
		mergeBytes = merge.DefaultMemoryBudget()
	}
	if p.memory == nil {
		return work.Want{MergeBytes: mergeBytes} // no budget to ask against (Run sets it before the loops)
	}
	s := p.memory.Snapshot()
	if s.LimitBytes > 0 {
		mergeBytes = min(mergeBytes, s.LimitBytes)
	}
	// What other loops wait for (a drain batch, the WAL buffer) is not free for bins: the budget
	// serves in order, so bins leased now would queue behind it, renewed, while an idle worker
	// could run them, and the drain would wait on merges of other members' tables. The worker's
	// own leased merges waiting are counted by work.Worker (granted bins not holding memory yet).
	var waiting int64
	for _, l := range s.Loops {
		if l.Loop != membudget.LoopLeasedMerge {
			waiting += l.WaitingBytes
		}
	}
	return work.Want{FreeBytes: max(s.LimitBytes-s.HeldBytes-waiting, 0), MergeBytes: mergeBytes}
}
