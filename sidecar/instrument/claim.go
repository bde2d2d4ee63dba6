package instrument

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/claim"
)

// ClaimMetrics are the claim metrics (rows in docs/metrics.md).
type ClaimMetrics struct {
	Held       prometheus.Gauge
	Commits    *prometheus.CounterVec // outcome
	Others     prometheus.Gauge
	Takeovers  prometheus.Counter
	FencedSkip prometheus.Counter
}

// NewClaimMetrics registers the claim metrics on reg.
func NewClaimMetrics(reg prometheus.Registerer) *ClaimMetrics {
	m := &ClaimMetrics{
		Held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_claim_streams_held", Help: "Streams of the WAL root whose catalog claim this process holds."}),
		Commits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_claim_commits_total", Help: "Claim commits (take, renew, release) by outcome: committed, conflict (another claimer committed first; re-read and retried), failed."}, []string{"outcome"}),
		Others: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_claim_streams_skipped", Help: "Streams of the WAL root this process skips because another live process claims them."}),
		Takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_claim_takeovers_total", Help: "Claims taken over from another holder after their expiry."}),
		FencedSkip: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_claim_fenced_batches_total", Help: "Drain batches not committed because the stream's claim was lost, expiring or being released."}),
	}
	reg.MustRegister(m.Held, m.Commits, m.Others, m.Takeovers, m.FencedSkip)
	for _, o := range claim.CommitOutcomes {
		m.Commits.WithLabelValues(string(o)) // at 0, so the first failed claim commit shows in increase()
	}
	return m
}

// ClaimObserver is the claim manager's observer: its metrics and log lines.
type ClaimObserver struct {
	Metrics *ClaimMetrics
	Log     *zap.Logger
}

var _ claim.Observer = ClaimObserver{}

func (o ClaimObserver) Committed(c claim.CommitOutcome) {
	o.Metrics.Commits.WithLabelValues(string(c)).Inc()
}
func (o ClaimObserver) Held(n int)    { o.Metrics.Held.Set(float64(n)) }
func (o ClaimObserver) Skipped(n int) { o.Metrics.Others.Set(float64(n)) }
func (o ClaimObserver) Fenced()       { o.Metrics.FencedSkip.Inc() }

func (o ClaimObserver) Taken(stream string, epoch uint64) {
	o.Log.Info("claim taken", zap.String("stream", stream), zap.Uint64("epoch", epoch))
}

func (o ClaimObserver) TakenOver(stream, previousHolder string, previousExpiry time.Time, epoch uint64) {
	o.Metrics.Takeovers.Inc()
	o.Log.Info("claim taken over after its expiry", zap.String("stream", stream), zap.String("previous_holder", previousHolder),
		zap.Time("previous_expiry", previousExpiry), zap.Uint64("epoch", epoch))
}

func (o ClaimObserver) Released(stream string, share, live int) {
	o.Log.Info("claim released", zap.String("stream", stream), zap.Int("fair_share", share), zap.Int("live_claimers", live))
}

func (o ClaimObserver) ReleasedAll(properties int) {
	o.Log.Info("claims released", zap.Int("properties", properties))
}

func (o ClaimObserver) Lost(stream, holder string, epoch uint64) {
	o.Log.Warn("claim lost: another process holds the stream now; not committing it",
		zap.String("stream", stream), zap.String("holder", holder), zap.Uint64("epoch", epoch))
}

func (o ClaimObserver) TickFailed(err error) {
	o.Log.Warn("claim tick failed; claims not renewed expire and fence this process", zap.Error(err))
}

func (o ClaimObserver) TrimFailed(err error) {
	o.Log.Debug("trim claims table snapshots", zap.Error(err))
}
