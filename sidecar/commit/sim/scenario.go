// Package sim compares direct commits with group commit on one table, in virtual time, with no
// I/O and no clock: N pods produce batches, every commit attempt loads the table, stages and
// commits after a service time and conflicts when the table's head moved meanwhile (the catalog's
// compare-and-swap). In direct mode every pod commits its own batches with the drain's retries
// (lake.DefaultRetry, then the drain's per-table backoff); in group mode the pods hand their
// batches to the table's committer, which commits what is queued once per interval, and only
// maintenance and fallbacks race it. A failover loses the committer's queue: pods time out,
// re-read their marks and resend to the new owner, or commit directly after the fallback bound.
//
// The service times are fitted to the measured direct numbers of docs/benchmarks.md ("Concurrent
// drainers on one table"; testdata/measured.json and TestFitsMeasured). Same seed, same Result.
package sim

import (
	"fmt"
	"time"
)

// Mode is how pods commit.
type Mode string

const (
	Direct Mode = "direct" // every pod commits its own batches (group commit off)
	Group  Mode = "group"  // pods hand batches to the table's committer
)

// Service is the cost of one commit attempt, fitted to the measured direct runs (Fitted). An
// attempt takes Base + PerFile x files + PerPropertyKB x the table's properties in KB (marks of
// every stream, rewritten in every metadata.json) + PerManifestRead x manifests when the attempt
// merges manifests, times a spread uniform in [1-Spread, 1+Spread].
type Service struct {
	Base            time.Duration
	PerFile         time.Duration
	PerManifestRead time.Duration
	PerPropertyKB   time.Duration
	// PerInFlight is added per other attempt in flight when an attempt starts: concurrent
	// writers share the catalog, the object store and (in the measured runs) two cores.
	PerInFlight time.Duration
	Spread      float64
	// Write is a pod's work on a batch before it commits (read the WAL, write and upload the
	// Parquet); it is on the request's lag but not on the table.
	Write time.Duration
	// CPUPerRequest and CPUPerCommit model the committer's CPU (decode, check and answer a
	// request; stage and write a commit), fitted to the harness at 1,000 pods (docs/benchmarks.md,
	// "Connections kept"): about 20 ms a commit in the profile's commit loop, the rest about
	// 200 µs a request over two runs.
	CPUPerRequest time.Duration
	CPUPerCommit  time.Duration
}

// Fitted is the service fitted to docs/benchmarks.md's measured direct runs (PostgreSQL catalog,
// versitygw S3, on the shared test machine).
func Fitted() Service {
	return Service{
		Base:            45 * time.Millisecond,
		PerFile:         2 * time.Millisecond,
		PerManifestRead: 5 * time.Millisecond,
		PerPropertyKB:   200 * time.Microsecond,
		PerInFlight:     75 * time.Millisecond,
		Spread:          0.5,
		Write:           40 * time.Millisecond,
		CPUPerRequest:   200 * time.Microsecond,
		CPUPerCommit:    20 * time.Millisecond,
	}
}

// Scenario is one modelled table, its pods and its committer.
type Scenario struct {
	Name string
	Pods int
	// RequestsPerPodPerSec is each pod's batch rate (1 / commitBatch.maxAge at the rate it
	// ingests); a pod still waiting on its last batch adds what came due to its next one.
	RequestsPerPodPerSec float64
	// Batches, when > 0, replaces the rate: every pod has this many batches ready at the start
	// and commits them one by one, and the run ends when all are committed (the measured
	// benchmark's shape: a full WAL and --commit-batch-target-mb 0).
	Batches         int
	BytesPerRequest float64
	FilesPerRequest int
	Mode            Mode
	// Interval and MaxFiles are group-commit-interval and group-commit-max-files.
	Interval time.Duration
	MaxFiles int
	// MaxWait and TargetBytes are group-commit-max-wait and group-commit-target-mb (in bytes): a
	// tick commits once the oldest queued request would wait past MaxWait by the next, or the
	// queue holds TargetBytes or MaxFiles.
	MaxWait     time.Duration
	TargetBytes float64
	// MergeMinCount is commit.manifest.min-count-to-merge (0: no merging).
	MergeMinCount int
	// MaintenanceCommitsPerSec are the table's rewrite, retention and expiry commits (Poisson),
	// made by another process, so they race appends in both modes.
	MaintenanceCommitsPerSec float64
	// FailoverAt, when > 0, kills the committer then (its queue and the commit in flight are lost);
	// a new owner takes over FailoverGap later (lease settle).
	FailoverAt  time.Duration
	FailoverGap time.Duration
	// FallbackAfter is group-commit-fallback-after: a pod that heard nothing from a committer for
	// this long commits directly.
	FallbackAfter time.Duration
	Service       Service
	Seed          uint64
	// Duration is the simulated time (rate mode); with Batches the run ends when they are in.
	Duration time.Duration
}

// Base is a steady-state scenario: 0.1 batches per pod per second (the default 10 s batch age)
// of 32 MiB (commitBatch.targetMb) in 4 files, group commit at its defaults, one maintenance commit a minute, 10 minutes.
func Base(pods int, mode Mode) Scenario {
	return Scenario{
		Name: fmt.Sprintf("%s-%d", mode, pods), Pods: pods, RequestsPerPodPerSec: 0.1,
		BytesPerRequest: 32 << 20, FilesPerRequest: 4, Mode: mode, Interval: time.Second, MaxFiles: 512,
		MaxWait: 4 * time.Second, TargetBytes: 1 << 30,
		MergeMinCount: 100, MaintenanceCommitsPerSec: 1.0 / 60, FailoverGap: 10 * time.Second,
		FallbackAfter: 30 * time.Second, Service: Fitted(), Seed: 1, Duration: 10 * time.Minute,
	}
}

// Validate reports settings that cannot be simulated.
func (s Scenario) Validate() error {
	switch {
	case s.Pods < 1:
		return fmt.Errorf("scenario %q: %d pods, want at least 1", s.Name, s.Pods)
	case s.Mode != Direct && s.Mode != Group:
		return fmt.Errorf("scenario %q: mode %q, want %q or %q", s.Name, s.Mode, Direct, Group)
	case s.Batches <= 0 && (s.RequestsPerPodPerSec <= 0 || s.Duration <= 0):
		return fmt.Errorf("scenario %q: want a request rate and a duration above 0, or batches", s.Name)
	case s.Mode == Group && (s.Interval <= 0 || s.MaxFiles < 1 || s.FallbackAfter <= 0):
		return fmt.Errorf("scenario %q: group mode wants an interval, max files and a fallback bound above 0", s.Name)
	case s.Service.Base <= 0 || s.Service.Spread < 0 || s.Service.Spread >= 1:
		return fmt.Errorf("scenario %q: service base must be > 0 and spread in [0, 1)", s.Name)
	case s.BytesPerRequest <= 0 || s.FilesPerRequest < 1 || s.MaintenanceCommitsPerSec < 0 || s.FailoverAt < 0:
		return fmt.Errorf("scenario %q: want bytes and files per request above 0, no negative rates or times", s.Name)
	}
	return nil
}
