package config

import (
	"time"
)

// Bounds of the bin-lease durations (docs/design/bin-leases.md section 5). A lease below 10s
// would expire between a worker's renewals on a busy network; above 10m a worker killed mid-bin
// holds its bin's files out of every pass that long. The owner wait may be 0 (the owner takes
// its bins at once, as without leases).
const (
	minBinLeaseDuration  = 10 * time.Second
	maxBinLeaseDuration  = 10 * time.Minute
	maxBinLeaseOwnerWait = 10 * time.Minute
)

// binLeaseOptions are the options of leased rewrites: a table's owner plans, every maintenance
// sidecar merges (docs/design/bin-leases.md).
func binLeaseOptions() []Option {
	return []Option{
		{"bin-leases", "SIGLAKE_BIN_LEASES", "true", "compactor.binLeases.enabled",
			"A table's maintenance owner offers its rewrite bins (level, depth, late and fold merges) to every maintenance sidecar, which takes those that fit its memory budget and merges them; the owner commits each. Effective only with gossip (`--gossip-bind`), a gossip key (`--gossip-key-file`) and no key migration: leases and results travel as gossip messages (docs/design/bin-leases.md). Delete tasks and retention stay on the owner.",
			setBool(func(c *Config) *bool { return &c.BinLeases })},
		{"bin-lease-duration", "SIGLAKE_BIN_LEASE_DURATION", "2m", "compactor.binLeases.duration",
			"A leased bin's least life between its worker's renewals, 10s to 10m (longer for a bin the measured rewrite rate says needs it): a worker that stops renewing loses the bin, and the owner plans its files again.",
			setDurationIn(func(c *Config) *time.Duration { return &c.BinLeaseDuration }, minBinLeaseDuration, maxBinLeaseDuration, false)},
		{"bin-lease-owner-wait", "SIGLAKE_BIN_LEASE_OWNER_WAIT", "10s", "compactor.binLeases.ownerWait",
			"How long a bin on offer waits for another sidecar before the owner merges it itself, 0 to 10m; 0 keeps no bin from the owner.",
			setDurationIn(func(c *Config) *time.Duration { return &c.BinLeaseOwnerWait }, 0, maxBinLeaseOwnerWait, true)},
	}
}
