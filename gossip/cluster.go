package gossip

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/siglake/siglake/gossip/internal/mllog"
	"github.com/siglake/siglake/gossip/internal/nodemeta"
	"github.com/siglake/siglake/gossip/internal/transport"
	"github.com/siglake/siglake/gossip/joinlist"
	"github.com/siglake/siglake/gossip/keys"
	"github.com/siglake/siglake/gossip/usermsg"
	"go.uber.org/zap"
)

// Cluster is this process's membership in the gossip cluster and its view
// of table leases. All methods are safe for concurrent use.
type Cluster struct {
	cfg  Config
	log  *zap.Logger
	ml   *memberlist.Memberlist // nil when Disabled
	tr   *transport.Counting    // nil when Disabled
	addr string                 // advertised host:port, "" when Disabled
	now  func() time.Time

	// lookupIP resolves a join entry's DNS name to all its addresses.
	lookupIP joinlist.LookupIP

	meta  *nodemeta.Delegate
	msgs  usermsg.Router // user messages, by kind
	mlLog *mllog.Writer  // nil when Disabled
	// keyring is memberlist's, shared with it; nil without encryption.
	keyring *memberlist.Keyring

	mu sync.Mutex
	v  *view

	joinAttempts atomic.Uint64
	joinFailures atomic.Uint64

	stop     chan struct{}
	stopOnce sync.Once
	// life serialises Leave and Shutdown: memberlist panics on a leave
	// after shutdown.
	life sync.Mutex
	down bool // under life
}

// Name is this member's node name.
func (c *Cluster) Name() string { return c.cfg.NodeName }

// Addr is the advertised gossip address (host:port) that peers can list in
// their join lists; "" when gossip is disabled.
func (c *Cluster) Addr() string { return c.addr }

// Owns reports whether this process may start maintenance work on table
// now: it is the owner in this process's view and has been for the settle
// period, its first join attempt has finished, no name conflict holds it,
// and it is not leaving. Call it before starting each unit of work; an
// in-flight rewrite may finish after it turns false (the catalog's commit
// validation makes a second owner safe). The table is tracked from now on.
func (c *Cluster) Owns(table string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v.owns(c.now(), table)
}

// Owner returns the owner of table in this process's view, and false when
// no alive member has the maintenance role. The table is tracked from now on.
func (c *Cluster) Owner(table string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.v.track(table).Owner
	return o, o != ""
}

// Catalog is this process's catalog identity, "" until SetCatalog.
func (c *Cluster) Catalog() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v.catalog
}

// SetCatalog records the identity of the catalog this process maintains
// tables of and gossips it, waiting up to timeout for the update to go out.
// From then on the process competes for a table only with members that
// advertise the same identity. Calling it again with the same id does
// nothing; a changed id (the stored identity was replaced) moves leases.
func (c *Cluster) SetCatalog(id string, timeout time.Duration) error {
	c.mu.Lock()
	if id == c.v.catalog {
		c.mu.Unlock()
		return nil
	}
	changes := c.v.setCatalog(c.now(), id)
	c.mu.Unlock()
	c.log.Info("gossip catalog identity set", zap.String("catalog", id))
	c.logChanges(changes)
	if err := c.publishMeta(timeout); err != nil {
		return fmt.Errorf("gossiping catalog identity: %w", err)
	}
	return nil
}

// publishMeta gossips this member's metadata as it is now, waiting up to
// timeout for the update to go out. It reads the state under the life lock,
// so two updates (catalog, offers) cannot publish out of order, and it never
// overwrites Leave's metadata.
func (c *Cluster) publishMeta(timeout time.Duration) error {
	if c.ml == nil {
		return nil
	}
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	catalog, leaving, offering := c.v.catalog, c.v.leaving, c.v.offering
	c.mu.Unlock()
	if c.down || leaving {
		return nil
	}
	b, err := c.selfMeta(catalog, false, offering)
	if err != nil {
		return err
	}
	c.meta.Set(b)
	return c.ml.UpdateNode(timeout)
}

// SetBinOffers gossips whether this member, as a table owner, has bins on
// offer (metadata "wo"), waiting up to timeout for the update to go out.
// Workers ask only members that offer, so an owner sets it when a pass leaves
// bins for workers and clears it when none are left. Setting the value it
// already has does nothing. Without Config.BinWorker nothing is offered.
func (c *Cluster) SetBinOffers(offering bool, timeout time.Duration) error {
	c.mu.Lock()
	if offering == c.v.offering || !c.cfg.BinWorker {
		c.mu.Unlock()
		return nil
	}
	c.v.offering = offering
	c.mu.Unlock()
	if err := c.publishMeta(timeout); err != nil {
		return fmt.Errorf("gossiping bin offers: %w", err)
	}
	return nil
}

// Track starts following tables, so their lease changes are logged and
// counted and they show in Status. Owns, Owner and Leases track implicitly.
func (c *Cluster) Track(tables ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range tables {
		c.v.track(t)
	}
}

// Forget stops following a table (it was dropped).
func (c *Cluster) Forget(table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.v.forget(table)
}

