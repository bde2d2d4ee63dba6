package sidecar

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/config"
	"github.com/siglake/siglake/sidecar/membership"
)

// startGossip joins the cluster when gossip is configured.
func (p *Process) startGossip(httpAddr string) error {
	gc, ok, err := config.GossipConfig(p.Cfg, httpAddr, p.Version)
	if err != nil || !ok {
		return err
	}
	if gc.Keys, err = config.GossipKeys(p.Cfg); err != nil {
		return err
	}
	gc.GroupCommit = advertisesGroupCommit(p, len(gc.Keys))
	gc.BinWorker = advertisesBinLeases(p, len(gc.Keys))
	if len(gc.Keys) == 0 {
		p.Log.Warn("gossip runs without encryption: any process that reaches the gossip port can join and take table leases; set --gossip-key-file / SIGLAKE_GOSSIP_KEY_FILE (docs/gossip.md)",
			zap.String("gossip_bind", p.Cfg.GossipBind))
	}
	c, err := gossip.Start(gc, p.Log.Named("gossip"))
	if err != nil {
		return fmt.Errorf("start gossip on %s: %w", net.JoinHostPort(gc.BindAddr, strconv.Itoa(gc.BindPort)), err)
	}
	p.cluster, p.binWorker = c, gc.BinWorker
	p.Metrics.Reg.MustRegister(membership.Collector(c))
	return nil
}

// watchMembership follows the gossip view into /debug/status, and the gossip key file, until ctx
// is done; without gossip it does nothing.
func (p *Process) watchMembership(ctx context.Context) {
	if p.cluster == nil {
		return
	}
	go membership.Watch(ctx, p.cluster, p.Cfg.Namespace, p.Status, p.Log)
	if p.Cfg.GossipKeyFile != "" {
		go membership.WatchKeys(ctx, p.cluster, p.Cfg.GossipKeyFile, membership.KeyReload, p.Log.Named("gossip"))
	}
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
