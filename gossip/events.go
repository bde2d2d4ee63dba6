package gossip

import (
	"math"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/siglake/siglake/gossip/internal/nodemeta"
	"go.uber.org/zap"
)

// observe feeds one membership event into the view and logs what moved.
func (c *Cluster) observe(m Member) {
	c.mu.Lock()
	old, known := c.v.members[m.Name]
	changes := c.v.observe(c.now(), m)
	c.mu.Unlock()

	if m.Name != c.cfg.NodeName && (!known || old.State != m.State) {
		c.log.Info("gossip member "+m.State,
			zap.String("member", m.Name), zap.String("addr", m.Addr), zap.Strings("roles", m.Roles))
	}
	c.logChanges(changes)
}

func (c *Cluster) logChanges(changes []LeaseChange) {
	if len(changes) == 0 {
		return
	}
	self := c.cfg.NodeName
	gained, lost := 0, 0
	for _, ch := range changes {
		fields := []zap.Field{zap.String("table", ch.Table), zap.String("old_owner", ch.From), zap.String("new_owner", ch.To)}
		switch self {
		case ch.To:
			gained++
			c.log.Info("table lease gained", append(fields, zap.Duration("acting_after", c.cfg.SettlePeriod))...)
		case ch.From:
			lost++
			c.log.Info("table lease lost", fields...)
		default:
			c.log.Debug("table lease moved", fields...)
		}
	}
	c.log.Info("table leases moved", zap.Int("moved", len(changes)), zap.Int("gained", gained), zap.Int("lost", lost))
}

// events receives memberlist's membership events. memberlist calls these
// with its node lock held, so they copy what they need and return quickly.
type events struct{ c *Cluster }

func (e *events) NotifyJoin(n *memberlist.Node)   { e.c.observe(e.c.member(n, StateAlive)) }
func (e *events) NotifyUpdate(n *memberlist.Node) { e.c.observe(e.c.member(n, StateAlive)) }

// NotifyLeave cannot tell a leave from a death (memberlist does not fill
// Node.State), so a member that announced it was leaving is "left" and any
// other is "dead".
func (e *events) NotifyLeave(n *memberlist.Node) {
	m := e.c.member(n, StateDead)
	if m.Leaving {
		m.State = StateLeft
	}
	e.c.observe(m)
}

// NotifyConflict is memberlist's report of an alive message that claims a
// known name from another address.
func (e *events) NotifyConflict(existing, other *memberlist.Node) {
	e.c.conflict(existing.Name, existing.Address(), other.Address())
}

// conflict handles a name conflict. When the name is ours and we are new,
// peers still know our previous process (we restarted from a new address
// before it was declared dead). They accept us only once it is dead,
// DeadNodeReclaimTime has passed and one of our push/pulls reaches them;
// until then they have given our tables to others, and nothing tells us
// when they accept us. So we act on nothing for the worst case of that
// sequence (conflictHold), counted from the last conflict we see.
//
// Once peers have accepted us (established: a whole hold window with peers
// and no conflict), a claim of our name from another address comes from a
// newer process, which peers refuse while we are alive: a passing claim must
// not hold us, or any keyed process could keep us idle at will. But claims
// that go on for longer than a hold window mean peers took the other process
// (we were frozen, declared dead and replaced): then we hold too, rather
// than own our tables beside the replacement (view.selfConflict).
func (c *Cluster) conflict(name, known, claimed string) {
	self := name == c.cfg.NodeName
	c.mu.Lock()
	c.v.conflicts++
	var hold time.Duration
	held, established := false, false
	if self {
		hold = conflictHold(c.cfg, c.v.aliveCount())
		held, established = c.v.selfConflict(c.now(), hold)
	}
	c.mu.Unlock()
	if self && established && !held {
		c.log.Warn("gossip: another process claims this member's name from another address; peers keep this one, and so does this process",
			zap.String("member", name), zap.String("this_addr", known), zap.String("other_addr", claimed))
		return
	}
	if self && established {
		c.log.Warn("gossip: another process has claimed this member's name for longer than a hold window, so peers took it; owning nothing while the claims go on",
			zap.String("member", name), zap.String("this_addr", known), zap.String("other_addr", claimed), zap.Duration("hold", hold))
		return
	}
	if self { // known is this process's own address here
		c.log.Warn("gossip peers know another process under this member's name; owning nothing until they can have accepted this one",
			zap.String("member", name), zap.String("this_addr", known), zap.String("other_addr", claimed), zap.Duration("hold", hold))
		return
	}
	c.log.Warn("gossip member name claimed from two addresses (restart from a new address, or two processes with one name)",
		zap.String("member", name), zap.String("known_addr", known), zap.String("claimed_addr", claimed))
}

// conflictHold is the longest it can take peers to accept a restarted
// member at a new address: the old process's longest suspicion timeout
// (memberlist: SuspicionMaxTimeoutMult * SuspicionMult * max(1, log10(n)) *
// ProbeInterval), then DeadNodeReclaimTime, then one push/pull interval for
// our next state exchange, plus the settle period.
func conflictHold(cfg Config, n int) time.Duration {
	scale := math.Max(1, math.Log10(float64(max(n, 1))))
	suspicion := time.Duration(float64(cfg.SuspicionMaxTimeoutMult*cfg.SuspicionMult) * scale * float64(cfg.ProbeInterval))
	return suspicion + cfg.DeadNodeReclaimTime + cfg.PushPullInterval + cfg.SettlePeriod
}

// member converts a memberlist node, reading its metadata. Unreadable
// metadata leaves the member without roles, so it owns nothing.
func (c *Cluster) member(n *memberlist.Node, state string) Member {
	m := Member{Name: n.Name, Addr: n.Address(), State: state}
	md, err := nodemeta.Decode(n.Meta)
	if err != nil {
		c.log.Warn("gossip member metadata unreadable; it will own no table", zap.String("member", n.Name), zap.Error(err))
		return m
	}
	m.Roles, m.Version, m.HTTPAddr, m.Catalog, m.Leaving = md.Roles, md.Version, md.HTTPAddr, md.Catalog, md.Leaving
	m.GroupCommit = md.GroupCommit == nodemeta.GroupCommitVersion
	m.BinWorker = md.BinWorker == nodemeta.BinLeaseVersion
	m.BinOffers = md.BinOffers && m.BinWorker // offers of another protocol are not ours to take
	return m
}
