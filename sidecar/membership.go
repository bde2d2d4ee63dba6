package sidecar

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/membership"
)

// GossipConfig maps the process options onto the gossip configuration. ok is false when
// --gossip-bind is empty: the process runs alone and owns every table.
func GossipConfig(c Config, httpAddr, version string) (gc gossip.Config, ok bool, err error) {
	if c.GossipBind == "" {
		return gc, false, nil
	}
	gc = gossip.DefaultConfig()
	if c.NodeName != "" {
		gc.NodeName = c.NodeName
	}
	host, port, err := gossip.ParseHostPort(c.GossipBind, gossip.DefaultPort)
	if err != nil {
		return gc, false, fmt.Errorf("--gossip-bind / SIGLAKE_GOSSIP_BIND %q: %w; accepted: host:port", c.GossipBind, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	gc.BindAddr, gc.BindPort = host, port
	if c.GossipAdvertise != "" {
		h, p, err := gossip.ParseHostPort(c.GossipAdvertise, port)
		if err != nil || h == "" {
			return gc, false, fmt.Errorf("--gossip-advertise / SIGLAKE_GOSSIP_ADVERTISE %q: accepted: ip or ip:port", c.GossipAdvertise)
		}
		gc.AdvertiseAddr, gc.AdvertisePort = h, p
	}
	gc.Join = c.GossipJoin
	if gc.Roles, err = gossip.RolesFor(string(c.Role)); err != nil {
		return gc, false, err
	}
	gc.Version, gc.HTTPAddr = version, httpAddr
	gc.SettlePeriod = c.GossipSettle
	gc.RejoinInterval = c.GossipRejoin
	gc.ProbeInterval = c.GossipProbeInterval
	gc.ProbeTimeout = c.GossipProbeTimeout
	gc.SuspicionMult = c.GossipSuspicionMult
	if err := gc.Validate(); err != nil {
		return gc, false, fmt.Errorf("gossip settings: %w", err)
	}
	return gc, true, nil
}

// startGossip joins the cluster when gossip is configured.
func (p *Process) startGossip(httpAddr string) error {
	gc, ok, err := GossipConfig(p.Cfg, httpAddr, p.Version)
	if err != nil || !ok {
		return err
	}
	c, err := gossip.Start(gc, p.Log.Named("gossip"))
	if err != nil {
		return fmt.Errorf("start gossip on %s: %w", net.JoinHostPort(gc.BindAddr, strconv.Itoa(gc.BindPort)), err)
	}
	p.cluster = c
	p.Metrics.Reg.MustRegister(membership.Collector(c))
	return nil
}

// stopGossip leaves the cluster so peers move this process's tables at once instead of waiting
// for failure detection.
func (p *Process) stopGossip() {
	if p.cluster == nil {
		return
	}
	if err := p.cluster.Leave(5 * time.Second); err != nil {
		p.Log.Warn("gossip leave failed", zap.Error(err))
	}
	_ = p.cluster.Shutdown()
}
