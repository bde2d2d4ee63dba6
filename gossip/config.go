package gossip

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/siglake/siglake/gossip/joinlist"
	"github.com/siglake/siglake/gossip/keys"
)

// The steps of Config.KeyMigration.
const (
	KeyMigrationAccept = "accept"
	KeyMigrationSend   = "send"
)

// DefaultPort is the gossip port (TCP and UDP) when none is given, the
// port memberlist and Serf use by convention.
const DefaultPort = 7946

// Config configures a Cluster. Start from DefaultConfig and override; a zero
// value in a field means zero, not "default".
type Config struct {
	// NodeName is this member's name, unique in the cluster. Default: the
	// hostname, which in Kubernetes is the pod name (stable across restarts
	// of a StatefulSet pod).
	NodeName string

	// BindAddr and BindPort are where gossip listens (TCP and UDP).
	// Default 0.0.0.0:7946. Port 0 picks a free port (tests).
	BindAddr string
	BindPort int

	// AdvertiseAddr and AdvertisePort are what peers use to reach this
	// member. Default: the bind address when it is a specific IP, else the
	// first private IP of the host (the pod IP); the bound port.
	AdvertiseAddr string
	AdvertisePort int

	// Join lists peers to join: "host:port", "host" (BindPort, or 7946
	// when binding port 0) or a DNS name, which is resolved to ALL its
	// addresses (a Kubernetes headless Service names every ready pod).
	// Empty means no peers are configured: the process owns every table
	// at once, until some other member joins it.
	Join []string

	// Roles this member advertises (RoleDrain, RoleMaintenance). Only
	// members with RoleMaintenance own leases.
	Roles []string
	// Catalog is the identity of the catalog this member maintains tables
	// of (see Member.Catalog). Default "": such a member competes only with
	// members that advertise none. The sidecar learns it from the catalog
	// after Start, so it sets it with Cluster.SetCatalog before it
	// maintains anything.
	Catalog string
	// Version and HTTPAddr are advertised for status pages and tooling.
	Version  string
	HTTPAddr string

	// ProbeInterval is how often each member probes one random peer.
	// Default 1 s (memberlist LAN). Smaller detects failures faster and
	// costs more packets.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for its ack before
	// asking other members to probe indirectly. Default 500 ms: well above
	// a LAN round trip, so a busy pod is not suspected for a slow reply.
	ProbeTimeout time.Duration
	// SuspicionMult scales how long a suspected member has to refute the
	// suspicion before it is declared dead:
	// SuspicionMult * max(1, log10(n)) * ProbeInterval at the least.
	// Default 4 (memberlist LAN).
	SuspicionMult int
	// SuspicionMaxTimeoutMult caps the suspicion timeout at this multiple of
	// the least one; the timeout starts at the cap and falls to the least
	// one as other members confirm the suspicion. Default 6.
	SuspicionMaxTimeoutMult int
	// GossipInterval is how often state changes are gossiped to a few
	// random peers. Default 200 ms.
	GossipInterval time.Duration
	// PushPullInterval is how often a full state sync with one random peer
	// runs; it repairs anything gossip missed. Default 30 s.
	PushPullInterval time.Duration
	// TCPTimeout bounds join, push/pull and TCP fallback probes. Default 10 s.
	TCPTimeout time.Duration
	// DeadNodeReclaimTime lets a member that was declared dead come back
	// under the same name from a new address (a StatefulSet pod rescheduled
	// with a new IP) once this long has passed. Default 10 s.
	DeadNodeReclaimTime time.Duration

	// RejoinInterval is how often the Join list is resolved again and the
	// addresses that are not members are joined, so a member that started
	// alone, or was cut off, finds the others. While a member sees no peer
	// it retries every min(RejoinInterval, 2 s). Default 30 s.
	RejoinInterval time.Duration
	// SettlePeriod is how long a member must have been the owner of a table
	// in its own view before it starts work on it, so the previous owner
	// has seen the same change and stopped. Default 5 s. Not applied while
	// a process without configured peers has never seen a peer.
	SettlePeriod time.Duration

	// Keys are the gossip encryption keys (16, 24 or 32 bytes: AES-128,
	// -192, -256). Keys[0] encrypts what this member sends; every key
	// decrypts what it receives, so a key is rotated by adding it, then
	// sending with it, then dropping the old one (Cluster.SetKeys). Peers
	// without a key this member holds cannot join it, take a lease or stop
	// anyone owning. Default none: plaintext, and anyone who reaches the
	// port is a member.
	Keys [][]byte
	// Label is the cluster label: memberlist puts it on every packet and
	// stream (and authenticates it with the key) and drops anything that
	// carries another, so two clusters that can reach each other never
	// merge. Default "": such members talk only to members without a label.
	// At most 255 bytes.
	Label string
	// KeyMigration brings keys to a cluster that runs without them, one
	// rolling restart per step, as Consul does: KeyMigrationAccept sends
	// plaintext and accepts both (every member gets the key), then
	// KeyMigrationSend sends encrypted and still accepts plaintext (every
	// member sends encrypted), then "" refuses plaintext. Without Keys,
	// gossip is plaintext anyway.
	KeyMigration string

	// GroupCommit advertises that this process runs a group committer (member
	// metadata "gc"), so peers hand commits only to owners that take them.
	GroupCommit bool

	// BinWorker advertises that this process takes leased bins (member
	// metadata "wk"), so owners know whether any worker could take theirs.
	BinWorker bool

	// Disabled runs no gossip at all: no port is bound, the process is the
	// only member and owns every table when it has the maintenance role.
	Disabled bool
}

