// Package groupcommit is the process side of group commit (sidecar/commit): the observer that
// turns what the committer and the pod's client report into the metrics of docs/metrics.md
// ("Group commit") and rate-limited logs. It lives apart from sidecar/commit, a protocol package
// that imports neither prometheus nor zap.
package groupcommit

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/peerhttp"
)

// Label values of the group commit counters, exported at 0 from the start (the reasons) or once
// the table is seen (the outcomes), so the first fallback or failed commit shows in increase().
var (
	GroupFallbackReasons = []string{commit.FallbackNoCommitter, commit.FallbackUnauthenticated, commit.FallbackTooLarge,
		commit.FallbackTimeout, commit.FallbackExpired, commit.FallbackRefused}
	GroupRequestOutcomes = []string{commit.OutcomeCommitted, commit.OutcomeAlreadyCommitted, commit.OutcomeMarkAhead,
		commit.OutcomeFailed, commit.OutcomeDirect}
	GroupCommitOutcomes = []string{commit.CommitCommitted, commit.CommitConflict, commit.CommitUnknown, commit.CommitFailed}
	GroupRefusedReasons = []string{commit.ReasonBusy, commit.ReasonNotOwner, commit.ReasonInvalid, commit.ReasonCatalog,
		commit.OutcomeExpired, commit.ReasonUnauthenticated}
	GroupAnswerOutcomes = []string{commit.OutcomeCommitted, commit.OutcomeAlreadyCommitted, commit.OutcomeMarkAhead,
		commit.OutcomeExpired, commit.OutcomeRefused, commit.OutcomeFailed}
)

// Metrics are group commit's metrics, pod side and committer side (docs/metrics.md
// "Group commit").
type Metrics struct {
	// Pod side.
	Lag       *prometheus.HistogramVec // table: first send to known outcome
	Requests  *prometheus.CounterVec   // table, outcome
	Fallbacks *prometheus.CounterVec   // reason
	Busy      *prometheus.CounterVec   // table
	SlowDown  *prometheus.GaugeVec     // table

	// Committer side. The per-table gauges exist only while this process commits the table.
	QueueRequests   *prometheus.GaugeVec // table
	QueueBytes      prometheus.Gauge
	Commits         *prometheus.CounterVec // table, outcome
	RequestsPerCmt  prometheus.Histogram
	QueueWait       prometheus.Histogram
	Refused         *prometheus.CounterVec // reason
	AnswersDropped  prometheus.Counter
	Answers         *prometheus.CounterVec // outcome
	MarksPruned     *prometheus.CounterVec // table
	CompleteThrough *prometheus.GaugeVec   // table
	LiveStreams     *prometheus.GaugeVec   // table

	// Over HTTP (no gossip): messages received and refused by the peer transport.
	PeerReceived prometheus.Counter
	PeerRefused  *prometheus.CounterVec // reason
}

