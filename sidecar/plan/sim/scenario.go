// Package sim runs the real compaction planner against a modelled ingest,
// with no I/O and no clock: pods commit small files with realistic time
// ranges (concurrent pods overlap, late rows stretch ranges back), the
// planner is asked for a pass every tick, and an ideal rewriter applies its
// bins at a given merge throughput. It reports write amplification, overlap
// depth, live file counts and the maintenance backlog over simulated time,
// so leveled and legacy strategies and their settings can be compared
// before they meet a real table.
package sim

import (
	"fmt"
	"time"

	"github.com/siglake/siglake/sidecar/plan"
)

// Scenario is one modelled table and its ingest. Byte sizes are bytes of
// committed table data (Parquet as it lands in object storage), not WAL
// bytes.
type Scenario struct {
	// Name labels results and plots.
	Name string
	// Pods is the number of ingest pods; each drains its own WAL and
	// commits its own files, so their time ranges overlap.
	Pods int
	// IngestBytesPerSec is the table's data rate over all pods.
	IngestBytesPerSec float64
	// RowBytes is the average committed row size (row counts only).
	RowBytes float64
	// CommitMaxAge and CommitTargetBytes model commitBatch.maxAgeSecs and
	// commitBatch.targetMb: a pod commits when its batch is this old or
	// this large, one file per partition the batch touches.
	CommitMaxAge      time.Duration
	CommitTargetBytes float64
	// ArrivalDelay: an on-time row reaches its pod up to this long after
	// its event time (uniformly).
	ArrivalDelay time.Duration
	// LateFraction of rows are late: they arrive ArrivalDelay plus an
	// exponentially distributed extra delay with mean LateMean.
	LateFraction float64
	LateMean     time.Duration
	// PartitionWidth is the time partitioning (1 h = hourly partitions);
	// 0 puts everything in one partition.
	PartitionWidth time.Duration
	// Duration is the simulated time.
	Duration time.Duration
	// Tick is how often the maintenance loop asks the planner for a pass
	// when its rewriter is idle. Default 10 s, the L0 check interval.
	Tick time.Duration
	// MergeBytesPerSec is the rewriter's throughput in input bytes per
	// second over all its bins; BinOverhead is added per bin (commit,
	// opening files).
	MergeBytesPerSec float64
	BinOverhead      time.Duration
	// Workers is how many rewriters run the table's bins (issue 34's bin
	// leases, docs/design/bin-leases.md): the owner plans each pass with the
	// budgets of Workers (plan.Input.Workers), and each bin runs on the worker
	// that frees up first, each worker at MergeBytesPerSec. The files of a bin
	// not yet committed are in flight (plan.Input.InFlight): later passes plan
	// without them and wait for them. Default 1, the single rewriter.
	Workers int
	// SpliceBytesPerSec models merge's splice path: the bytes of a bin's
	// inputs that no other input of the bin overlaps in time (and that
	// fill at least SpliceMinBytes, the smallest row group it copies) are
	// copied at this rate instead of re-encoded at MergeBytesPerSec; near
	// each overlap a row group's worth (SpliceRowGroupBytes) on each side
	// is re-encoded too. 0 (the default) re-encodes every byte, and the
	// planner plans no absorb bins (plan.Config.AbsorbMaxReencode), as the
	// process does with the splice off.
	SpliceBytesPerSec   float64
	SpliceMinBytes      float64
	SpliceRowGroupBytes float64
	// SplitSparse models a rewriter that also cuts its output where the
	// row density falls below this fraction of the bin's median density,
	// so the sparse late rows of a bin land in their own small file
	// instead of stretching a large one over minutes. 0 (the default)
	// models a writer that cuts by size only, as merge does today.
	SplitSparse float64
	// DrainSplitSparse models a drain that cuts each partition's rows of a
	// batch the same way before it writes them: a batch's late rows, far
	// sparser than its on-time window, land in their own generation-0 file
	// and the on-time file keeps a tight range. 0 writes one file per
	// partition per batch.
	DrainSplitSparse float64
	// LateStream tags the sparse runs the cuts make (and the outputs of
	// bins of such files) as late files (level.File.Late), which the
	// planner plans apart from the on-time files, as siglake's writers do
	// when cuts are on. false leaves every file on-time.
	LateStream bool
	// PassTimeLimit gives the planner the rewriter's measured speed
	// (plan.Input.Rewriter, a plan.RewriteRate over the simulated
	// bins), as the maintainer does, so a pass holds about one L0 check
	// interval of work. false plans without it.
	PassTimeLimit bool
	// Stalls are windows in which the sealed WAL backlog is high, to see
	// graded backpressure at work.
	Stalls []Stall
	// SampleEvery is how often depth and file counts are recorded.
	// Default 1 min.
	SampleEvery time.Duration
	// SettledAfter: "settled depth" counts only files whose newest row is
	// at least this old, to show the layout behind the ingest edge.
	// Default 15 min.
	SettledAfter time.Duration
	// Seed makes the run reproducible.
	Seed uint64
	// Config is the planner configuration; Config.Leveled picks the
	// strategy.
	Config plan.Config
	// Progress, when set, is called with the simulated time done after each sample (a long run
	// shows it on a terminal); it does not change the run.
	Progress func(strategy string, done, total time.Duration) `json:"-"`
}

