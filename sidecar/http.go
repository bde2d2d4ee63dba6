package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/siglake/siglake/sidecar/statuspage"
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

// Handler serves /metrics, /debug/status, /healthz, /readyz and the HTML status pages (/ and
// /status/...).
func Handler(m *Metrics, st *Status, ready *Readiness, now func() time.Time) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Reg, promhttp.HandlerOpts{Registry: m.Reg}))
	mux.HandleFunc("/debug/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(st.Snapshot(now()))
	})
	page := func(render func(io.Writer, statuspage.Report) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			servePage(w, func(buf io.Writer) error { return render(buf, PageReport(st.Snapshot(now()))) })
		}
	}
	mux.HandleFunc("GET /{$}", page(statuspage.Index))
	mux.HandleFunc("GET "+statuspage.IndexPath, page(statuspage.Index))
	mux.HandleFunc("GET "+statuspage.RingPath, page(statuspage.Ring))
	mux.HandleFunc("GET "+statuspage.DeletionsPath, page(statuspage.Deletions))
	mux.HandleFunc("GET "+statuspage.TablePrefix+"{name}", func(w http.ResponseWriter, r *http.Request) {
		// A table page draws SVG timelines: bound how many render at once, so reloads of big
		// tables cannot take the cores the drain needs.
		select {
		case tablePageSlots <- struct{}{}:
			defer func() { <-tablePageSlots }()
		default:
			w.Header().Set("Retry-After", "2")
			http.Error(w, "busy: other table pages are being drawn; retry in a moment", http.StatusServiceUnavailable)
			return
		}
		name, part := r.PathValue("name"), r.URL.Query().Get("partition")
		servePage(w, func(buf io.Writer) error {
			return statuspage.TablePartitionPage(buf, PageReport(st.Snapshot(now())), name, part)
		})
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

// tablePageSlots bounds the table pages rendered at once (the process's; beyond it: 503).
var tablePageSlots = make(chan struct{}, 2)

// servePage renders a page into a buffer first, so a failed render answers an error rather than
// half a page.
func servePage(w http.ResponseWriter, render func(io.Writer) error) {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, statuspage.ErrNoTable) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(buf.Bytes())
}

// PageReport is the status report as the pages take it: the same values, tables sorted.
func PageReport(r StatusReport) statuspage.Report {
	out := statuspage.Report{Node: r.Node, Role: string(r.Role), Version: r.Version, StartedAt: r.StartedAt, Now: r.Now,
		CatalogReady: r.CatalogReady, CatalogError: r.CatalogError, CatalogWriteError: r.CatalogWriteError,
		CatalogID: r.CatalogID, CatalogIDError: r.CatalogIDError, Backlog: r.Backlog, Owned: r.Owned, Memory: r.Memory, UncleanStop: r.UncleanStop}
	for name, t := range r.Tables {
		out.Tables = append(out.Tables, statuspage.Table{Name: name, Owner: t.Owner, OwnerSince: t.OwnerSince, Candidates: t.Candidates,
			Owned: slices.Contains(r.Owned, name), WriteError: r.CatalogWriteErrors[name], LastCommit: t.LastCommit,
			Maintenance: t.Maintenance, Deletes: t.Deletes, Retention: t.Retention})
	}
	sort.Slice(out.Tables, func(i, j int) bool { return out.Tables[i].Name < out.Tables[j].Name })
	for _, m := range r.Members {
		out.Members = append(out.Members, statuspage.Member{Name: m.Name, Addr: m.Addr, State: m.State, Roles: m.Roles, Catalog: m.Catalog})
	}
	for _, e := range r.Errors {
		out.Errors = append(out.Errors, statuspage.Error{Time: e.Time, Stage: e.Stage, Table: e.Table, Message: e.Message})
	}
	if g := r.GroupCommit; g != nil {
		out.GroupCommit = &statuspage.GroupCommit{Enabled: g.Enabled, DisabledReason: g.DisabledReason,
			IntervalSeconds: g.IntervalSeconds, Pod: g.Pod, Committer: g.Committer}
	}
	return out
}
