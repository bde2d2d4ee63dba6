package sidecar

import (
	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// Why group commit is off (GroupCommitReport.DisabledReason): each names what turns it on.
const (
	groupCommitOff          = "off: --group-commit / SIGLAKE_GROUP_COMMIT is false"
	groupCommitNoGossip     = "no gossip (--gossip-bind / SIGLAKE_GOSSIP_BIND) and no catalog claims (--catalog-claim / SIGLAKE_CATALOG_CLAIM): nothing elects a table's committer"
	groupCommitNoKey        = "gossip has no key (--gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE): a hand-off could not be authenticated"
	groupCommitKeyMigration = "gossip key migration (--gossip-key-migration / SIGLAKE_GOSSIP_KEY_MIGRATION): plaintext messages are accepted, so a hand-off could not be authenticated"
)

// groupCommitEnabled says whether this process hands batches off and commits other pods'
// batches: the option is on, gossip runs, and every message it receives is authenticated (a key,
// no key migration). A forged hand-off could move a stream's mark past rows nobody holds, so
// without authentication every pod commits directly, as before group commit. Without gossip,
// catalog claims on: on if startPeerGroup finds a key and an address (it says why not).
func groupCommitEnabled(cfg config.Config, c *gossip.Cluster) (on bool, reason string) {
	switch {
	case !cfg.GroupCommit:
		return false, groupCommitOff
	case c == nil && !cfg.CatalogClaim:
		return false, groupCommitNoGossip
	case c == nil:
		return true, ""
	case c.Keys().Keys == 0:
		return false, groupCommitNoKey
	case !c.Authenticated():
		return false, groupCommitKeyMigration
	}
	return true, ""
}

// groupCluster is group commit's transport and membership over the gossip cluster. Tables are
// names in the namespace; their leases are keyed lake.LeaseKey(ns, table), as maintenance's.
type groupCluster struct {
	c  *gossip.Cluster
	ns string
}

var (
	_ peermsg.Transport = groupCluster{}
	_ commit.Membership = groupCluster{}
)

func (g groupCluster) Name() string                                      { return g.c.Name() }
func (g groupCluster) Send(member string, msg []byte) error              { return g.c.Send(member, msg) }
func (g groupCluster) Handle(kind byte, f func(from string, msg []byte)) { g.c.Handle(kind, f) }
func (g groupCluster) Authenticated() bool                               { return g.c.Authenticated() }
func (g groupCluster) Catalog() string                                   { return g.c.Catalog() }

// Owns: this process commits a table exactly when it maintains it (one loop per table).
func (g groupCluster) Owns(table string) bool { return ownsLease(g.c, g.ns, table) }

// Committer is the table's lease owner if it advertises group commit and is alive and staying;
// otherwise none, and the pod commits directly (an owner of an older version, one leaving).
func (g groupCluster) Committer(table string) (string, bool) {
	owner, ok := g.c.Owner(lake.LeaseKey(g.ns, table))
	if !ok {
		return "", false
	}
	for _, m := range g.c.Members() {
		if m.Name == owner {
			if m.GroupCommit && m.State == gossip.StateAlive && !m.Leaving {
				return owner, true
			}
			break
		}
	}
	return "", false
}

// ownsLease says whether this member maintains table now. Nothing before the catalog's identity
// is known: until then it cannot tell which members share its tables.
func ownsLease(c *gossip.Cluster, ns, table string) bool {
	return c.Catalog() != "" && c.Owns(lake.LeaseKey(ns, table))
}

// groupCommitNotRunning: the option, gossip and key allow it, but neither side was started here.
const groupCommitNotRunning = "neither the hand-off nor the committer runs in this process"

// publishGroupCommit shows group commit in /debug/status: whether it is on (and why not), this
// pod's hand-offs waiting for an answer, and the tables this process commits for every pod.
func (p *Process) publishGroupCommit() { p.Status.GroupCommit(p.groupCommitReport()) }

func (p *Process) groupCommitReport() *GroupCommitReport {
	on, why := groupCommitEnabled(p.Cfg, p.cluster)
	if on && p.cluster == nil && p.peerWhy != "" {
		on, why = false, p.peerWhy
	}
	if on && p.groupClient == nil && p.committer == nil {
		on, why = false, groupCommitNotRunning
	}
	r := &GroupCommitReport{Enabled: on, DisabledReason: why, IntervalSeconds: p.Cfg.GroupCommitInterval.Seconds()}
	if on {
		r.Election = map[bool]string{true: "gossip", false: "catalog_claim"}[p.cluster != nil]
	}
	if p.groupClient != nil {
		s := p.groupClient.Status()
		r.Pod = &s
	}
	if p.committer != nil {
		s := p.committer.Status()
		r.Committer = &s
	}
	return r
}
