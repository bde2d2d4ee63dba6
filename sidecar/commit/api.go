package commit

import (
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/siglake/siglake/sidecar/commit/filecheck"
	"github.com/siglake/siglake/sidecar/lake"
)

// Membership is what group commit needs of the cluster view. Tables are names in the lake's
// namespace; the adapter in the process maps them to lease keys.
type Membership interface {
	// Authenticated reports whether messages are authenticated right now (a gossip key and no
	// key migration): without it nobody hands off and every request is refused.
	Authenticated() bool
	// Catalog is this process's catalog identity; empty until known (then nobody hands off).
	Catalog() string
	// Owns reports whether this process owns table's commits (its maintenance lease, settled).
	Owns(table string) bool
	// Committer is the member that owns table's commits in this process's view, if it advertises
	// group commit (gossip meta "gc"); ok false: none, so the pod commits directly.
	Committer(table string) (member string, ok bool)
}

// Fallback reasons: why a pod committed a batch directly (siglake_group_commit_fallbacks_total).
const (
	FallbackNoCommitter     = "no_committer"
	FallbackUnauthenticated = "unauthenticated"
	FallbackTooLarge        = "too_large"
	FallbackTimeout         = "timeout"
	FallbackExpired         = "expired"
	FallbackRefused         = "refused"
)

// Pod-side request outcomes (siglake_group_commit_requests_total{outcome}): the Outcome* of a done
// answer, or OutcomeDirect when the batch was committed directly after a fallback.
const OutcomeDirect = "direct"

// Committer-side commit outcomes (siglake_group_commit_commits_total{outcome}).
const (
	CommitCommitted = "committed"
	CommitConflict  = "conflict"
	CommitUnknown   = "unknown"
	CommitFailed    = "failed"
)

// Observer is told what group commit does; the process turns it into metrics and logs (this
// package imports neither). Every method must be cheap and must not block.
type Observer interface {
	// Pod side.
	RequestDone(table, outcome string, lag time.Duration) // a request ended: lag is first send to known outcome
	Fallback(table, reason string)                        // the pod committed directly (then RequestDone OutcomeDirect)
	Busy(table string)                                    // a busy answer
	SlowDown(table string, d time.Duration)               // the batch age the committer asks for now

	// Committer side.
	Refused(reason string)                                                           // a request not queued (Reason* of the queue, or expired)
	Queued(table string, requests, bytes int)                                        // a table's queue after a change
	Commit(table, outcome string, attempts int)                                      // one commit attempt's outcome (Commit*)
	Committed(table string, requests int, waits []time.Duration, took time.Duration) // a group commit landed: its requests' queue waits
	AnswerDropped()                                                                  // an answer not sent (the sender's channel full, or Send failed)
	Answered(outcome string)                                                         // a done answer sent (its Outcome*): a request's final word
	MarksPruned(table string, n int)                                                 // stream marks removed
	CompleteThrough(table string, t time.Time, live int)                             // the published watermark and live streams
	Forget(table string)                                                             // no longer the table's committer: drop its gauges
}

// NopObserver observes nothing.
type NopObserver struct{}

func (NopObserver) RequestDone(string, string, time.Duration)             {}
func (NopObserver) Fallback(string, string)                               {}
func (NopObserver) Busy(string)                                           {}
func (NopObserver) SlowDown(string, time.Duration)                        {}
func (NopObserver) Refused(string)                                        {}
func (NopObserver) Queued(string, int, int)                               {}
func (NopObserver) Commit(string, string, int)                            {}
func (NopObserver) Committed(string, int, []time.Duration, time.Duration) {}
func (NopObserver) AnswerDropped()                                        {}
func (NopObserver) Answered(string)                                       {}
func (NopObserver) MarksPruned(string, int)                               {}
func (NopObserver) CompleteThrough(string, time.Time, int)                {}
func (NopObserver) Forget(string)                                         {}

