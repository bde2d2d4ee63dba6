package listen

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/siglake/siglake/sidecar/buffer/reader"
)

// Metrics are the listener's metrics (docs/metrics.md "WAL buffer").
type Metrics struct {
	// Unauthorized counts requests refused with 401 before anything else is done, by reason.
	Unauthorized *prometheus.CounterVec
	// Tokens is how many tokens the token file gave at its last good read; TokenReloadErrors
	// counts re-reads that failed (the tokens before stay accepted).
	Tokens            prometheus.Gauge
	TokenReloadErrors prometheus.Counter
}

// NewMetrics registers the listener's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Unauthorized: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_buffer_unauthorized_total", Help: "WAL buffer requests refused with 401 before any work: missing or malformed Authorization header, invalid token, or no verified client certificate (no_client_cert)."}, []string{"reason"}),
		Tokens: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_buffer_tokens", Help: "Bearer tokens the WAL buffer accepts now, from the last good read of SIGLAKE_BUFFER_TOKEN_FILE (0 without one)."}),
		TokenReloadErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "siglake_buffer_token_reload_errors_total", Help: "Re-reads of a changed SIGLAKE_BUFFER_TOKEN_FILE that failed (unreadable, or no valid token), each failure once; the tokens read before stay accepted, revoked ones included."}),
	}
	reg.MustRegister(m.Unauthorized, m.Tokens, m.TokenReloadErrors)
	// Exported at 0 for their known values, so the first refusal shows in increase().
	for _, r := range []string{reader.UnauthorizedMissing, reader.UnauthorizedMalformed, reader.UnauthorizedInvalid, reader.UnauthorizedNoClientCert} {
		m.Unauthorized.WithLabelValues(r)
	}
	return m
}
