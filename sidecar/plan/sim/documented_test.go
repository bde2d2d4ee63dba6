package sim

import "time"

// Documented returns the scenarios whose results docs/compaction.md shows.
func Documented() []Scenario {
	busy := Base()
	busy.Name = "busy-24h-50MBps-20pods-5pct-late"

	quiet := Base()
	quiet.Name = "quiet-24h-200KBps-2pods-1pct-late"
	quiet.Pods = 2
	quiet.IngestBytesPerSec = 200e3
	quiet.LateFraction = 0.01
	quiet.MergeBytesPerSec = 50e6

	late := Base()
	late.Name = "late-6h-20MBps-10pods-30pct-late-10min"
	late.Pods = 10
	late.IngestBytesPerSec = 20e6
	late.LateFraction = 0.30
	late.LateMean = 10 * time.Minute
	late.Duration = 6 * time.Hour

	stall := Base()
	stall.Name = "stall-6h-10MBps-10pods-backlog-1h"
	stall.Pods = 10
	stall.IngestBytesPerSec = 10e6
	stall.Duration = 6 * time.Hour
	stall.Stalls = []Stall{{From: 2 * time.Hour, To: 3 * time.Hour, Sealed: 1000}}

	return []Scenario{busy, quiet, late, stall}
}