// NewMetrics registers group commit's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	table := []string{"table"}
	m := &Metrics{
		Lag: prometheus.NewHistogramVec(instrument.NativeHistogram(prometheus.HistogramOpts{
			Name: "siglake_group_commit_lag_seconds", Help: "Pod side: time from a batch's first hand-off to the answer or re-read mark showing its outcome (request to visible), direct fallbacks included; for a batch never handed off, its direct commit.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}), table),
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_requests_total", Help: "Pod side: batches of group commit's drain, by outcome: committed, already_committed, mark_ahead, failed, direct (committed by the pod itself: after a fallback, or never handed off)."}, []string{"table", "outcome"}),
		Fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_fallbacks_total", Help: "Pod side: batches the pod committed directly instead, by reason: no_committer, unauthenticated, too_large, timeout, expired, refused."}, []string{"reason"}),
		Busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_busy_total", Help: "Pod side: busy answers (the committer's queue is at a cap or its memory budget is spent; the pod keeps the batch and resends)."}, table),
		SlowDown: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_group_commit_slow_down_seconds", Help: "Pod side: the batch age the table's committer asks for now (0: none); the pod batches at least this long."}, table),
		QueueRequests: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_group_commit_queue_requests", Help: "Committer: requests queued for the table."}, table),
		QueueBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_group_commit_queue_bytes", Help: "Committer: encoded bytes of the requests queued over all tables (capped at 64 MiB)."}),
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_commits_total", Help: "Committer: group commit attempts by outcome: committed, conflict (retried on the new head), unknown (outcome lost; marks re-read), failed."}, []string{"table", "outcome"}),
		RequestsPerCmt: prometheus.NewHistogram(instrument.NativeHistogram(prometheus.HistogramOpts{
			Name: "siglake_group_commit_requests_per_commit", Help: "Committer: requests one landed group commit answered.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13)})),
		QueueWait: prometheus.NewHistogram(instrument.NativeHistogram(prometheus.HistogramOpts{
			Name: "siglake_group_commit_queue_wait_seconds", Help: "Committer: time a request waited in the queue before the commit that landed it.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)})),
		Refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_refused_total", Help: "Committer: requests not queued, by reason: busy, not_owner, invalid, catalog, expired, unauthenticated."}, []string{"reason"}),
		AnswersDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_group_commit_answers_dropped_total", Help: "Committer: answers not sent (the sender's queue was full or the send failed); the pod re-reads its mark."}),
		Answers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_answers_total", Help: "Committer: final answers sent, by outcome: committed, already_committed and mark_ahead (another writer committed the range: a lost answer, a pod that fell back, a second committer), expired, refused, failed."}, []string{"outcome"}),
		MarksPruned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_group_commit_marks_pruned_total", Help: "Committer: stream marks removed after --mark-prune-after without a commit."}, table),
		CompleteThrough: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_table_complete_through_timestamp_seconds", Help: "Committer: the table's complete-through watermark, Unix time: every row a live stream sealed by then is committed."}, table),
		LiveStreams: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_group_commit_live_streams", Help: "Committer: streams heard from within their liveness window, over which the watermark is taken."}, table),
		PeerReceived: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_peer_messages_received_total", Help: "Group commit without gossip: signed messages accepted on the HTTP listener's peer path."}),
		PeerRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_peer_messages_refused_total", Help: "Group commit without gossip: messages refused on the HTTP listener's peer path, by reason: unsigned, bad_signature, stale, too_large, wrong_recipient, no_handler, no_key, method, busy."}, []string{"reason"}),
	}
	reg.MustRegister(m.PeerReceived, m.PeerRefused)
	for _, r := range peerhttp.Reasons {
		m.PeerRefused.WithLabelValues(r)
	}
	reg.MustRegister(m.Lag, m.Requests, m.Fallbacks, m.Busy, m.SlowDown, m.QueueRequests, m.QueueBytes, m.Commits,
		m.RequestsPerCmt, m.QueueWait, m.Refused, m.AnswersDropped, m.Answers, m.MarksPruned, m.CompleteThrough, m.LiveStreams)
	for _, r := range GroupFallbackReasons {
		m.Fallbacks.WithLabelValues(r)
	}
	for _, r := range GroupRefusedReasons {
		m.Refused.WithLabelValues(r)
	}
	for _, oc := range GroupAnswerOutcomes {
		m.Answers.WithLabelValues(oc)
	}
	return m
}

// logEvery is the least time between two log lines of one kind (a fallback reason, a refusal
// reason, a table's failed commits): a committer down for 1,000 pods must not log per batch.
const logEvery = time.Minute

// Observer turns what the committer and the client report (commit.Observer) into
// metrics and rate-limited log lines: one per kind per minute, saying how many it stood for.
type Observer struct {
	Metrics *Metrics
	Log     *zap.Logger
	Now     func() time.Time // time.Now when nil

	mu         sync.Mutex
	queueBytes map[string]int // per table, summed into QueueBytes
	logged     map[string]time.Time
	suppressed map[string]int
}

var _ commit.Observer = (*Observer)(nil)

// NewObserver observes into m and log.
func NewObserver(m *Metrics, log *zap.Logger) *Observer {
	return &Observer{Metrics: m, Log: log}
}

func (o *Observer) RequestDone(table, outcome string, lag time.Duration) {
	for _, oc := range GroupRequestOutcomes {
		o.Metrics.Requests.WithLabelValues(table, oc) // the table's outcomes at 0
	}
	o.Metrics.Requests.WithLabelValues(table, outcome).Inc()
	o.Metrics.Lag.WithLabelValues(table).Observe(lag.Seconds())
}

func (o *Observer) Fallback(table, reason string) {
	o.Metrics.Fallbacks.WithLabelValues(reason).Inc()
	if n, ok := o.due("fallback " + reason); ok {
		o.Log.Warn("group commit: committing a batch directly", zap.String("table", table), zap.String("reason", reason),
			zap.Int("fallbacks_since_last_line", n))
	}
}

func (o *Observer) Busy(table string) { o.Metrics.Busy.WithLabelValues(table).Inc() }

func (o *Observer) SlowDown(table string, d time.Duration) {
	o.Metrics.SlowDown.WithLabelValues(table).Set(d.Seconds())
}

func (o *Observer) Refused(reason string) {
	o.Metrics.Refused.WithLabelValues(reason).Inc()
	if reason == commit.ReasonBusy || reason == commit.ReasonNotOwner {
		return // backpressure and ownership moves: answered, counted, nothing to act on
	}
	if n, ok := o.due("refused " + reason); ok {
		o.Log.Warn("group commit: refused a request; its pod commits directly", zap.String("reason", reason),
			zap.Int("refusals_since_last_line", n))
	}
}

func (o *Observer) Queued(table string, requests, bytes int) {
	o.Metrics.QueueRequests.WithLabelValues(table).Set(float64(requests))
	o.setQueueBytes(table, bytes, true)
}

func (o *Observer) Commit(table, outcome string, attempts int) {
	for _, oc := range GroupCommitOutcomes {
		o.Metrics.Commits.WithLabelValues(table, oc)
	}
	o.Metrics.Commits.WithLabelValues(table, outcome).Inc()
	if outcome != commit.CommitFailed && outcome != commit.CommitUnknown {
		return
	}
	if n, ok := o.due("commit " + outcome + " " + table); ok {
		msg := "group commit failed; its requests are answered failed and their pods re-read their marks"
		if outcome == commit.CommitUnknown {
			msg = "group commit outcome unknown; the marks decide on the next attempt"
		}
		o.Log.Warn(msg, zap.String("table", table), zap.Int("attempts", attempts), zap.Int("like_it_since_last_line", n))
	}
}

func (o *Observer) Committed(table string, requests int, waits []time.Duration, took time.Duration) {
	o.Metrics.RequestsPerCmt.Observe(float64(requests))
	for _, w := range waits {
		o.Metrics.QueueWait.Observe(w.Seconds())
	}
}

func (o *Observer) AnswerDropped() { o.Metrics.AnswersDropped.Inc() }

func (o *Observer) Answered(outcome string) { o.Metrics.Answers.WithLabelValues(outcome).Inc() }

func (o *Observer) MarksPruned(table string, n int) {
	o.Metrics.MarksPruned.WithLabelValues(table).Add(float64(n))
	o.Log.Info("group commit: pruned the marks of streams gone past --mark-prune-after", zap.String("table", table), zap.Int("marks", n))
}

func (o *Observer) CompleteThrough(table string, t time.Time, live int) {
	o.Metrics.CompleteThrough.WithLabelValues(table).Set(float64(t.UnixMilli()) / 1e3)
	o.Metrics.LiveStreams.WithLabelValues(table).Set(float64(live))
}

// Forget drops the table's committer gauges (its queue, watermark and live streams): another
// member commits it now, and two pods must not both export a table's watermark.
func (o *Observer) Forget(table string) {
	o.Metrics.QueueRequests.DeleteLabelValues(table)
	o.Metrics.CompleteThrough.DeleteLabelValues(table)
	o.Metrics.LiveStreams.DeleteLabelValues(table)
	o.setQueueBytes(table, 0, false)
}

// setQueueBytes records a table's queued bytes (or drops the table) and exports the sum.
func (o *Observer) setQueueBytes(table string, bytes int, keep bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.queueBytes == nil {
		o.queueBytes = map[string]int{}
	}
	if keep {
		o.queueBytes[table] = bytes
	} else {
		delete(o.queueBytes, table)
	}
	sum := 0
	for _, b := range o.queueBytes {
		sum += b
	}
	o.Metrics.QueueBytes.Set(float64(sum))
}

// due reports whether a line of kind may be logged now, and how many were held back since the
// last one (this one included).
func (o *Observer) due(kind string) (n int, ok bool) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	t := now()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.logged == nil {
		o.logged, o.suppressed = map[string]time.Time{}, map[string]int{}
	}
	o.suppressed[kind]++
	if last, seen := o.logged[kind]; seen && t.Sub(last) < logEvery {
		return 0, false
	}
	n = o.suppressed[kind]
	o.logged[kind], o.suppressed[kind] = t, 0
	return n, true
}
