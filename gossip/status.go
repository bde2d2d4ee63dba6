package gossip

import (
	"time"

	"github.com/siglake/siglake/gossip/keys"
	"github.com/siglake/siglake/gossip/usermsg"
)

// Stats are counters and gauges for metrics (see docs/gossip.md for the
// metric names the sidecar exports them under).
type Stats struct {
	// Members counts known members by state (StateAlive, StateLeft,
	// StateDead); departed members are remembered for a while only.
	Members map[string]int `json:"members"`
	// TrackedTables is the number of tables this process follows.
	TrackedTables int `json:"tracked_tables"`
	// OwnedTables is the number of tracked tables Owns would allow now.
	OwnedTables int `json:"owned_tables"`
	// SettlingTables are owned in this view but may not be acted on yet:
	// settle period, first join attempt, or a name conflict hold.
	SettlingTables int `json:"settling_tables"`
	// LeaseTransitions counts tracked tables changing owner in this view.
	LeaseTransitions uint64 `json:"lease_transitions"`
	// JoinAttempts and JoinFailures count addresses tried by the join and
	// rejoin loop and those that could not be reached (DNS failures count
	// as one failed attempt per join entry).
	JoinAttempts uint64 `json:"join_attempts"`
	JoinFailures uint64 `json:"join_failures"`
	// SentBytes and ReceivedBytes count gossip payload bytes (UDP packets
	// and TCP streams), without IP/UDP/TCP headers.
	SentBytes     uint64 `json:"sent_bytes"`
	ReceivedBytes uint64 `json:"received_bytes"`
	// NameConflicts counts alive messages that claimed a known member name
	// from another address (a restart from a new address before the old
	// one was declared dead, or two processes given the same name).
	NameConflicts uint64 `json:"name_conflicts"`
	// RefusedLabel and RefusedKey count packets and streams refused for
	// another cluster label (or none) and for a key this member does not
	// hold (or no encryption): a process outside the cluster trying to talk
	// to it.
	RefusedLabel uint64 `json:"refused_label"`
	RefusedKey   uint64 `json:"refused_key"`
	// Keys is the number of encryption keys accepted (0: plaintext gossip).
	Keys int `json:"keys"`
	// PrimaryKey is the fingerprint of the key sent with ("" without
	// encryption): keys.Fingerprint, never the key.
	PrimaryKey string `json:"primary_key,omitempty"`
	// Messages count user messages received and dropped (Cluster.Handle).
	Messages usermsg.Stats `json:"messages"`
}

// Stats returns a snapshot of the counters.
func (c *Cluster) Stats() Stats {
	c.mu.Lock()
	now := c.now()
	s := Stats{
		Members:          map[string]int{StateAlive: 0, StateLeft: 0, StateDead: 0},
		TrackedTables:    len(c.v.leases),
		LeaseTransitions: c.v.transitions,
	}
	for _, m := range c.v.members {
		s.Members[m.State]++
	}
	s.NameConflicts = c.v.conflicts
	for _, l := range c.v.leases {
		if l.Owner != c.v.self || c.v.leaving {
			continue
		}
		if c.v.localMayAct(now, l) {
			s.OwnedTables++
		} else {
			s.SettlingTables++
		}
	}
	c.mu.Unlock()
	s.JoinAttempts = c.joinAttempts.Load()
	s.JoinFailures = c.joinFailures.Load()
	if c.tr != nil {
		s.SentBytes = c.tr.Sent()
		s.ReceivedBytes = c.tr.Received()
	}
	if c.mlLog != nil {
		s.RefusedLabel = c.mlLog.RefusedLabel.Load()
		s.RefusedKey = c.mlLog.RefusedKey.Load()
	}
	ks := c.Keys()
	s.Keys, s.PrimaryKey = ks.Keys, ks.Primary
	s.Messages = c.msgs.Stats()
	return s
}

// Status is the gossip part of /debug/status.
type Status struct {
	Self         string    `json:"self"`
	Disabled     bool      `json:"disabled,omitempty"`
	Standalone   bool      `json:"standalone"` // no peers configured
	Join         []string  `json:"join,omitempty"`
	SettlePeriod string    `json:"settle_period"`
	ViewSince    time.Time `json:"view_since"` // when the owner set last changed
	// JoinPending: the first attempt to join the configured peers has not
	// finished; this process owns nothing until it has.
	JoinPending bool `json:"join_pending,omitempty"`
	// HeldUntil: peers know another process under this name; this process
	// owns nothing until then (extended while conflicts keep arriving).
	HeldUntil time.Time `json:"held_until,omitzero"`
	// Refused: the peers this process tries to join refuse it (another
	// key or cluster label); it owns nothing while it sees no peer.
	Refused bool `json:"refused,omitempty"`
	// ClusterLabel is the label every packet carries; Encryption the
	// keyring (key count and the fingerprint of the key sent with).
	ClusterLabel string     `json:"cluster_label,omitempty"`
	Encryption   keys.State `json:"encryption"`
	Members      []Member   `json:"members"`
	Leases       []Lease    `json:"leases"`
	Stats        Stats      `json:"stats"`
}

// Status returns members, every tracked lease and the counters.
func (c *Cluster) Status() Status {
	st := c.Stats()
	c.mu.Lock()
	defer c.mu.Unlock()
	return Status{
		Self:         c.v.self,
		Disabled:     c.cfg.Disabled,
		Standalone:   c.v.standalone,
		Join:         append([]string(nil), c.cfg.Join...),
		SettlePeriod: c.cfg.SettlePeriod.String(),
		ViewSince:    c.v.changedAt,
		JoinPending:  c.v.joinPending,
		HeldUntil:    c.v.heldUntil,
		Refused:      c.v.refused && !c.v.sawPeer && c.v.peerCount() == 0,
		ClusterLabel: c.cfg.Label,
		Encryption:   c.Keys(),
		Members:      c.v.memberList(),
		Leases:       c.v.allLeases(c.now()),
		Stats:        st,
	}
}
