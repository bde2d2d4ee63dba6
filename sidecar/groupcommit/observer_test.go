package groupcommit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/commit"
	"github.com/siglake/siglake/sidecar/internal/promtest"
	"github.com/siglake/siglake/sidecar/peerhttp"
)

// TestObserver: every Observer method moves its metric; fallbacks, refusals and failed
// commits are logged at most once a minute per kind, saying how many each line stands for;
// Forget drops the table's committer gauges only.
func TestObserver(t *testing.T) {
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	now := time.Unix(1_800_000_000, 0)
	o := NewObserver(NewMetrics(reg), zap.New(core))
	o.Now = func() time.Time { return now }
	m := o.Metrics
	if n := testutil.CollectAndCount(m.Fallbacks); n != len(GroupFallbackReasons) {
		t.Fatalf("%d fallback series at start, want %d", n, len(GroupFallbackReasons))
	}
	if n := testutil.CollectAndCount(m.Refused); n != len(GroupRefusedReasons) {
		t.Fatalf("%d refused series at start, want %d", n, len(GroupRefusedReasons))
	}

	var ob commit.Observer = o
	ob.RequestDone("events", commit.OutcomeCommitted, 2*time.Second)
	ob.RequestDone("events", commit.OutcomeDirect, 40*time.Second)
	for range 3 {
		ob.Fallback("events", commit.FallbackTimeout)
	}
	ob.Busy("events")
	ob.SlowDown("events", 4*time.Second)
	for range 2 {
		ob.Refused(commit.ReasonInvalid)
	}
	ob.Refused(commit.ReasonBusy)
	ob.Queued("events", 7, 1000)
	ob.Queued("audit", 1, 24)
	ob.Commit("events", commit.CommitConflict, 1)
	ob.Commit("events", commit.CommitCommitted, 2)
	ob.Commit("events", commit.CommitFailed, 4)
	ob.Committed("events", 5, []time.Duration{time.Second, 2 * time.Second}, 300*time.Millisecond)
	ob.AnswerDropped()
	ob.MarksPruned("events", 3)
	ob.CompleteThrough("events", time.UnixMilli(1_700_000_000_500), 12)

	for what, c := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"committed":        {m.Requests.WithLabelValues("events", "committed"), 1},
		"direct":           {m.Requests.WithLabelValues("events", "direct"), 1},
		"mark_ahead at 0":  {m.Requests.WithLabelValues("events", "mark_ahead"), 0},
		"timeout":          {m.Fallbacks.WithLabelValues("timeout"), 3},
		"busy":             {m.Busy.WithLabelValues("events"), 1},
		"slow down":        {m.SlowDown.WithLabelValues("events"), 4},
		"refused invalid":  {m.Refused.WithLabelValues("invalid"), 2},
		"refused busy":     {m.Refused.WithLabelValues("busy"), 1},
		"queue requests":   {m.QueueRequests.WithLabelValues("events"), 7},
		"queue bytes":      {m.QueueBytes, 1024},
		"conflict":         {m.Commits.WithLabelValues("events", "conflict"), 1},
		"commit committed": {m.Commits.WithLabelValues("events", "committed"), 1},
		"commit failed":    {m.Commits.WithLabelValues("events", "failed"), 1},
		"unknown at 0":     {m.Commits.WithLabelValues("events", "unknown"), 0},
		"answers dropped":  {m.AnswersDropped, 1},
		"marks pruned":     {m.MarksPruned.WithLabelValues("events"), 3},
		"complete through": {m.CompleteThrough.WithLabelValues("events"), 1_700_000_000.5},
		"live streams":     {m.LiveStreams.WithLabelValues("events"), 12},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", what, got, c.want)
		}
	}
	for name, want := range map[string]uint64{"siglake_group_commit_lag_seconds": 2, "siglake_group_commit_requests_per_commit": 1,
		"siglake_group_commit_queue_wait_seconds": 2} {
		if got := promtest.HistogramCount(t, reg, name); got != want {
			t.Errorf("%s: %d samples, want %d", name, got, want)
		}
	}

	// One line per kind: the first timeout fallback, the first invalid refusal, the failed commit.
	// A minute later the next fallback line says it stands for the two held back and itself.
	var msgs []string
	for _, e := range logs.All() {
		msgs = append(msgs, e.Message)
	}
	if len(msgs) != 4 || !strings.HasPrefix(msgs[0], "group commit: committing a batch directly") ||
		!strings.HasPrefix(msgs[1], "group commit: refused a request") || !strings.HasPrefix(msgs[2], "group commit failed") ||
		!strings.HasPrefix(msgs[3], "group commit: pruned the marks") {
		t.Fatalf("logged %q", msgs)
	}
	now = now.Add(logEvery)
	ob.Fallback("events", commit.FallbackTimeout)
	last := logs.All()[logs.Len()-1]
	if last.ContextMap()["fallbacks_since_last_line"] != int64(3) {
		t.Fatalf("a minute later: %s %v, want a line standing for 3 fallbacks", last.Message, last.ContextMap())
	}

	// Forget: the committer gauges of events go, audit's stay; its bytes leave the sum; the pod's
	// counters and slow-down stay.
	ob.Forget("events")
	if n := testutil.CollectAndCount(m.QueueRequests); n != 1 {
		t.Errorf("%d queue series after Forget, want audit's", n)
	}
	if n := testutil.CollectAndCount(m.CompleteThrough) + testutil.CollectAndCount(m.LiveStreams); n != 0 {
		t.Errorf("%d watermark series after Forget", n)
	}
	if got := testutil.ToFloat64(m.QueueBytes); got != 24 {
		t.Errorf("queue bytes after Forget = %v, want audit's 24", got)
	}
	if got := testutil.ToFloat64(m.SlowDown.WithLabelValues("events")); got != 4 {
		t.Errorf("slow down after Forget = %v", got)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}

// TestPeerObserver: the HTTP transport's refusals are counted by reason (every reason at 0 from
// the start) and logged at most once a minute per reason; accepted messages are counted.
func TestPeerObserver(t *testing.T) {
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	m := NewMetrics(reg)
	if n := testutil.CollectAndCount(m.PeerRefused); n != len(peerhttp.Reasons) {
		t.Fatalf("%d refused series at start, want %d", n, len(peerhttp.Reasons))
	}
	o := &PeerObserver{Metrics: m, Log: zap.New(core)}
	for range 3 {
		o.Refused(peerhttp.ReasonBadSignature, "10.0.0.9:8080", errors.New("the MAC matches none of this member's keys"))
	}
	o.Refused(peerhttp.ReasonStale, "10.0.0.9:8080", errors.New("sent 40s ago"))
	o.Received('G')
	if got := testutil.ToFloat64(m.PeerRefused.WithLabelValues(peerhttp.ReasonBadSignature)); got != 3 {
		t.Fatalf("bad_signature counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.PeerReceived); got != 1 {
		t.Fatalf("received %v, want 1", got)
	}
	lines := logs.FilterMessage("refused a group commit message on the HTTP listener").All()
	if len(lines) != 2 || lines[0].ContextMap()["reason"] != peerhttp.ReasonBadSignature || lines[0].ContextMap()["claimed_sender"] != "10.0.0.9:8080" {
		t.Fatalf("log lines %v: want one per reason, naming the reason and the claimed sender", lines)
	}
}
