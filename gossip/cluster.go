package gossip

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// aloneRetry is how often a member that sees no peer retries its join list,
// so pods started together find each other within seconds rather than a
// full RejoinInterval.
const aloneRetry = 2 * time.Second

// Cluster is this process's membership in the gossip cluster and its view
// of table leases. All methods are safe for concurrent use.
type Cluster struct {
	cfg  Config
	log  *zap.Logger
	ml   *memberlist.Memberlist // nil when Disabled
	tr   *countingTransport     // nil when Disabled
	addr string                 // advertised host:port, "" when Disabled
	now  func() time.Time

	// lookupIP resolves a join entry's DNS name to all its addresses.
	lookupIP func(ctx context.Context, host string) ([]net.IP, error)

	meta  *delegate
	mlLog *zapWriter // nil when Disabled
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

// Start validates cfg, binds the gossip port, and starts joining cfg.Join
// in the background (Start does not wait for peers). log may be nil.
func Start(cfg Config, log *zap.Logger) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gossip configuration: %w", err)
	}
	if log == nil {
		log = zap.NewNop()
	}
	log = log.Named("gossip")
	metaBytes, err := encodeMeta(meta{Roles: cfg.Roles, Version: cfg.Version, HTTPAddr: cfg.HTTPAddr, Catalog: cfg.Catalog}, memberlist.MetaMaxSize)
	if err != nil {
		return nil, err
	}
	cfg.Join = append([]string(nil), cfg.Join...)
	cfg.Roles = append([]string(nil), cfg.Roles...)
	keys := cfg.Keys
	cfg.Keys = nil // the keyring holds them from here on; SetKeys changes them
	c := &Cluster{
		cfg:  cfg,
		log:  log,
		now:  time.Now,
		stop: make(chan struct{}),
		lookupIP: func(ctx context.Context, host string) ([]net.IP, error) {
			return net.DefaultResolver.LookupIP(ctx, "ip", host)
		},
	}
	self := Member{Name: cfg.NodeName, State: StateAlive, Roles: cfg.Roles, Version: cfg.Version, HTTPAddr: cfg.HTTPAddr, Catalog: cfg.Catalog}
	standalone := cfg.Disabled || len(cfg.Join) == 0
	c.v = newView(self, cfg.SettlePeriod, standalone, !standalone, c.now())
	if cfg.Disabled {
		log.Info("gossip disabled: this process is the only member", zap.String("node", cfg.NodeName), zap.Strings("roles", cfg.Roles))
		return c, nil
	}

	mlLog, mlWriter := newMemberlistLogger(log)
	c.mlLog = mlWriter
	bindAddr := cfg.BindAddr
	if bindAddr == "" {
		bindAddr = "0.0.0.0"
	}
	nt, err := newNetTransport(bindAddr, cfg.BindPort, mlLog)
	if err != nil {
		return nil, fmt.Errorf("binding gossip to %s: %w", net.JoinHostPort(bindAddr, strconv.Itoa(cfg.BindPort)), err)
	}
	port := nt.GetAutoBindPort()
	c.tr = newCountingTransport(nt)

	mc := memberlist.DefaultLANConfig()
	mc.Name = cfg.NodeName
	mc.BindAddr = bindAddr
	mc.BindPort = port
	mc.AdvertiseAddr = cfg.AdvertiseAddr
	mc.AdvertisePort = cfg.AdvertisePort
	if mc.AdvertisePort == 0 {
		mc.AdvertisePort = port
	}
	mc.Transport = c.tr
	mc.Logger = mlLog
	mc.Label = cfg.Label
	if len(keys) > 0 {
		// memberlist's defaults refuse unencrypted packets and streams once
		// a keyring is set; a key migration relaxes that for one step.
		mc.GossipVerifyIncoming = cfg.KeyMigration == ""
		mc.GossipVerifyOutgoing = cfg.KeyMigration != KeyMigrationAccept
		kr, err := memberlist.NewKeyring(keys[1:], keys[0])
		if err != nil {
			_ = c.tr.Shutdown()
			return nil, fmt.Errorf("gossip keys (SIGLAKE_GOSSIP_KEY_FILE): %w", err)
		}
		mc.Keyring = kr
		c.keyring = kr
	}
	c.meta = &delegate{meta: metaBytes}
	mc.Delegate = c.meta
	mc.Events = &events{c: c}
	mc.Conflict = &events{c: c}
	mc.ProbeInterval = cfg.ProbeInterval
	mc.ProbeTimeout = cfg.ProbeTimeout
	mc.SuspicionMult = cfg.SuspicionMult
	mc.SuspicionMaxTimeoutMult = cfg.SuspicionMaxTimeoutMult
	mc.GossipInterval = cfg.GossipInterval
	mc.PushPullInterval = cfg.PushPullInterval
	mc.TCPTimeout = cfg.TCPTimeout
	mc.DeadNodeReclaimTime = cfg.DeadNodeReclaimTime
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = c.tr.Shutdown()
		hint := ""
		if cfg.AdvertiseAddr == "" {
			hint = " (set SIGLAKE_GOSSIP_ADVERTISE if no private address can be found)"
		}
		return nil, fmt.Errorf("starting gossip member %q%s: %w", cfg.NodeName, hint, err)
	}
	c.ml = ml
	c.addr = ml.LocalNode().Address()
	log.Info("gossip started",
		zap.String("node", cfg.NodeName),
		zap.String("addr", c.addr),
		zap.Strings("join", cfg.Join),
		zap.Strings("roles", cfg.Roles),
		zap.Duration("settle", cfg.SettlePeriod),
		zap.String("cluster_label", cfg.Label),
		zap.String("key_migration", cfg.KeyMigration),
		zap.Int("keys", len(keys)),
		zap.String("primary_key", c.Keys().Primary))
	if len(cfg.Join) > 0 {
		go c.rejoinLoop()
	}
	return c, nil
}

