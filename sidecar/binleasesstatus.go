package sidecar

import "github.com/siglake/siglake/sidecar/binleases"

// publishBinLeases shows bin leases in /debug/status: s is the observer's snapshot
// (binleases.Observer.Snapshot, which also sets the owner's gauges) with Enabled and
// DisabledReason set; the process publishes it every second, as group commit's.
func (p *Process) publishBinLeases(s binleases.Status) { p.Status.BinLeases(&s) }
