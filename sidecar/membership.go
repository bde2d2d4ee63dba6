package sidecar

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/lake"
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
	p.Metrics.Reg.MustRegister(&gossipCollector{c: c})
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

// watchMembership keeps /debug/status's members and per-table owners current.
func (p *Process) watchMembership(ctx context.Context) {
	if p.cluster == nil {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	apart := map[string]string{} // members seen advertising another catalog, and which
	for {
		var known []string
		p.Status.Update(func(r *StatusReport) {
			for name := range r.Tables {
				known = append(known, lake.LeaseKey(p.Cfg.Namespace, name))
			}
		})
		p.cluster.Track(known...) // a drain-only process shows its tables' owners too
		members := p.cluster.Members()
		leases := p.cluster.Leases()
		self := p.cluster.Catalog()
		for _, m := range members {
			if self != "" && m.Catalog != "" && m.Catalog != self && m.State == gossip.StateAlive && apart[m.Name] != m.Catalog {
				apart[m.Name] = m.Catalog
				// Legitimate for another namespace of a shared catalog; for the same namespace it
				// means per-pod catalogs gossiping together (a StatefulSet scaled past the chart's check).
				p.Log.Warn("gossip peer maintains another catalog or namespace: it shares no table with this process",
					zap.String("member", m.Name), zap.String("member_catalog_id", m.Catalog), zap.String("catalog_id", self))
			}
		}
		prefix := lake.LeaseKey(p.Cfg.Namespace, "")
		p.Status.Update(func(r *StatusReport) {
			r.Members = make([]MemberReport, 0, len(members)) // a new slice: the last one may be being encoded
			for _, m := range members {
				r.Members = append(r.Members, MemberReport{Name: m.Name, Addr: m.Addr, State: m.State, Roles: m.Roles, Catalog: m.Catalog})
			}
			for _, l := range leases {
				name, ok := strings.CutPrefix(l.Table, prefix)
				if !ok {
					continue
				}
				tr := r.Table(name)
				tr.Owner = l.Owner
				since := l.Since
				tr.OwnerSince = &since
				tr.Candidates = l.Candidates
			}
		})
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// gossipCollector exports the cluster's counters at scrape time (docs/metrics.md "Gossip").
type gossipCollector struct{ c *gossip.Cluster }

var (
	gossipMembers     = prometheus.NewDesc("siglake_gossip_members", "Gossip members this process knows, by state (alive, left, dead).", []string{"state"}, nil)
	gossipOwned       = prometheus.NewDesc("siglake_gossip_owned_tables", "Tables this process owns and may maintain now.", nil, nil)
	gossipSettling    = prometheus.NewDesc("siglake_gossip_settling_tables", "Tables this process owns in its view but may not act on yet (settle period).", nil, nil)
	gossipTransitions = prometheus.NewDesc("siglake_gossip_lease_transitions_total", "Tracked tables that changed owner in this process's view.", nil, nil)
	gossipJoinTries   = prometheus.NewDesc("siglake_gossip_join_attempts_total", "Addresses tried by the join and rejoin loop.", nil, nil)
	gossipJoinFails   = prometheus.NewDesc("siglake_gossip_join_failures_total", "Join addresses that could not be reached or resolved.", nil, nil)
	gossipSent        = prometheus.NewDesc("siglake_gossip_sent_bytes_total", "Gossip payload bytes sent.", nil, nil)
	gossipReceived    = prometheus.NewDesc("siglake_gossip_received_bytes_total", "Gossip payload bytes received.", nil, nil)
	gossipConflicts   = prometheus.NewDesc("siglake_gossip_name_conflicts_total", "Alive messages claiming a known member name from another address.", nil, nil)
)

func (g *gossipCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{gossipMembers, gossipOwned, gossipSettling, gossipTransitions, gossipJoinTries,
		gossipJoinFails, gossipSent, gossipReceived, gossipConflicts} {
		ch <- d
	}
}

func (g *gossipCollector) Collect(ch chan<- prometheus.Metric) {
	s := g.c.Stats()
	for state, n := range s.Members {
		ch <- prometheus.MustNewConstMetric(gossipMembers, prometheus.GaugeValue, float64(n), state)
	}
	ch <- prometheus.MustNewConstMetric(gossipOwned, prometheus.GaugeValue, float64(s.OwnedTables))
	ch <- prometheus.MustNewConstMetric(gossipSettling, prometheus.GaugeValue, float64(s.SettlingTables))
	ch <- prometheus.MustNewConstMetric(gossipTransitions, prometheus.CounterValue, float64(s.LeaseTransitions))
	ch <- prometheus.MustNewConstMetric(gossipJoinTries, prometheus.CounterValue, float64(s.JoinAttempts))
	ch <- prometheus.MustNewConstMetric(gossipJoinFails, prometheus.CounterValue, float64(s.JoinFailures))
	ch <- prometheus.MustNewConstMetric(gossipSent, prometheus.CounterValue, float64(s.SentBytes))
	ch <- prometheus.MustNewConstMetric(gossipReceived, prometheus.CounterValue, float64(s.ReceivedBytes))
	ch <- prometheus.MustNewConstMetric(gossipConflicts, prometheus.CounterValue, float64(s.NameConflicts))
}
