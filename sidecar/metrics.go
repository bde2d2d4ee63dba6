package sidecar

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/sidecar/claim"
	"github.com/siglake/siglake/sidecar/deletes"
	"github.com/siglake/siglake/sidecar/drain"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/puffinidx"
	"github.com/siglake/siglake/sidecar/rewrite"
)

// Metrics are the sidecar's own Prometheus metrics. Every one has a row in docs/metrics.md
// (TestMetricsDocumented keeps the two in step).
type Metrics struct {
	Reg *prometheus.Registry

	CatalogUp prometheus.Gauge
	// Drain are the drain loop's metrics (sidecar/drain).
	Drain *drain.Metrics

	// Maintenance.
	OverlapDepth          *prometheus.GaugeVec   // table
	LiveFiles             *prometheus.GaugeVec   // table, level
	LiveBytes             *prometheus.GaugeVec   // table, level
	GaugesSampledAt       *prometheus.GaugeVec   // table
	SkippedBackpressure   prometheus.Counter     //
	ThrottledBackpressure prometheus.Counter     //
	Expirations           *prometheus.CounterVec // outcome

	// Deletes are the delete tasks' metrics (sidecar/deletes).
	Deletes *deletes.Metrics

	// Rewrite counts rewrites by kind and outcome (the executor's observer).
	Rewrite *rewrite.Metrics
	// Merge counts rewrites by merge path (registered on the same registry).
	Merge *merge.Metrics
	// Rebuild counts the post-rewrite Puffin index rebuild (SIGLAKE_INDEX_REBUILD).
	Rebuild *puffinidx.Metrics
	// Claims are the catalog claim metrics (registered on the same registry).
	Claims *claim.Metrics
}

// NewMetrics registers the sidecar's metrics, plus Go runtime and process collectors, on a new registry.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{
		Reg: reg,
		CatalogUp: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "siglake_catalog_up", Help: "1 when the last catalog call succeeded, 0 when the catalog is unreachable."}),
	}
	m.OverlapDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "siglake_table_overlap_depth", Help: "Largest number of live file time ranges of one partition that contain the same instant (from the last metadata walk)."}, []string{"table"})
	m.LiveFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "siglake_table_live_files", Help: "Live data files by level (from the last metadata walk)."}, []string{"table", "level"})
	m.LiveBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "siglake_table_live_bytes", Help: "Bytes of live data files by level (from the last metadata walk)."}, []string{"table", "level"})
	m.GaugesSampledAt = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "siglake_table_gauges_sampled_at_seconds", Help: "Unix time of the metadata walk the table gauges come from."}, []string{"table"})
	m.SkippedBackpressure = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "siglake_compactor_maintenance_skipped_backpressure_total", Help: "Maintenance cycles skipped because the sealed WAL backlog exceeded SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER."})
	m.ThrottledBackpressure = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "siglake_compactor_maintenance_throttled_backpressure_total", Help: "Backlogged maintenance cycles that ran the restricted L0 pass."})
	m.Expirations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "siglake_snapshot_expirations_total", Help: "Snapshot expiry runs by outcome (ok, failed)."}, []string{"outcome"})
	reg.MustRegister(m.OverlapDepth, m.LiveFiles, m.LiveBytes, m.GaugesSampledAt, m.SkippedBackpressure,
		m.ThrottledBackpressure, m.Expirations)
	m.Deletes = deletes.NewMetrics(reg)
	m.Rewrite = rewrite.NewMetrics(reg)
	m.Merge = merge.NewMetrics(reg)
	reg.MustRegister(m.CatalogUp)
	m.Drain = drain.NewMetrics(reg, m.CatalogUp, m.Merge)
	m.Rebuild = puffinidx.NewMetrics(reg)
	m.Claims = claim.NewMetrics(reg)
	reg.MustRegister(lake.ObjectStoreCollector()) // S3 requests and bytes, counted at the SDK's HTTP client
	return m
}
