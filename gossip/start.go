package gossip

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/siglake/siglake/gossip/internal/mllog"
	"github.com/siglake/siglake/gossip/internal/nodemeta"
	"github.com/siglake/siglake/gossip/internal/transport"
	"go.uber.org/zap"
)

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
	keys := cfg.Keys
	c := newCluster(cfg, log)
	metaBytes, err := c.selfMeta(cfg.Catalog, false, false)
	if err != nil {
		return nil, err
	}
	if cfg.Disabled {
		log.Info("gossip disabled: this process is the only member", zap.String("node", cfg.NodeName), zap.Strings("roles", cfg.Roles))
		return c, nil
	}
	if err := c.startMemberlist(keys, metaBytes); err != nil {
		return nil, err
	}
	c.log.Info("gossip started",
		zap.String("node", c.cfg.NodeName),
		zap.String("addr", c.addr),
		zap.Strings("join", c.cfg.Join),
		zap.Strings("roles", c.cfg.Roles),
		zap.Duration("settle", c.cfg.SettlePeriod),
		zap.String("cluster_label", c.cfg.Label),
		zap.String("key_migration", c.cfg.KeyMigration),
		zap.Int("keys", len(keys)),
		zap.String("primary_key", c.Keys().Primary))
	if len(c.cfg.Join) > 0 {
		go c.rejoinLoop()
	}
	return c, nil
}

// newCluster is the Cluster of cfg before its memberlist starts: its own
// copies of the lists, the keys left to the keyring, and a view holding
// this member alone.
func newCluster(cfg Config, log *zap.Logger) *Cluster {
	cfg.Join = append([]string(nil), cfg.Join...)
	cfg.Roles = append([]string(nil), cfg.Roles...)
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
	self := Member{Name: cfg.NodeName, State: StateAlive, Roles: cfg.Roles, Version: cfg.Version, HTTPAddr: cfg.HTTPAddr,
		Catalog: cfg.Catalog, GroupCommit: cfg.GroupCommit, BinWorker: cfg.BinWorker}
	standalone := cfg.Disabled || len(cfg.Join) == 0
	c.v = newView(self, cfg.SettlePeriod, standalone, !standalone, c.now())
	return c
}

// startMemberlist binds the gossip port and creates this member of the
// memberlist cluster, encrypted with keys when there are any.
func (c *Cluster) startMemberlist(keys [][]byte, metaBytes []byte) error {
	cfg := c.cfg
	mlLog, mlWriter := mllog.New(c.log)
	c.mlLog = mlWriter
	bindAddr := cfg.BindAddr
	if bindAddr == "" {
		bindAddr = "0.0.0.0"
	}
	nt, err := transport.Bind(bindAddr, cfg.BindPort, mlLog)
	if err != nil {
		return fmt.Errorf("binding gossip to %s: %w", net.JoinHostPort(bindAddr, strconv.Itoa(cfg.BindPort)), err)
	}
	port := nt.GetAutoBindPort()
	c.tr = transport.NewCounting(nt)
	mc := c.memberlistConfig(bindAddr, port)
	mc.Logger = mlLog
	if len(keys) > 0 {
		// memberlist's defaults refuse unencrypted packets and streams once
		// a keyring is set; a key migration relaxes that for one step.
		mc.GossipVerifyIncoming = cfg.KeyMigration == ""
		mc.GossipVerifyOutgoing = cfg.KeyMigration != KeyMigrationAccept
		kr, err := memberlist.NewKeyring(keys[1:], keys[0])
		if err != nil {
			_ = c.tr.Shutdown()
			return fmt.Errorf("gossip keys (SIGLAKE_GOSSIP_KEY_FILE): %w", err)
		}
		mc.Keyring = kr
		c.keyring = kr
	}
	c.meta = &nodemeta.Delegate{Msg: c.msgs.Deliver}
	c.meta.Set(metaBytes)
	mc.Delegate = c.meta
	ml, err := memberlist.Create(mc)
	if err != nil {
		_ = c.tr.Shutdown()
		hint := ""
		if cfg.AdvertiseAddr == "" {
			hint = " (set SIGLAKE_GOSSIP_ADVERTISE if no private address can be found)"
		}
		return fmt.Errorf("starting gossip member %q%s: %w", cfg.NodeName, hint, err)
	}
	c.ml = ml
	c.addr = ml.LocalNode().Address()
	return nil
}

// memberlistConfig is memberlist's LAN configuration with this member's
// name, addresses, transport, label, event handlers and timing.
func (c *Cluster) memberlistConfig(bindAddr string, port int) *memberlist.Config {
	cfg := c.cfg
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
	mc.Label = cfg.Label
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
	return mc
}