// DefaultConfig returns the defaults documented on Config, with NodeName the
// hostname and both roles.
func DefaultConfig() Config {
	host, _ := os.Hostname()
	return Config{
		NodeName:                host,
		BindAddr:                "0.0.0.0",
		BindPort:                DefaultPort,
		Roles:                   []string{RoleDrain, RoleMaintenance},
		ProbeInterval:           time.Second,
		ProbeTimeout:            500 * time.Millisecond,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 6,
		GossipInterval:          200 * time.Millisecond,
		PushPullInterval:        30 * time.Second,
		TCPTimeout:              10 * time.Second,
		DeadNodeReclaimTime:     10 * time.Second,
		RejoinInterval:          30 * time.Second,
		SettlePeriod:            5 * time.Second,
	}
}

// Validate reports every setting that cannot work, each with the sidecar's environment variable
// where one sets it.
func (c Config) Validate() error {
	var errs []error
	if c.NodeName == "" {
		errs = append(errs, errors.New("node name is empty (SIGLAKE_NODE_NAME; the hostname is the default)"))
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		errs = append(errs, fmt.Errorf("bind port %d is outside 0-65535 (SIGLAKE_GOSSIP_BIND)", c.BindPort))
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		errs = append(errs, fmt.Errorf("advertise port %d is outside 0-65535 (SIGLAKE_GOSSIP_ADVERTISE)", c.AdvertisePort))
	}
	if c.BindAddr != "" && net.ParseIP(c.BindAddr) == nil {
		errs = append(errs, fmt.Errorf("bind address %q is not an IP address (SIGLAKE_GOSSIP_BIND)", c.BindAddr))
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		errs = append(errs, fmt.Errorf("advertise address %q is not an IP address (SIGLAKE_GOSSIP_ADVERTISE)", c.AdvertiseAddr))
	}
	for _, j := range c.Join {
		if _, _, err := joinlist.Split(j, 1); err != nil {
			errs = append(errs, fmt.Errorf("join entry %q (SIGLAKE_GOSSIP_JOIN): %w", j, err))
		}
	}
	for i, k := range c.Keys {
		if l := len(k); l != 16 && l != 24 && l != 32 {
			errs = append(errs, fmt.Errorf("gossip key %d is %d bytes (SIGLAKE_GOSSIP_KEY_FILE): accepted: %s", i+1, l, keys.Accepted))
		}
	}
	switch c.KeyMigration {
	case "", KeyMigrationAccept, KeyMigrationSend:
	default:
		errs = append(errs, fmt.Errorf("key migration %q (SIGLAKE_GOSSIP_KEY_MIGRATION): accepted: %q, %q or empty", c.KeyMigration, KeyMigrationAccept, KeyMigrationSend))
	}
	if len(c.Label) > memberlist.LabelMaxSize {
		errs = append(errs, fmt.Errorf("cluster label is %d bytes (SIGLAKE_GOSSIP_CLUSTER_LABEL): accepted: at most %d", len(c.Label), memberlist.LabelMaxSize))
	}
	pos := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be positive, got %s", name, d))
		}
	}
	if !c.Disabled {
		pos("probe interval (SIGLAKE_GOSSIP_PROBE_INTERVAL)", c.ProbeInterval)
		pos("probe timeout (SIGLAKE_GOSSIP_PROBE_TIMEOUT)", c.ProbeTimeout)
		pos("gossip interval", c.GossipInterval)
		pos("push/pull interval", c.PushPullInterval)
		pos("TCP timeout", c.TCPTimeout)
		pos("rejoin interval (SIGLAKE_GOSSIP_REJOIN_SECS)", c.RejoinInterval)
		if c.ProbeTimeout >= c.ProbeInterval {
			errs = append(errs, fmt.Errorf("probe timeout %s (SIGLAKE_GOSSIP_PROBE_TIMEOUT) must be shorter than the probe interval %s (SIGLAKE_GOSSIP_PROBE_INTERVAL)", c.ProbeTimeout, c.ProbeInterval))
		}
		if c.SuspicionMult < 1 {
			errs = append(errs, fmt.Errorf("suspicion multiplier (SIGLAKE_GOSSIP_SUSPICION_MULT) must be at least 1, got %d", c.SuspicionMult))
		}
		if c.SuspicionMaxTimeoutMult < 1 {
			errs = append(errs, fmt.Errorf("suspicion max timeout multiplier must be at least 1, got %d", c.SuspicionMaxTimeoutMult))
		}
	}
	if c.SettlePeriod < 0 {
		errs = append(errs, fmt.Errorf("settle period (SIGLAKE_GOSSIP_SETTLE_SECS) must not be negative, got %s", c.SettlePeriod))
	}
	return errors.Join(errs...)
}
