package groupcommit

import (
	"errors"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/siglake/siglake/gossip/keys"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/peerhttp"
)

// ClaimMembership is group commit's membership where gossip is off: each table's committer is
// the holder of its committer claim in the catalog (claim.Manager with Addr, or ReadOnly in a
// process that maintains no table), reached at the address the claim carries.
type ClaimMembership struct {
	Claims *claim.Manager
	Keys   *Keys
	// CatalogID is the catalog identity as last read ("" until known: nobody hands off).
	CatalogID func() string
}

var _ commit.Membership = (*ClaimMembership)(nil)

// Authenticated: every message is signed and verified while a key is loaded.
func (m *ClaimMembership) Authenticated() bool { return len(m.Keys.Get()) > 0 }

// Catalog is the catalog identity: requests name it, and a committer refuses another catalog's.
func (m *ClaimMembership) Catalog() string { return m.CatalogID() }

// Owns: this process holds table's committer claim inside its fence. It then commits the table's
// group commits and runs its maintenance (one loop per table).
func (m *ClaimMembership) Owns(table string) bool { return !m.Claims.ReadOnly && m.Claims.Owns(table) }

// Committer is the live committer claim's address (this process's own while it Owns the table).
func (m *ClaimMembership) Committer(table string) (string, bool) { return m.Claims.Committer(table) }

// Keys holds the keys messages are signed (the first) and verified (all) with: the gossip key
// file's, re-read like gossip's (membership.WatchKeys), so the same rotation steps apply.
type Keys struct{ v atomic.Pointer[[][]byte] }

// NewKeys holds ks.
func NewKeys(ks [][]byte) *Keys {
	k := &Keys{}
	k.v.Store(&ks)
	return k
}

// Get returns the keys in use.
func (k *Keys) Get() [][]byte {
	if p := k.v.Load(); p != nil {
		return *p
	}
	return nil
}

// SetKeys installs ks and reports whether they differ from the keys in use. An empty list is
// refused: it would cut this process off from every pod, as it would a gossip member.
func (k *Keys) SetKeys(ks [][]byte) (bool, error) {
	if len(ks) == 0 {
		return false, errors.New("no key: it would cut this process off from every pod")
	}
	old := k.Get()
	changed := len(old) != len(ks)
	for i := 0; !changed && i < len(ks); i++ {
		changed = string(old[i]) != string(ks[i])
	}
	k.v.Store(&ks)
	return changed, nil
}

// Keys is the state of the keys, as gossip's keyring reports it.
func (k *Keys) Keys() keys.State {
	ks := k.Get()
	if len(ks) == 0 {
		return keys.State{}
	}
	return keys.State{Keys: len(ks), Primary: keys.Fingerprint(ks[0])}
}

// PeerObserver counts what the HTTP peer transport receives and refuses, and logs refusals at
// most once a minute per reason (a scanner or a pod with a stale key must not flood the log).
type PeerObserver struct {
	Metrics *Metrics
	Log     *zap.Logger
	limit   *Observer // its rate limiter
	once    sync.Once
}

var _ peerhttp.Observer = (*PeerObserver)(nil)

func (o *PeerObserver) Received(byte) { o.Metrics.PeerReceived.Inc() }

func (o *PeerObserver) Refused(reason, from string, err error) {
	o.Metrics.PeerRefused.WithLabelValues(reason).Inc()
	o.once.Do(func() { o.limit = NewObserver(o.Metrics, o.Log) })
	if n, ok := o.limit.due("peer " + reason); ok {
		o.Log.Warn("refused a group commit message on the HTTP listener", zap.String("reason", reason),
			zap.String("claimed_sender", from), zap.Error(err), zap.Int("refusals_since_last_line", n))
	}
}
