package sidecar

import (
	"context"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/groupcommit"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/membership"
	"github.com/siglake/siglake/sidecar/peerhttp"
)

// Why group commit without gossip does not run (GroupCommitReport.DisabledReason).
const groupCommitClaimsNoKey = "no gossip: committers elected by catalog claims need --gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE, the keys hand-offs over HTTP are signed with"

// peerGroup is group commit where gossip is off: committer claims in the catalog elect each
// table's committer, and batches travel signed over HTTP on the --http-addr listener.
type peerGroup struct {
	tr      *peerhttp.Transport
	claims  *claim.Manager
	members *groupcommit.ClaimMembership
	keys    *groupcommit.Keys
}

// startPeerGroup prepares group commit without gossip: the key, the advertised address, the
// transport and the committer claim manager (taking claims when this process maintains tables
// and runs a committer, reading them otherwise). ok false: the reason it cannot run.
func (p *Process) startPeerGroup(l *lake.Lake, once bool) (ok bool, reason string) {
	ks, err := config.GossipKeys(p.Cfg)
	if err != nil {
		return false, err.Error()
	}
	if len(ks) == 0 {
		return false, groupCommitClaimsNoKey
	}
	addr, why := config.PeerAddr(p.Cfg, p.httpAddr, os.Getenv)
	if why != "" {
		return false, why
	}
	keys := groupcommit.NewKeys(ks)
	tr, err := peerhttp.New(peerhttp.Config{Self: addr, Keys: keys.Get,
		Observer: &groupcommit.PeerObserver{Metrics: p.Metrics.GroupCommit, Log: p.Log.Named("peer")}})
	if err != nil {
		return false, err.Error()
	}
	takes := p.Cfg.Role.Maintains() && !once
	m := &claim.Manager{Lake: l, Holder: p.Cfg.NodeName, TTL: p.Cfg.CatalogClaimTTL, Now: time.Now, ReadOnly: !takes,
		Observer: groupcommit.ClaimLog{Log: p.Log.Named("committer-claims")},
		Streams: func() ([]string, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			return l.ListTables(ctx)
		},
		OnReport: func(r claim.Report) { p.Status.Update(func(s *StatusReport) { s.CommitterClaims = &r }) }}
	if takes {
		m.Addr = addr
	}
	p.peer = &peerGroup{tr: tr, claims: m, keys: keys,
		members: &groupcommit.ClaimMembership{Claims: m, Keys: keys, CatalogID: p.catalogIDNow}}
	p.peerHandler.Store(tr)
	return true, ""
}

// runPeerGroup ticks the committer claims and re-reads the key file until work is done; release
// stops the ticks and gives up this process's claims (call it once the committer stopped).
func (p *Process) runPeerGroup(work context.Context) (release func()) {
	g := p.peer
	if err := g.claims.Tick(work); err != nil && work.Err() == nil {
		p.Log.Warn("first committer claim tick failed; retrying every third of the TTL", zap.Error(err))
	}
	ticks, cancel := context.WithCancel(work)
	done := make(chan struct{})
	go func() { defer close(done); g.claims.Run(ticks) }()
	if p.Cfg.GossipKeyFile != "" {
		go membership.WatchKeys(ticks, g.keys, p.Cfg.GossipKeyFile, membership.KeyReload, p.Log.Named("peer"))
	}
	return func() {
		cancel()
		<-done
		if g.claims.ReadOnly {
			return
		}
		rctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		if err := g.claims.Release(rctx); err != nil {
			p.Log.Warn("could not release committer claims; the others take the tables once they expire", zap.Error(err))
		}
	}
}

// servePeer is the peer message path of the HTTP listener: the transport once group commit
// without gossip runs, 503 before and where it does not.
func (p *Process) servePeer(w http.ResponseWriter, r *http.Request) {
	tr := p.peerHandler.Load()
	if tr == nil {
		http.Error(w, "group commit over HTTP does not run in this process", http.StatusServiceUnavailable)
		return
	}
	tr.ServeHTTP(w, r)
}

// catalogIDNow is the catalog identity as last read by checkCatalog ("" until then).
func (p *Process) catalogIDNow() string {
	id, _ := p.catalogID.Load().(string)
	return id
}
