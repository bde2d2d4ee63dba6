package sidecar

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Readiness is what /readyz reports: ready once the catalog answered and while it keeps answering
// reads (the ping) and writes (the last commit did not fail).
type Readiness struct {
	ready  atomic.Bool
	reason atomic.Value // string
	// writeErr is why the last commit failed; "" once one succeeds. The ping does not clear it.
	writeErr atomic.Value // string
}

// SetWriteError records why the last catalog commit failed ("" when it succeeded).
func (r *Readiness) SetWriteError(reason string) { r.writeErr.Store(reason) }

// Set records the current readiness and, when not ready, why.
func (r *Readiness) Set(ok bool, reason string) {
	r.ready.Store(ok)
	r.reason.Store(reason)
}

// HTTPTimeouts bound the connections of the metrics and status listener, so idle keep-alive
// connections and clients that stop reading do not pile up descriptors (the drain needs them).
type HTTPTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultHTTPTimeouts: every answer here is small and made at once, so a whole answer gets the
// write timeout; the idle timeout is above Prometheus' usual scrape intervals so a scraper keeps
// its connection.
var DefaultHTTPTimeouts = HTTPTimeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: 60 * time.Second, Idle: 90 * time.Second}

// Server is an http.Server for h with these timeouts.
func (t HTTPTimeouts) Server(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
}

// Handler serves /metrics, /debug/status, /healthz and /readyz.
func Handler(m *Metrics, st *Status, ready *Readiness, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Reg, promhttp.HandlerOpts{Registry: m.Reg}))
	mux.HandleFunc("/debug/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st.Snapshot(now()))
	})
	// Liveness: the process serves HTTP. A catalog outage must not restart the pod (the backlog
	// would be drained by the same process once the catalog is back), so it only affects /readyz.
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		writeErr, _ := ready.writeErr.Load().(string)
		if ready.ready.Load() && writeErr == "" {
			_, _ = w.Write([]byte("ready\n"))
			return
		}
		reason, _ := ready.reason.Load().(string)
		if ready.ready.Load() {
			reason = writeErr
		}
		if reason == "" {
			reason = "starting"
		}
		http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
	})
	return mux
}
