// Package membership turns the gossip view into what the process shows: the members and each
// table's lease in /debug/status, the gossip metrics, and a warning for peers of another catalog.
package membership

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip"
	"github.com/siglake/siglake/sidecar/lake"
)

// Publisher receives the view, as values it never writes again.
type Publisher interface {
	// Tables are the tables the process knows of (drained or maintained), so a drain-only
	// process shows its tables' owners too.
	Tables() []string
	Members(members []gossip.Member)
	// Leases are the leases of namespace's tables, by table name.
	Leases(leases map[string]gossip.Lease)
}

// Watch keeps pub's members and per-table leases current, every second until ctx is done.
func Watch(ctx context.Context, c *gossip.Cluster, namespace string, pub Publisher, log *zap.Logger) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	apart := map[string]string{} // members seen advertising another catalog, and which
	prefix := lake.LeaseKey(namespace, "")
	for {
		var known []string
		for _, name := range pub.Tables() {
			known = append(known, lake.LeaseKey(namespace, name))
		}
		c.Track(known...)
		members := c.Members()
		self := c.Catalog()
		for _, m := range members {
			if self != "" && m.Catalog != "" && m.Catalog != self && m.State == gossip.StateAlive && apart[m.Name] != m.Catalog {
				apart[m.Name] = m.Catalog
				// Legitimate for another namespace of a shared catalog; for the same namespace it
				// means per-pod catalogs gossiping together (a StatefulSet scaled past the chart's check).
				log.Warn("gossip peer maintains another catalog or namespace: it shares no table with this process",
					zap.String("member", m.Name), zap.String("member_catalog_id", m.Catalog), zap.String("catalog_id", self))
			}
		}
		leases := map[string]gossip.Lease{}
		for _, l := range c.Leases() {
			if name, ok := strings.CutPrefix(l.Table, prefix); ok {
				leases[name] = l
			}
		}
		pub.Members(members)
		pub.Leases(leases)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Collector exports c's counters at scrape time (docs/metrics.md "Gossip"); nil c describes them
// only (the docs test).
func Collector(c *gossip.Cluster) prometheus.Collector { return &collector{c: c} }

type collector struct{ c *gossip.Cluster }

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
	gossipRefused     = prometheus.NewDesc("siglake_gossip_refused_total", "Gossip packets and streams refused, by reason: label (another cluster label or none), key (no installed key decrypts it, or unencrypted).", []string{"reason"}, nil)
	gossipKeys        = prometheus.NewDesc("siglake_gossip_keys", "Gossip encryption keys accepted (0: plaintext gossip).", nil, nil)
	gossipMsgReceived = prometheus.NewDesc("siglake_gossip_messages_received_total", "Gossip user messages handed to a handler.", nil, nil)
	gossipMsgDropped  = prometheus.NewDesc("siglake_gossip_messages_dropped_total", "Gossip user messages dropped undelivered, by reason: unknown_kind (no handler for the kind), malformed (no readable envelope).", []string{"reason"}, nil)
	gossipPrimaryKey  = prometheus.NewDesc("siglake_gossip_primary_key_info", "1 with the fingerprint (first 8 bytes of SHA-256, hex) of the gossip key this member sends with; absent without encryption.", []string{"fingerprint"}, nil)
)

func (g *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{gossipMembers, gossipOwned, gossipSettling, gossipTransitions, gossipJoinTries,
		gossipJoinFails, gossipSent, gossipReceived, gossipConflicts, gossipRefused, gossipKeys, gossipPrimaryKey,
		gossipMsgReceived, gossipMsgDropped} {
		ch <- d
	}
}

func (g *collector) Collect(ch chan<- prometheus.Metric) {
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
	ch <- prometheus.MustNewConstMetric(gossipRefused, prometheus.CounterValue, float64(s.RefusedLabel), "label")
	ch <- prometheus.MustNewConstMetric(gossipRefused, prometheus.CounterValue, float64(s.RefusedKey), "key")
	ch <- prometheus.MustNewConstMetric(gossipKeys, prometheus.GaugeValue, float64(s.Keys))
	ch <- prometheus.MustNewConstMetric(gossipMsgReceived, prometheus.CounterValue, float64(s.Messages.Received))
	ch <- prometheus.MustNewConstMetric(gossipMsgDropped, prometheus.CounterValue, float64(s.Messages.UnknownKind), "unknown_kind")
	ch <- prometheus.MustNewConstMetric(gossipMsgDropped, prometheus.CounterValue, float64(s.Messages.Malformed), "malformed")
	if s.PrimaryKey != "" {
		// Which key each pod sends with: the switch step of a rotation is done when every pod
		// shows the new fingerprint (siglake_gossip_keys cannot tell).
		ch <- prometheus.MustNewConstMetric(gossipPrimaryKey, prometheus.GaugeValue, 1, s.PrimaryKey)
	}
}
