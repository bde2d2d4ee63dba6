package gossip

import (
	"slices"
	"sort"
	"time"

	"github.com/siglake/siglake/gossip/lease"
)

// Member states as this process reports them. memberlist's "suspect" is not
// reported: memberlist announces joins, leaves and deaths but not
// suspicion, so a suspect member counts as alive (and keeps its leases)
// until it is declared dead. That keeps ownership still through a
// suspicion that the member refutes.
const (
	StateAlive = "alive"
	StateLeft  = "left" // announced its own departure (Leave)
	StateDead  = "dead" // declared dead by failure detection
)

// Member is one node of the cluster as this process sees it.
type Member struct {
	Name     string   `json:"name"`
	Addr     string   `json:"addr"` // gossip host:port
	State    string   `json:"state"`
	Roles    []string `json:"roles"`
	Version  string   `json:"version,omitempty"`
	HTTPAddr string   `json:"http_addr,omitempty"`
	// Catalog is the identity of the catalog the member maintains tables
	// of; "" while it does not know it. Only members advertising the same
	// identity as this process are candidates for its tables' leases.
	Catalog string    `json:"catalog,omitempty"`
	Since   time.Time `json:"since"` // when this process saw it enter State
	Self    bool      `json:"self,omitempty"`
	// Leaving is true once the member announced it is leaving; it owns
	// nothing from then on.
	Leaving bool `json:"leaving,omitempty"`
	// GroupCommit: the member runs a group committer (Config.GroupCommit);
	// members of older versions read as false, so nothing is handed to them.
	GroupCommit bool `json:"group_commit,omitempty"`
	// BinWorker: the member takes leased bins (Config.BinWorker) of this
	// version's protocol; BinOffers: it has bins on offer (SetBinOffers).
	BinWorker bool `json:"bin_worker,omitempty"`
	BinOffers bool `json:"bin_offers,omitempty"`
}

// Lease is the ownership of one table in this process's view.
type Lease struct {
	Table string `json:"table"`
	// Owner is the member that owns the table, "" when no alive member
	// has the maintenance role.
	Owner string `json:"owner"`
	// Since is when Owner became the owner in this view.
	Since time.Time `json:"since"`
	// ActiveFrom is when Owner may start work: Since plus the settle
	// period, or Since itself for a process that runs without peers.
	ActiveFrom time.Time `json:"active_from"`
	// Active reports whether ActiveFrom had passed when the lease was read.
	Active bool `json:"active"`
	// Local reports whether Owner is this process.
	Local bool `json:"local,omitempty"`
	// Candidates are the members the owner was chosen among: the alive
	// maintenance members that share this process's catalog, by name.
	Candidates []string `json:"candidates"`
}

// LeaseChange is one table changing owner in this view.
type LeaseChange struct {
	Table string
	From  string
	To    string
}

// maxDeparted bounds how many left or dead members the view remembers for
// status pages; the oldest departures are forgotten first.
const maxDeparted = 64

// view is the deterministic core of the cluster: it takes membership
// observations and the time as arguments and answers who owns what. It
// does no I/O and reads no clock; Cluster feeds it from memberlist events.
type view struct {
	self   string
	settle time.Duration
	// standalone is true when no peers are configured: such a process
	// owns tables without waiting for a settle period while it has never
	// seen a peer.
	standalone bool
	sawPeer    bool
	// peerSince is when this process first saw an alive peer.
	peerSince time.Time
	// leaving is set by Leave: the process stops owning at once, before
	// its departure reaches the others.
	leaving bool
	// offering is what SetBinOffers last set: this member's "wo" metadata.
	offering bool
	// joinPending is true until the first attempt to join the configured
	// peers has finished: until then the view is known to be incomplete,
	// and settle periods count from the end of that attempt (joinedAt).
	joinPending bool
	joinedAt    time.Time
	// heldUntil stops this process acting while peers know another
	// process under its name at another address (a restart from a new
	// address that peers have not accepted yet: they gave its tables to
	// others). conflicts counts name conflicts seen, about any member.
	heldUntil time.Time
	conflicts uint64
	// selfConflictSince starts the current run of claims of this process's
	// name from another address while it is established; lastSelfConflict
	// is the latest of them. A run ends after a hold window without one.
	selfConflictSince, lastSelfConflict time.Time
	// refused is set while the last join attempt of a process that never
	// saw a peer got a refusal (another key or cluster label): it is outside
	// the cluster, not alone, and owns nothing while it sees no peer.
	refused bool

	// catalog is this process's catalog identity ("" until known). It is
	// authoritative for the self member: gossip may echo older metadata.
	catalog string

	members map[string]Member
	// cands are the alive members with the maintenance role that share
	// this process's catalog, sorted by name: the only input of the lease
	// math. Members of other catalogs maintain other lakes (a private
	// embedded catalog per pod is a lake per pod), so they never compete
	// for this process's tables. Members that advertise no catalog (not
	// known yet, or a version before catalog identities) compete among
	// themselves only.
	cands []lease.Candidate
	// changedAt is when cands last changed.
	changedAt time.Time

	leases      map[string]*Lease
	transitions uint64
}

