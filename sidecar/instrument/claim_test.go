package instrument

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/sidecar/claim"
)

// TestClaimObserver: the claim manager's events become the metrics and log lines it used to
// record itself.
func TestClaimObserver(t *testing.T) {
	reg := prometheus.NewRegistry()
	core, logs := observer.New(zap.InfoLevel)
	o := ClaimObserver{Metrics: NewClaimMetrics(reg), Log: zap.New(core)}
	if n := testutil.CollectAndCount(o.Metrics.Commits); n != len(claim.CommitOutcomes) {
		t.Fatalf("%d commit outcome series at start, want %d", n, len(claim.CommitOutcomes))
	}
	var m claim.Manager
	m.Observer = o
	m.Fenced()
	o.Committed(claim.Conflict)
	o.Committed(claim.Committed)
	o.Held(3)
	o.Skipped(2)
	o.TakenOver("s1", "pod-b", time.Unix(0, 0), 4)
	o.Lost("s2", "pod-c", 5)
	o.TickFailed(errors.New("catalog down"))
	for what, c := range map[string]struct {
		c    prometheus.Collector
		want float64
	}{
		"fenced": {o.Metrics.FencedSkip, 1}, "conflict": {o.Metrics.Commits.WithLabelValues("conflict"), 1},
		"committed": {o.Metrics.Commits.WithLabelValues("committed"), 1}, "failed": {o.Metrics.Commits.WithLabelValues("failed"), 0},
		"held": {o.Metrics.Held, 3}, "skipped": {o.Metrics.Others, 2}, "takeovers": {o.Metrics.Takeovers, 1},
	} {
		if got := testutil.ToFloat64(c.c); got != c.want {
			t.Errorf("%s = %v, want %v", what, got, c.want)
		}
	}
	var msgs []string
	for _, e := range logs.All() {
		msgs = append(msgs, e.Message)
	}
	want := []string{"claim taken over after its expiry", "claim lost: another process holds the stream now; not committing it",
		"claim tick failed; claims not renewed expire and fence this process"}
	if len(msgs) != len(want) {
		t.Fatalf("logged %q, want %q", msgs, want)
	}
	for i := range want {
		if msgs[i] != want[i] {
			t.Errorf("log %d: %q, want %q", i, msgs[i], want[i])
		}
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
}