// Leases returns the leases of tables (tracking them), in table order. With
// no arguments it returns every tracked table's lease.
func (c *Cluster) Leases(tables ...string) []Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(tables) == 0 {
		return c.v.allLeases(now)
	}
	for _, t := range tables {
		c.v.track(t)
	}
	out := make([]Lease, 0, len(tables))
	for _, t := range tables {
		out = append(out, c.v.lease(now, t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	return out
}

// Members returns every member this process knows, alive ones and recently
// departed ones, in name order.
func (c *Cluster) Members() []Member {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v.memberList()
}

// Leave stops this process owning anything at once, then tells peers: first
// by marking its metadata "leaving" (peers move its leases on that update),
// then with memberlist's leave message. Each step waits up to timeout for
// its broadcast to go out. Peers thus move its leases without waiting for
// failure detection. Call Shutdown afterwards.
func (c *Cluster) Leave(timeout time.Duration) error {
	c.stopLoops()
	c.mu.Lock()
	c.v.leaving = true
	c.mu.Unlock()
	if c.ml == nil {
		return nil
	}
	c.life.Lock()
	defer c.life.Unlock()
	if c.down {
		return errors.New("gossip leave: already shut down")
	}
	c.mu.Lock()
	catalog := c.v.catalog
	c.mu.Unlock()
	b, err := c.selfMeta(catalog, true, false)
	if err != nil {
		return fmt.Errorf("gossip leave: %w", err)
	}
	c.meta.Set(b)
	var errs []error
	if err := c.ml.UpdateNode(timeout); err != nil {
		errs = append(errs, fmt.Errorf("announcing leaving metadata: %w", err))
	}
	// Give the update a few gossip rounds to spread before the leave
	// message, which gossip does not order after it: a peer that gets the
	// leave first reports the member dead instead of left (ownership moves
	// the same either way).
	time.Sleep(min(timeout, 3*c.cfg.GossipInterval))
	if err := c.ml.Leave(timeout); err != nil {
		errs = append(errs, fmt.Errorf("leave message: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("gossip leave: %w", err)
	}
	return nil
}

// Shutdown stops gossip without announcing anything (peers detect the
// departure as a failure unless Leave ran first). It is safe to call twice.
func (c *Cluster) Shutdown() error {
	c.stopLoops()
	c.mu.Lock()
	c.v.leaving = true
	c.mu.Unlock()
	if c.ml == nil {
		return nil
	}
	c.life.Lock()
	defer c.life.Unlock()
	if c.down {
		return nil
	}
	c.down = true
	c.mlLog.Closing.Store(true)
	if err := c.ml.Shutdown(); err != nil {
		return fmt.Errorf("gossip shutdown: %w", err)
	}
	return nil
}

// selfMeta is the metadata this member gossips about itself.
func (c *Cluster) selfMeta(catalog string, leaving, offering bool) ([]byte, error) {
	m := nodemeta.Meta{Roles: c.cfg.Roles, Version: c.cfg.Version, HTTPAddr: c.cfg.HTTPAddr, Catalog: catalog, Leaving: leaving}
	if c.cfg.GroupCommit {
		m.GroupCommit = nodemeta.GroupCommitVersion
	}
	if c.cfg.BinWorker {
		m.BinWorker = nodemeta.BinLeaseVersion
		m.BinOffers = offering && !leaving
	}
	return nodemeta.Encode(m, memberlist.MetaMaxSize)
}

// Send delivers msg (msg[0] is its kind) to the alive member named member,
// this process included: usermsg.Send. nil means the member's memberlist
// received it, not that a handler ran.
func (c *Cluster) Send(member string, msg []byte) error {
	if c.ml == nil {
		return fmt.Errorf("user message to %q: gossip is disabled", member)
	}
	err := usermsg.Send(c.ml, c.cfg.NodeName, member, msg)
	if errors.Is(err, usermsg.ErrNoMember) {
		c.mu.Lock()
		m, known := c.v.members[member]
		c.mu.Unlock()
		if known && m.State != StateAlive {
			return fmt.Errorf("user message to %q: the member is gone (%s): %w", member, m.State, err)
		}
	}
	return err
}

// Handle registers f for user messages whose first byte is kind. f must
// not block; from is the sender's name as its envelope states it, to be
// acted on only when Authenticated (usermsg.Handler says why).
func (c *Cluster) Handle(kind byte, f func(from string, msg []byte)) { c.msgs.Handle(kind, f) }

// Authenticated reports whether every message this member receives was
// sent by a holder of one of its keys: a keyring is set and no key
// migration step lets plaintext in.
func (c *Cluster) Authenticated() bool {
	return c.ml != nil && c.Keys().Keys > 0 && c.cfg.KeyMigration == ""
}

// SetKeys installs keys at runtime (keys.Install): keys[0] becomes the key
// this member sends with, every key in keys is accepted, installed keys not
// in keys are removed. It reports whether anything changed.
func (c *Cluster) SetKeys(ks [][]byte) (changed bool, err error) {
	return keys.Install(c.keyring, ks)
}

// Keys returns the keyring's state.
func (c *Cluster) Keys() keys.State { return keys.Of(c.keyring) }

// stopLoops ends the rejoin loop (a leaving member must not join again).
func (c *Cluster) stopLoops() { c.stopOnce.Do(func() { close(c.stop) }) }