func newView(self Member, settle time.Duration, standalone, joinPending bool, now time.Time) *view {
	v := &view{
		self:        self.Name,
		catalog:     self.Catalog,
		settle:      settle,
		standalone:  standalone,
		joinPending: joinPending,
		members:     map[string]Member{},
		leases:      map[string]*Lease{},
		changedAt:   now,
	}
	self.State = StateAlive
	v.observe(now, self)
	return v
}

// observe records what is now known about one member and returns the lease
// changes that follow, sorted by table.
func (v *view) observe(now time.Time, m Member) []LeaseChange {
	if old, ok := v.members[m.Name]; ok && old.State == m.State {
		m.Since = old.Since
	} else {
		m.Since = now
	}
	m.Roles = slices.Clone(m.Roles)
	m.Self = m.Name == v.self
	if m.Self {
		m.Catalog = v.catalog
	}
	if !m.Self && m.State == StateAlive && !v.sawPeer {
		v.sawPeer = true
		v.peerSince = now
	}
	v.members[m.Name] = m
	v.pruneDeparted()
	return v.recompute(now)
}

func (v *view) pruneDeparted() {
	var gone []Member
	for _, m := range v.members {
		if m.State != StateAlive {
			gone = append(gone, m)
		}
	}
	if len(gone) <= maxDeparted {
		return
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].Since.Before(gone[j].Since) })
	for _, m := range gone[:len(gone)-maxDeparted] {
		delete(v.members, m.Name)
	}
}

// recompute derives the candidate set and, if it changed, moves the leases
// whose owner changed.
func (v *view) recompute(now time.Time) []LeaseChange {
	var cands []lease.Candidate
	catalog := v.catalog
	for _, m := range v.members {
		if m.State == StateAlive && !m.Leaving && hasRole(m.Roles, RoleMaintenance) && m.Catalog == catalog {
			cands = append(cands, lease.NewCandidate(m.Name))
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].Name < cands[j].Name })
	if slices.Equal(cands, v.cands) {
		return nil
	}
	v.cands = cands
	v.changedAt = now
	var changes []LeaseChange
	for table, l := range v.leases {
		owner := lease.Pick(table, cands)
		if owner == l.Owner {
			continue
		}
		changes = append(changes, LeaseChange{Table: table, From: l.Owner, To: owner})
		l.Owner = owner
		l.Since = now
		l.ActiveFrom = v.activeFrom(now)
		v.transitions++
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Table < changes[j].Table })
	return changes
}

func (v *view) activeFrom(since time.Time) time.Time {
	if v.standalone && !v.sawPeer {
		return since
	}
	if v.joinedAt.After(since) {
		since = v.joinedAt
	}
	return since.Add(v.settle)
}

// setCatalog records this process's catalog identity and returns the lease
// changes that follow (a process that learns its catalog becomes a candidate
// among the members that share it, and stops competing with any other).
func (v *view) setCatalog(now time.Time, id string) []LeaseChange {
	if id == v.catalog {
		return nil
	}
	v.catalog = id
	self := v.members[v.self]
	return v.observe(now, self)
}

// joinDone records the end of the first join attempt: leases this view
// assigned before it settle from now on.
func (v *view) joinDone(now time.Time) {
	if !v.joinPending {
		return
	}
	v.joinPending = false
	v.joinedAt = now
	for _, l := range v.leases {
		l.ActiveFrom = v.activeFrom(l.Since)
	}
}

