package sim

import (
	"fmt"
	"math"
	"slices"
)

// Result is what one run measured.
type Result struct {
	Scenario string
	Mode     Mode
	Pods     int
	Seconds  float64 // simulated

	// CommitsPerSec are appends landed on the table per second (maintenance commits aside).
	CommitsPerSec float64
	// ConflictFraction is the share of append attempts that lost to a moved head.
	ConflictFraction float64
	// LagP50 and LagP99 are request to visible, seconds: from a batch coming due to the commit
	// that made it visible (waiting behind the pod's previous batch, writing and retries included).
	LagP50, LagP99 float64
	// MetadataReadPerGB is metadata (metadata.json and manifest lists) read per GB committed, in
	// MB; ObjectsPerGB are the metadata objects written per GB (three per attempt, a conflicting
	// one's included).
	MetadataReadPerGB float64
	ObjectsPerGB      float64
	// CommitterCPU is the committer's share of one core (group mode; 0 in direct mode).
	CommitterCPU float64

	// The measured benchmark's quantities, to fit against: direct commit calls (one CommitAppend
	// each, up to its attempts; fallbacks included) and their durations, and the share that
	// committed within their attempts.
	CallP50, CallP99, CallMean float64
	FirstRoundSuccess          float64

	Batches, Requests, Commits, Attempts, Conflicts int
	Calls, FailedCalls, Fallbacks                   int
	// GroupFailed are group commits that exhausted the committer's attempts (their requests
	// are sent again).
	GroupFailed int
	// AlreadyCommitted are requests a pod found committed by its mark after a lost answer.
	AlreadyCommitted   int
	MaintenanceCommits int
	// Visible are batches committed by the end, Waiting those not yet (their age then is in the
	// lags): every batch is in exactly one of them.
	Visible, Waiting int

	committedBytes, metadataRead, metadataObjects float64
}

func (w *world) result(end int64) Result {
	r := w.res
	r.Seconds = float64(end) / 1e6
	if r.Seconds > 0 {
		r.CommitsPerSec = float64(r.Commits) / r.Seconds
		r.CommitterCPU = w.cpuUs / 1e6 / r.Seconds
	}
	if r.Attempts > 0 {
		r.ConflictFraction = float64(r.Conflicts) / float64(r.Attempts)
	}
	if r.Calls > 0 {
		r.FirstRoundSuccess = 1 - float64(r.FailedCalls)/float64(r.Calls)
	}
	if gb := r.committedBytes / 1e9; gb > 0 {
		r.MetadataReadPerGB = r.metadataRead / 1e6 / gb
		r.ObjectsPerGB = r.metadataObjects / gb
	}
	r.LagP50, r.LagP99 = quantile(w.lags, 0.5), quantile(w.lags, 0.99)
	r.CallP50, r.CallP99 = quantile(w.calls, 0.5), quantile(w.calls, 0.99)
	for _, c := range w.calls {
		r.CallMean += c / float64(len(w.calls))
	}
	return r
}

// quantile is the q-quantile of xs (nearest rank), 0 when empty; xs is sorted in place.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[int(math.Ceil(q*float64(len(xs))))-1]
}

func (r Result) String() string {
	return fmt.Sprintf("%s %s %d pods: %.2f commits/s, %.1f%% conflicts, lag p50 %.2fs p99 %.2fs, metadata read %.0f MB/GB, %.1f objects/GB, committer CPU %.2f%%; calls p50 %.2fs p99 %.2fs mean %.2fs, %.0f%% first round; %d batches, %d commits, %d attempts, %d fallbacks, %d waiting at the end",
		r.Scenario, r.Mode, r.Pods, r.CommitsPerSec, 100*r.ConflictFraction, r.LagP50, r.LagP99, r.MetadataReadPerGB,
		r.ObjectsPerGB, 100*r.CommitterCPU, r.CallP50, r.CallP99, r.CallMean, 100*r.FirstRoundSuccess, r.Batches,
		r.Commits, r.Attempts, r.Fallbacks, r.Waiting)
}
