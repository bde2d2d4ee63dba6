package sidecar

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/siglake/siglake/sidecar/binleases"
	"github.com/siglake/siglake/sidecar/buffer"
	"github.com/siglake/siglake/sidecar/deletes/sweep"
	drainmetrics "github.com/siglake/siglake/sidecar/drain/metrics"
	"github.com/siglake/siglake/sidecar/fold"
	"github.com/siglake/siglake/sidecar/groupcommit"
	"github.com/siglake/siglake/sidecar/instrument"
	"github.com/siglake/siglake/sidecar/maintain"
	"github.com/siglake/siglake/sidecar/membudget"
	"github.com/siglake/siglake/sidecar/plan/level"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/retention"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Metrics are the sidecar's own Prometheus metrics. Every one has a row in docs/metrics.md
// (TestMetricsDocumented keeps the two in step).
type Metrics struct {
	Reg *prometheus.Registry

	// BuildInfo is siglake_build_info{version, revision, goversion} 1 (SetBuildInfo).
	BuildInfo *prometheus.GaugeVec

	CatalogUp prometheus.Gauge
	// CatalogWritable, CommitSlow and CommitTimeouts come from every catalog commit the process
	// makes (observeCommit): the read ping behind CatalogUp cannot see a catalog refusing writes.
	CatalogWritable prometheus.Gauge
	// CommitsAbandonedInFlight: attempts abandoned at the deadline whose catalog call still runs.
	CommitsAbandonedInFlight prometheus.Gauge
	CommitSlow               *prometheus.CounterVec // table
	CommitTimeouts           *prometheus.CounterVec // table
	// CatalogFullWaits: waits for a catalog with no connection left (observeFull), by call.
	CatalogFullWaits *prometheus.CounterVec // op
	// Drain are the drain loop's metrics (sidecar/drain).
	Drain *drainmetrics.Metrics

	// Maintain are the maintenance loop's metrics (sidecar/maintain).
	Maintain *maintain.Metrics

	// Deletes are the delete tasks' metrics (sidecar/deletes).
	Deletes *sweep.Metrics
	// Retention are retention's metrics (sidecar/retention).
	Retention *retention.Metrics

	// Rewrite counts rewrites by kind and outcome (the executor's observer).
	Rewrite *rewrite.Metrics
	// Merge counts rewrites by merge path (registered on the same registry).
	Merge *instrument.MergeMetrics
	// Rebuild counts the post-rewrite Puffin index rebuild (SIGLAKE_INDEX_REBUILD).
	Rebuild *puffinidx.Metrics
	// Claims are the catalog claim metrics (registered on the same registry).
	Claims *instrument.ClaimMetrics
	// Buffer are the WAL buffer's metrics (registered whether or not it runs).
	Buffer *buffer.Metrics
	// Memory exports the process memory budget (sidecar/membudget).
	Memory *membudget.Metrics
	// GroupCommit are group commit's metrics, pod and committer side (sidecar/commit's observer).
	GroupCommit *groupcommit.Metrics
	// BinLeases are bin leases' metrics, owner and worker side (sidecar/work's observer).
	BinLeases *binleases.Metrics
}

// NewMetrics registers the sidecar's metrics, plus Go runtime and process collectors, on a new registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Reg: reg,
		CatalogUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_catalog_up", Help: "1 when the last read ping of the catalog (every 5 s) succeeded, 0 when the catalog is unreachable."}),
		CommitsAbandonedInFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_catalog_commits_abandoned_inflight", Help: "Catalog commit attempts abandoned at --commit-timeout whose call into the catalog has not returned yet (they may still land); a table with one gets no new attempt until it returns."}),
		CatalogWritable: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_catalog_writable", Help: "1 once the catalog is open and while no table's last catalog commit from this process failed (a conflict is an answer), 0 before and while one table's last commit was refused or abandoned at --commit-timeout."}),
		CommitSlow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_catalog_commit_slow_total", Help: "Catalog commits still running at half of --commit-timeout, by table."}, []string{"table"}),
		CommitTimeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_catalog_commit_timeouts_total", Help: "Catalog commits abandoned at --commit-timeout (outcome unknown, retried), by table."}, []string{"table"}),
		CatalogFullWaits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_catalog_full_waits_total", Help: "Catalog calls refused for want of a connection (PostgreSQL too_many_connections, 53300) and made again after a backoff, by call: open (the namespace check when the process connects), load, commit."}, []string{"op"}),
		BuildInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "siglake_build_info", Help: "Always 1; the labels say which build runs: version, VCS revision, Go version."},
			[]string{"version", "revision", "goversion"}),
	}
	m.Deletes = sweep.NewMetrics(reg)
	m.Rewrite = rewrite.NewMetrics(reg)
	kinds := make([]string, len(level.Kinds))
	for i, k := range level.Kinds {
		kinds[i] = k.String()
	}
	m.Rewrite.Init(kinds)
	m.Merge = instrument.NewMergeMetrics(reg)
	reg.MustRegister(m.CatalogUp, m.CatalogWritable, m.CommitsAbandonedInFlight, m.CommitSlow, m.CommitTimeouts, m.CatalogFullWaits, m.BuildInfo)
	m.Drain = drainmetrics.New(reg, m.Merge)
	m.Rebuild = puffinidx.NewMetrics(reg)
	m.Retention = retention.NewMetrics(reg)
	m.Maintain = maintain.NewMetrics(reg, m.Rewrite, m.Merge, m.Rebuild, m.Deletes, m.Retention)
	m.Maintain.Fold = fold.NewMetrics(reg)
	m.Claims = instrument.NewClaimMetrics(reg)
	m.Buffer = buffer.NewMetrics(reg)
	m.Memory = membudget.NewMetrics(reg)
	m.GroupCommit = groupcommit.NewMetrics(reg)
	m.BinLeases = binleases.NewMetrics(reg)
	reg.MustRegister(instrument.ObjectStoreCollector())     // S3 requests and bytes, counted at the SDK's HTTP client
	for _, op := range []string{"commit", "load", "open"} { // at 0 from the start, so the first wait shows in increase()
		m.CatalogFullWaits.WithLabelValues(op)
	}
	return m
}

// SetBuildInfo publishes siglake_build_info{version, revision, goversion} 1, replacing an earlier
// one (NewProcess sets the version; the command adds the revision it was stamped with).
func (m *Metrics) SetBuildInfo(version, revision string) {
	m.BuildInfo.Reset()
	m.BuildInfo.WithLabelValues(version, revision, runtime.Version()).Set(1)
}
