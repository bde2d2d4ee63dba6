package sidecar

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/localwal"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/lake/backoff"
	"github.com/siglake/siglake/sidecar/lake/catalogs"
)

// DefaultProvisionGrace: on Kubernetes a PostgreSQL operator (CloudNativePG, Zalando, Crunchy)
// accepts connections before it has created the role and the database; two minutes covers that
// without hiding a wrong --catalog for long.
const DefaultProvisionGrace = 2 * time.Minute

// openLake connects to the catalog, retrying with backoff while it is unreachable; meanwhile the
// drain cannot commit, so the backlog is kept and reported. A configuration error ends it, except
// that the long-running process (not once) waits up to ProvisionGrace for a catalog that refuses
// its role, database or grants, which may still be being created, rather than crash-looping.
func (p *Process) openLake(ctx context.Context, once bool) (*lake.Lake, error) {
	start := time.Now()
	for failures := 1; ; failures++ {
		cfg := config.LakeConfig(p.Cfg)
		cfg.WatchFull = p.observeFull
		l, err := lake.Open(ctx, cfg)
		if err == nil {
			p.setCatalog(nil)
			return l, nil
		}
		left := p.ProvisionGrace - time.Since(start)
		if errors.Is(err, catalogs.ErrBadConfig) && (once || !errors.Is(err, catalogs.ErrNotProvisioned) || left <= 0) {
			return nil, err
		}
		p.setCatalog(err)
		wait := catalogBackoff.Wait(failures, nil)
		if errors.Is(err, catalogs.ErrBadConfig) {
			wait = min(wait, left)
			p.Log.Error("the catalog refuses this process's role, database or grants; waiting in case they are still being "+
				"provisioned, then exiting: check --catalog / SIGLAKE_CATALOG and the database's users",
				zap.Error(err), zap.Duration("retry_in", wait), zap.Duration("exit_in", left.Round(time.Second)))
		} else {
			p.Log.Warn("catalog unreachable; retrying", zap.Error(err), zap.Duration("retry_in", wait))
		}
		observe := func() {
			if p.Cfg.Role.Drains() {
				if segs, serr := localwal.Scan(p.Cfg.WALDir); serr == nil {
					p.newDrain(nil).ObserveBacklog(segs, p.Now())
				}
			}
		}
		observe()
		// The backlog gauges keep the drain's scan cadence meanwhile.
		retry := time.After(wait)
	sleep:
		for {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-retry:
				break sleep
			case <-time.After(p.Cfg.DrainPollInterval):
				observe()
			}
		}
	}
}

// catalogBackoff paces openLake: 1 s, 2 s, ... 30 s between attempts to reach the catalog.
var catalogBackoff = backoff.Policy{Min: time.Second, Max: 30 * time.Second, Factor: 2, Jitter: backoff.NoJitter}

func (p *Process) setCatalog(err error) {
	if err == nil {
		p.Ready.Set(true, "")
		p.Metrics.CatalogUp.Set(1)
		p.Status.Update(func(r *StatusReport) { r.CatalogReady, r.CatalogError = true, "" })
		return
	}
	p.Ready.Set(false, err.Error())
	p.Metrics.CatalogUp.Set(0)
	p.Status.Update(func(r *StatusReport) { r.CatalogReady, r.CatalogError = false, err.Error() })
}

// followCatalog keeps the catalog's health current from here on: every commit's answer
// (observeCommit), a check now and every 5 s after (watchCatalog).
func (p *Process) followCatalog(ctx context.Context, l *lake.Lake) {
	l.WatchCommits(p.observeCommit)
	l.WatchFull(p.observeFull)
	p.setWritable("", nil) // open: writable until a commit says otherwise
	p.checkCatalog(ctx, l)
	go p.watchCatalog(ctx, l)
}

// watchCatalog checks the catalog every 5 s so /readyz follows an outage even while nothing
// commits, and so the catalog identity this process gossips follows the one stored.
func (p *Process) watchCatalog(ctx context.Context, l *lake.Lake) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.checkCatalog(ctx, l)
		p.forgetWriteErrors()
	}
}

// checkCatalog pings the catalog for /readyz, then reads the catalog identity, publishes it in
// /debug/status and gossips it, so leases are shared only with members of the same catalog. An
// identity that cannot be read or created (a catalog that refuses this principal namespace
// creation, say) does not make the pod unready: the drain still commits. It is logged when it
// changes and shown in /debug/status, and the process owns no table until it knows its catalog.
func (p *Process) checkCatalog(ctx context.Context, l *lake.Lake) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := l.Ping(cctx)
	p.setCatalog(err)
	if err != nil {
		return
	}
	id, err := l.CatalogID(cctx)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	var prev string
	p.Status.Update(func(r *StatusReport) {
		prev = r.CatalogIDError
		r.CatalogIDError = msg
		if err == nil {
			r.CatalogID = id
		}
	})
	if err != nil {
		if msg != prev && p.cluster != nil { // without gossip the identity only shows in status
			p.Log.Error("catalog identity unknown: this process maintains no table until it is (the drain goes on)",
				zap.String("namespace", lake.IdentityNamespace(p.Cfg.Namespace)), zap.Error(err))
		}
		return
	}
	p.catalogID.Store(id)
	if p.cluster != nil && p.cluster.Catalog() != id {
		if err := p.cluster.SetCatalog(id, 5*time.Second); err != nil {
			p.Log.Warn("gossiping the catalog identity failed; peers learn it at the next state exchange", zap.String("catalog_id", id), zap.Error(err))
		}
	}
}
