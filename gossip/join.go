package gossip

import (
	"context"
	"strings"
	"time"

	"github.com/siglake/siglake/gossip/internal/mllog"
	"github.com/siglake/siglake/gossip/joinlist"
	"go.uber.org/zap"
)

// aloneRetry is how often a member that sees no peer retries its join list,
// so pods started together find each other within seconds rather than a
// full RejoinInterval.
const aloneRetry = 2 * time.Second

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
// unencrypted) answers with an error that our side reports in mllog.KeyError's
// words; a peer with another label closes the stream unanswered, which
// reads as EOF. A timeout (a hung peer) or a refused connect is no refusal.
func joinRefused(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return mllog.KeyError(msg) || strings.Contains(msg, "EOF")
}

// resolveJoin turns the join list into ip:port strings (joinlist.Resolve),
// logging the entries that do not resolve.
func (c *Cluster) resolveJoin(ctx context.Context) (addrs []string, failed int) {
	defPort := c.cfg.BindPort
	if defPort == 0 {
		defPort = DefaultPort
	}
	return joinlist.Resolve(ctx, c.cfg.Join, defPort, c.lookupIP, func(entry string, err error) {
		c.log.Warn("gossip join entry did not resolve", zap.String("entry", entry), zap.Error(err))
	})
}