// CommitterConfig is a committer's options.
type CommitterConfig struct {
	Lake     *lake.Lake
	Interval time.Duration // group-commit-interval
	MaxFiles int           // group-commit-max-files
	// MaxWait is the longest a table's oldest queued request waits for others before its commit
	// starts (group-commit-max-wait): fewer, larger commits on a busy table, so fewer metadata
	// objects per GB. 0, or not above Interval: a commit every interval.
	MaxWait time.Duration
	// TargetBytes starts a table's commit without waiting out MaxWait once its queued batches'
	// data reach it (group-commit-target-mb); 0: DefaultTargetBytes.
	TargetBytes int64
	QueueMax    int // group-commit-queue-max
	// Reserve takes queued requests' bytes of the process memory budget without waiting
	// (QueueConfig.Reserve); nil takes none.
	Reserve func(bytes int64) (release func(), ok bool)
	// FileIO opens the file IO handed-off files are checked through; nil: the table's own.
	FileIO filecheck.OpenFS
	// CommitTimeout is the process's commit deadline d: requests older than
	// orphans.HandoffMaxAge(d) expire.
	CommitTimeout time.Duration
	Retry         lake.Retry
	// Props adds table properties to every group commit (manifest merge, stream last-seen, mark
	// pruning, the watermark), composed by the process; nil adds none.
	Props func(t *table.Table, in []lake.GroupItem, now time.Time) (set iceberg.Properties, remove []string)
	// Landed, if set, is told after a group commit of table landed: the properties of its last
	// attempt's Props are in the table (a failed commit, or one whose outcome is unknown, is not
	// told, so a periodic prune it carried is tried again).
	Landed   func(table string)
	Observer Observer
	Now      func() time.Time
}

// ClientConfig is a pod's hand-off options.
type ClientConfig struct {
	Lake          *lake.Lake
	Retry         lake.Retry                       // the direct fallback's retries (the drain's)
	Interval      time.Duration                    // the committers' group-commit-interval: answer timeouts scale with it
	MaxWait       time.Duration                    // the committers' group-commit-max-wait: answer timeouts wait it out too
	FallbackAfter time.Duration                    // group-commit-fallback-after
	CommitTimeout time.Duration                    // d: a hand-off older than orphans.HandoffMaxAge(d) commits directly
	Every         func(table string) time.Duration // the pod's batch age per table: heartbeat period
	Observer      Observer
	Now           func() time.Time
}

// CommitterStatus is the committer's part of /debug/status (group_commit.committer).
type CommitterStatus struct {
	Tables []CommitterTable `json:"tables"`
}

// CommitterTable is one owned table's committer state.
type CommitterTable struct {
	Table           string        `json:"table"`
	QueueRequests   int           `json:"queue_requests"`
	QueueBytes      int           `json:"queue_bytes"`
	BehindIntervals float64       `json:"behind_intervals"`
	LastCommit      *LastCommit   `json:"last_commit,omitempty"`
	CompleteThrough time.Time     `json:"complete_through,omitempty"`
	LiveStreams     int           `json:"live_streams"`
	Members         []MemberHeard `json:"members,omitempty"` // at most 64, stalest first
}

// LastCommit is a table's last group commit.
type LastCommit struct {
	Time       time.Time `json:"time"`
	Requests   int       `json:"requests"`
	Streams    int       `json:"streams"`
	Files      int       `json:"files"`
	SnapshotID int64     `json:"snapshot_id,omitempty"`
	Seconds    float64   `json:"seconds"`
	Outcome    string    `json:"outcome"`
}

// MemberHeard is a pod a committer heard from.
type MemberHeard struct {
	Name      string    `json:"name"`
	Streams   int       `json:"streams"`
	LastHeard time.Time `json:"last_heard"`
}

// ClientStatus is the pod's part of /debug/status (group_commit.pod).
type ClientStatus struct {
	Outstanding []Outstanding    `json:"outstanding"`
	Fallbacks   map[string]int64 `json:"fallbacks,omitempty"` // by reason, since start
}

// Outstanding is a request the pod is waiting on.
type Outstanding struct {
	ID         string    `json:"id"`
	Table      string    `json:"table"`
	Stream     string    `json:"stream"`
	First      string    `json:"first"`
	Last       string    `json:"last"`
	To         string    `json:"to"`
	Since      time.Time `json:"since"`
	Sends      int       `json:"sends"`
	LastAnswer string    `json:"last_answer,omitempty"` // kind of the last answer heard
}

// defaults fills the options the client and the committer share: the commit deadline of their
// Lake, an observer that observes nothing, the wall clock.
func defaults(l *lake.Lake, commitTimeout *time.Duration, obs *Observer, now *func() time.Time) {
	if *commitTimeout <= 0 && l != nil {
		*commitTimeout = l.CommitTimeout()
	}
	if *obs == nil {
		*obs = NopObserver{}
	}
	if *now == nil {
		*now = time.Now
	}
}
