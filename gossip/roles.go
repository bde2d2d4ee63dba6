package gossip

import (
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

func hasRole(roles []string, role string) bool {
	return slices.Contains(roles, role)
}
