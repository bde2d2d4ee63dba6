// Package nodemeta is the wire form of what a gossip member says about
// itself (memberlist's node metadata): roles, version, HTTP address, catalog
// identity, whether it is leaving and runs a group committer, as versioned
// JSON.
package nodemeta

import (
	"encoding/json"
	"fmt"
)

// Version is the version of the metadata encoding below. A decoder that
// meets a newer version still reads the fields it knows.
const Version = 1

// Meta is what a member gossips about itself (memberlist "node meta",
// at most memberlist.MetaMaxSize = 512 bytes). See docs/gossip.md.
type Meta struct {
	V        int      `json:"v"`
	Roles    []string `json:"roles,omitempty"`
	Version  string   `json:"version,omitempty"`
	HTTPAddr string   `json:"http,omitempty"`
	// Catalog is the identity of the catalog (and namespace) this member
	// maintains tables of. Members compete for a table only when they
	// advertise the same identity; one that advertises none (catalog not
	// reached yet, or an older version) competes only with such members.
	Catalog string `json:"cat,omitempty"`
	// Leaving is set by Cluster.Leave just before the leave message: peers drop
	// the member from the owner set at once, and report its departure as
	// "left" rather than "dead" (memberlist's leave event does not say
	// which it was).
	Leaving bool `json:"leaving,omitempty"`
	// GroupCommit is the version of the group commit protocol the member's
	// committer takes, 0 or absent when it runs none: a number rather than a
	// flag so a later protocol can be told apart. Peers hand commits only to
	// a committer of their own version (else they commit directly: safe).
	GroupCommit int `json:"gc,omitempty"`
	// BinWorker is the version of the bin-lease protocol (docs/design/bin-leases.md) the member
	// takes bins of as a worker, 0 or absent when it takes none.
	BinWorker int `json:"wk,omitempty"`
	// BinOffers is set while the member, as a table owner, has bins on offer: workers ask only
	// such members for work.
	BinOffers bool `json:"wo,omitempty"`
}

// BinLeaseVersion is the bin-lease protocol this version speaks.
const BinLeaseVersion = 1

// GroupCommitVersion is the group commit protocol this version speaks.
const GroupCommitVersion = 1

// Encode is m's wire form, refused when it is longer than limit bytes.
func Encode(m Meta, limit int) ([]byte, error) {
	m.V = Version
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding member metadata: %w", err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("member metadata is %d bytes, more than the %d gossip allows: shorten roles, version or HTTP address", len(b), limit)
	}
	return b, nil
}

// Decode never fails hard: a member whose metadata cannot be read is
// kept in the member list (it is alive, after all) but with no roles, so it
// owns nothing until it gossips something this process understands.
func Decode(b []byte) (Meta, error) {
	var m Meta
	if len(b) == 0 {
		return m, fmt.Errorf("member metadata is empty")
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return Meta{}, fmt.Errorf("decoding member metadata: %w", err)
	}
	if m.V < 1 {
		return Meta{}, fmt.Errorf("member metadata has no version")
	}
	return m, nil
}