// newNetTransport binds memberlist's UDP+TCP transport. A dynamic port (0)
// is bound for TCP and then for UDP, which another process can take in
// between, so that case is retried like memberlist itself does.
func newNetTransport(addr string, port int, log *log.Logger) (*memberlist.NetTransport, error) {
	tries := 1
	if port == 0 {
		tries = 10
	}
	var err error
	for range tries {
		var nt *memberlist.NetTransport
		nt, err = memberlist.NewNetTransport(&memberlist.NetTransportConfig{
			BindAddrs: []string{addr},
			BindPort:  port,
			Logger:    log,
		})
		if err == nil {
			return nt, nil
		}
	}
	return nil, err
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
	leaving := c.v.leaving
	c.mu.Unlock()
	c.log.Info("gossip catalog identity set", zap.String("catalog", id))
	c.logChanges(changes)
	if c.ml == nil || leaving {
		return nil
	}
	b, err := encodeMeta(meta{Roles: c.cfg.Roles, Version: c.cfg.Version, HTTPAddr: c.cfg.HTTPAddr, Catalog: id}, memberlist.MetaMaxSize)
	if err != nil {
		return err
	}
	c.life.Lock()
	defer c.life.Unlock()
	c.mu.Lock()
	leaving = c.v.leaving // Leave may have begun meanwhile: never overwrite its leaving metadata
	c.mu.Unlock()
	if c.down || leaving {
		return nil
	}
	c.meta.set(b)
	if err := c.ml.UpdateNode(timeout); err != nil {
		return fmt.Errorf("gossiping catalog identity: %w", err)
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
	// encryption): KeyFingerprint, never the key.
	PrimaryKey string `json:"primary_key,omitempty"`
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
		s.SentBytes = c.tr.sent.Load()
		s.ReceivedBytes = c.tr.recv.Load()
	}
	if c.mlLog != nil {
		s.RefusedLabel = c.mlLog.refusedLabel.Load()
		s.RefusedKey = c.mlLog.refusedKey.Load()
	}
	ks := c.Keys()
	s.Keys, s.PrimaryKey = ks.Keys, ks.Primary
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
	ClusterLabel string   `json:"cluster_label,omitempty"`
	Encryption   KeyState `json:"encryption"`
	Members      []Member `json:"members"`
	Leases       []Lease  `json:"leases"`
	Stats        Stats    `json:"stats"`
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
	b, err := encodeMeta(meta{Roles: c.cfg.Roles, Version: c.cfg.Version, HTTPAddr: c.cfg.HTTPAddr, Catalog: catalog, Leaving: true}, memberlist.MetaMaxSize)
	if err != nil {
		return fmt.Errorf("gossip leave: %w", err)
	}
	c.meta.set(b)
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
	c.mlLog.closing.Store(true)
	if err := c.ml.Shutdown(); err != nil {
		return fmt.Errorf("gossip shutdown: %w", err)
	}
	return nil
}

// stopLoops ends the rejoin loop (a leaving member must not join again).
func (c *Cluster) stopLoops() { c.stopOnce.Do(func() { close(c.stop) }) }

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

