package gossip

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Roles a member can advertise. A member owns table leases only when its
// roles include RoleMaintenance; a drain-only member takes part in gossip
// (so it shows in status) but never owns a table.
const (
	RoleDrain       = "drain"
	RoleMaintenance = "maintenance"
)

// RolesFor maps the value of `siglake compactor --role` to member roles:
// "all" is both, "drain" and "maintenance" are themselves.
func RolesFor(role string) ([]string, error) {
	switch strings.ToLower(strings.TrimSpace(role)) {
	case "all", "":
		return []string{RoleDrain, RoleMaintenance}, nil
	case RoleDrain:
		return []string{RoleDrain}, nil
	case RoleMaintenance:
		return []string{RoleMaintenance}, nil
	}
	return nil, fmt.Errorf("role %q: accepted values are all, drain, maintenance", role)
}

// metaVersion is the version of the metadata encoding below. A decoder that
// meets a newer version still reads the fields it knows.
const metaVersion = 1

// meta is what a member gossips about itself (memberlist "node meta",
// at most memberlist.MetaMaxSize = 512 bytes). See docs/gossip.md.
type meta struct {
	V        int      `json:"v"`
	Roles    []string `json:"roles,omitempty"`
	Version  string   `json:"version,omitempty"`
	HTTPAddr string   `json:"http,omitempty"`
	// Catalog is the identity of the catalog (and namespace) this member
	// maintains tables of. Members compete for a table only when they
	// advertise the same identity; one that advertises none (catalog not
	// reached yet, or an older version) competes only with such members.
	Catalog string `json:"cat,omitempty"`
	// Leaving is set by Leave just before the leave message: peers drop
	// the member from the owner set at once, and report its departure as
	// "left" rather than "dead" (memberlist's leave event does not say
	// which it was).
	Leaving bool `json:"leaving,omitempty"`
}

func encodeMeta(m meta, limit int) ([]byte, error) {
	m.V = metaVersion
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding member metadata: %w", err)
	}
	if len(b) > limit {
		return nil, fmt.Errorf("member metadata is %d bytes, more than the %d gossip allows: shorten roles, version or HTTP address", len(b), limit)
	}
	return b, nil
}

// decodeMeta never fails hard: a member whose metadata cannot be read is
// kept in the member list (it is alive, after all) but with no roles, so it
// owns nothing until it gossips something this process understands.
func decodeMeta(b []byte) (meta, error) {
	var m meta
	if len(b) == 0 {
		return m, fmt.Errorf("member metadata is empty")
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return meta{}, fmt.Errorf("decoding member metadata: %w", err)
	}
	if m.V < 1 {
		return meta{}, fmt.Errorf("member metadata has no version")
	}
	return m, nil
}

func hasRole(roles []string, role string) bool {
	return slices.Contains(roles, role)
}