// hold stops this process acting until the given time (see heldUntil).
func (v *view) hold(until time.Time) {
	if until.After(v.heldUntil) {
		v.heldUntil = until
	}
}

// established reports whether peers have accepted this process under its
// name: its first join is done, it has seen peers for at least window, and
// no name conflict has held it within the last window (each conflict while
// not established holds it for window).
func (v *view) established(now time.Time, window time.Duration) bool {
	return v.sawPeer && !v.joinPending && !now.Before(v.heldUntil) && !now.Before(v.peerSince.Add(window))
}

// selfConflict records a claim of this process's name from another
// address and reports whether it holds this process (and whether it was
// established). A process that is not established holds for window from
// each claim: it is the newer one, which peers have not accepted yet. An
// established one ignores a passing claim (a newer process that peers
// refuse while this one is alive), but holds once the claims have gone on
// for longer than window: peers have then accepted the other process (this
// one was frozen, declared dead and replaced at a new address), and two
// owners of its tables would run side by side.
func (v *view) selfConflict(now time.Time, window time.Duration) (held, established bool) {
	established = v.established(now, window)
	if !established {
		v.hold(now.Add(window))
		v.selfConflictSince, v.lastSelfConflict = time.Time{}, time.Time{}
		return true, false
	}
	if v.lastSelfConflict.IsZero() || now.Sub(v.lastSelfConflict) > window {
		v.selfConflictSince = now
	}
	v.lastSelfConflict = now
	if now.Sub(v.selfConflictSince) > window {
		v.hold(now.Add(window))
		return true, true
	}
	return false, true
}

// localMayAct reports whether this process may act on a lease it owns:
// it is not leaving, has finished its first join, is not held, the lease
// has settled, and it is not refused by the peers it tries to join.
func (v *view) localMayAct(now time.Time, l *Lease) bool {
	if v.refused && !v.sawPeer && v.peerCount() == 0 {
		return false
	}
	return !v.leaving && !v.joinPending && !now.Before(v.heldUntil) && !now.Before(l.ActiveFrom)
}

// track starts following a table (if it is new) and returns its lease. A
// newly tracked table's owner has been the same since the candidate set
// last changed, so that is its Since.
func (v *view) track(table string) *Lease {
	if l, ok := v.leases[table]; ok {
		return l
	}
	l := &Lease{Table: table, Owner: lease.Pick(table, v.cands), Since: v.changedAt}
	l.ActiveFrom = v.activeFrom(l.Since)
	v.leases[table] = l
	return l
}

func (v *view) forget(table string) { delete(v.leases, table) }

// owns reports whether this process may start maintenance work on table now.
func (v *view) owns(now time.Time, table string) bool {
	l := v.track(table)
	return l.Owner == v.self && v.localMayAct(now, l)
}

// lease returns a copy of a tracked table's lease as seen at now.
func (v *view) lease(now time.Time, table string) Lease {
	lp := v.track(table)
	l := *lp
	l.Candidates = make([]string, len(v.cands))
	for i, c := range v.cands {
		l.Candidates[i] = c.Name
	}
	l.Local = l.Owner == v.self
	if l.Local {
		l.Active = v.localMayAct(now, lp)
	} else {
		l.Active = l.Owner != "" && !now.Before(l.ActiveFrom)
	}
	return l
}

// allLeases returns every tracked lease, sorted by table.
func (v *view) allLeases(now time.Time) []Lease {
	out := make([]Lease, 0, len(v.leases))
	for t := range v.leases {
		out = append(out, v.lease(now, t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// memberList returns every remembered member, sorted by name.
func (v *view) memberList() []Member {
	out := make([]Member, 0, len(v.members))
	for _, m := range v.members {
		m.Roles = slices.Clone(m.Roles)
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// aliveCount is the number of alive members, this process included.
func (v *view) aliveCount() int { return v.peerCount() + 1 }

// peerCount is the number of alive members other than this process.
func (v *view) peerCount() int {
	n := 0
	for _, m := range v.members {
		if m.State == StateAlive && !m.Self {
			n++
		}
	}
	return n
}