// Stall is a window of simulated time with a high sealed WAL backlog.
type Stall struct {
	From, To time.Duration
	// Sealed is the backlog reported to the planner inside the window.
	Sealed int
}

// Base is a realistic default scenario: 24 h at 50 MB/s from 20 pods with
// 5% of rows late by a minute on average, hourly partitions, a rewriter
// doing 200 MB/s. Change fields to taste.
func Base() Scenario {
	return Scenario{
		Name:              "base",
		Pods:              20,
		IngestBytesPerSec: 50e6,
		RowBytes:          200,
		CommitMaxAge:      10 * time.Second,
		CommitTargetBytes: 32 << 20,
		ArrivalDelay:      2 * time.Second,
		LateFraction:      0.05,
		LateMean:          time.Minute,
		PartitionWidth:    time.Hour,
		Duration:          24 * time.Hour,
		Tick:              10 * time.Second,
		MergeBytesPerSec:  200e6,
		BinOverhead:       time.Second,
		SampleEvery:       time.Minute,
		SettledAfter:      15 * time.Minute,
		Seed:              1,
		Config:            plan.DefaultConfig(),
	}
}

func (s Scenario) withDefaults() Scenario {
	if s.Pods < 1 {
		s.Pods = 1
	}
	if s.Workers < 1 {
		s.Workers = 1
	}
	if s.RowBytes <= 0 {
		s.RowBytes = 200
	}
	if s.CommitMaxAge <= 0 {
		s.CommitMaxAge = 10 * time.Second
	}
	if s.Tick <= 0 {
		s.Tick = 10 * time.Second
	}
	if s.SampleEvery <= 0 {
		s.SampleEvery = time.Minute
	}
	if s.SettledAfter <= 0 {
		s.SettledAfter = 15 * time.Minute
	}
	if s.MergeBytesPerSec <= 0 {
		s.MergeBytesPerSec = 200e6
	}
	if s.SpliceRowGroupBytes <= 0 {
		s.SpliceRowGroupBytes = 128 << 10 * s.RowBytes // writer.DefaultRowGroupRows rows
	}
	if s.SpliceMinBytes <= 0 {
		s.SpliceMinBytes = s.SpliceRowGroupBytes / 2 // merge.DefaultSpliceMinRows
	}
	if s.SpliceBytesPerSec <= 0 {
		// A rewriter without the splice, as the process with the splice off: absorb bins would
		// re-encode their terminal file whole (config.PlanConfig does the same).
		s.Config.AbsorbMaxReencode = 0
	}
	s.LateFraction = min(max(s.LateFraction, 0), 1)
	return s
}

// Validate reports scenario settings that cannot be simulated.
func (s Scenario) Validate() error {
	switch {
	case s.Duration <= 0:
		return fmt.Errorf("scenario %q: duration %v must be > 0", s.Name, s.Duration)
	case s.IngestBytesPerSec <= 0:
		return fmt.Errorf("scenario %q: ingest rate %v B/s must be > 0", s.Name, s.IngestBytesPerSec)
	case s.LateFraction < 0 || s.LateFraction > 1:
		return fmt.Errorf("scenario %q: late fraction %v must be in [0, 1]", s.Name, s.LateFraction)
	case s.LateMean < 0 || s.ArrivalDelay < 0 || s.PartitionWidth < 0:
		return fmt.Errorf("scenario %q: durations must be >= 0", s.Name)
	case s.Workers < 0:
		return fmt.Errorf("scenario %q: workers %d must be >= 0 (0 means 1)", s.Name, s.Workers)
	}
	return s.Config.Validate()
}

// Strategy names the planner strategy a scenario runs.
func (s Scenario) Strategy() string {
	if s.Config.Leveled {
		return "leveled"
	}
	return "legacy"
}