// rejoinLoop joins the configured peers at once and then periodically, so a
// member that started before the others, or was cut off, finds them.
func (c *Cluster) rejoinLoop() {
	first := true
	for {
		c.rejoin()
		if first {
			first = false
			c.mu.Lock()
			c.v.joinDone(c.now())
			c.mu.Unlock()
		}
		wait := c.cfg.RejoinInterval
		c.mu.Lock()
		alone := c.v.peerCount() == 0
		c.mu.Unlock()
		if alone && wait > aloneRetry {
			wait = aloneRetry
		}
		t := time.NewTimer(wait)
		select {
		case <-c.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// rejoin resolves the join list and joins every address that is not already
// an alive member.
func (c *Cluster) rejoin() {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.TCPTimeout)
	addrs, failed := c.resolveJoin(ctx)
	cancel()

	c.mu.Lock()
	known := map[string]bool{}
	for _, m := range c.v.members {
		if m.State == StateAlive && m.Addr != "" {
			known[m.Addr] = true
		}
	}
	c.mu.Unlock()
	var targets []string
	for _, a := range addrs {
		if !known[a] {
			targets = append(targets, a)
		}
	}
	c.joinAttempts.Add(uint64(len(targets) + failed))
	c.joinFailures.Add(uint64(failed))
	if len(targets) == 0 {
		// Nothing was tried, so nothing refused this process.
		c.mu.Lock()
		c.v.refused = false
		c.mu.Unlock()
		return
	}
	select {
	case <-c.stop:
		return
	default:
	}
	n, err := c.ml.Join(targets)
	c.joinFailures.Add(uint64(len(targets) - n))
	// Refused only on a peer's answer that says so: a connection that opens
	// proves nothing (a hung peer, a proxy that accepts every connect, a
	// reused address). And only while this process has never seen a peer: one
	// that was once in the cluster and now reaches nobody is alone and owns
	// every table.
	c.mu.Lock()
	was := c.v.refused
	refused := n == 0 && !c.v.sawPeer && joinRefused(err)
	c.v.refused = refused
	alone := c.v.peerCount() == 0
	c.mu.Unlock()
	if refused && alone {
		if !was {
			c.log.Error("gossip peers refused this member: it owns no table until one accepts it; check that it has the cluster's key (SIGLAKE_GOSSIP_KEY_FILE) and label (SIGLAKE_GOSSIP_CLUSTER_LABEL)",
				zap.Strings("targets", targets), zap.Error(err))
		}
		return
	}
	if n == 0 {
		c.log.Warn("gossip join reached no peer", zap.Strings("targets", targets), zap.Error(err))
		return
	}
	c.log.Info("gossip joined", zap.Int("reached", n), zap.Strings("targets", targets))
}

// joinRefused reports whether a failed Join's error carries a peer's
// refusal. A peer that cannot read our push/pull (another key, or one side
// unencrypted) answers with an error that our side reports in keyError()'s
// words; a peer with another label closes the stream unanswered, which
// reads as EOF. A timeout (a hung peer) or a refused connect is no refusal.
func joinRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return keyError(msg) || strings.Contains(msg, "EOF")
}

// resolveJoin turns the join list into ip:port strings. A DNS name yields
// every address it resolves to; an entry that cannot be resolved is logged
// and counted in failed.
func (c *Cluster) resolveJoin(ctx context.Context) (addrs []string, failed int) {
	defPort := c.cfg.BindPort
	if defPort == 0 {
		defPort = DefaultPort
	}
	seen := map[string]bool{}
	add := func(ip net.IP, port int) {
		a := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		if !seen[a] {
			seen[a] = true
			addrs = append(addrs, a)
		}
	}
	for _, entry := range c.cfg.Join {
		host, port, err := splitJoin(entry, defPort)
		if err != nil { // Validate rejects these; kept for safety
			failed++
			continue
		}
		if ip := net.ParseIP(host); ip != nil {
			add(ip, port)
			continue
		}
		ips, err := c.lookupIP(ctx, strings.TrimSuffix(host, "."))
		if err != nil || len(ips) == 0 {
			failed++
			c.log.Warn("gossip join entry did not resolve", zap.String("entry", entry), zap.Error(err))
			continue
		}
		for _, ip := range ips {
			add(ip, port)
		}
	}
	return addrs, failed
}

// delegate gives memberlist this member's metadata; the other hooks
// (user messages, state exchange) are unused.
type delegate struct {
	mu   sync.Mutex
	meta []byte
}

func (d *delegate) NodeMeta(limit int) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.meta
}

func (d *delegate) set(b []byte) {
	d.mu.Lock()
	d.meta = b
	d.mu.Unlock()
}

func (d *delegate) NotifyMsg([]byte)                           {}
func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (d *delegate) LocalState(join bool) []byte                { return nil }
func (d *delegate) MergeRemoteState(buf []byte, join bool)     {}

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
	md, err := decodeMeta(n.Meta)
	if err != nil {
		c.log.Warn("gossip member metadata unreadable; it will own no table", zap.String("member", n.Name), zap.Error(err))
		return m
	}
	m.Roles, m.Version, m.HTTPAddr, m.Catalog, m.Leaving = md.Roles, md.Version, md.HTTPAddr, md.Catalog, md.Leaving
	return m
}
