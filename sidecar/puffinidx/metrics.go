package puffinidx

import "github.com/prometheus/client_golang/prometheus"

// Metrics count the rebuild's work per table (rows in docs/metrics.md).
type Metrics struct {
	Files    *prometheus.CounterVec // table
	Blobs    *prometheus.CounterVec // table
	Bytes    *prometheus.CounterVec // table
	Failures *prometheus.CounterVec // table
	Dropped  *prometheus.CounterVec // table
	// SkippedColumns: column indexes not built because they outgrew the memory cap.
	SkippedColumns *prometheus.CounterVec // table
}

// NewMetrics registers the rebuild's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Files: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_rebuild_files_total", Help: "Data files that got a registered Puffin index sidecar from the post-rewrite rebuild."}, []string{"table"}),
		Blobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_rebuild_blobs_total", Help: "Column inverted indexes written as Puffin blobs by the rebuild."}, []string{"table"}),
		Bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_rebuild_written_bytes_total", Help: "Puffin bytes written by the rebuild (registered sidecars only)."}, []string{"table"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_rebuild_failures_total", Help: "Data files the rebuild could not index, write or register; they stay unindexed and the rewrite stays committed."}, []string{"table"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_rebuild_registrations_dropped_total", Help: "Index registrations dropped because their data file is no longer live."}, []string{"table"}),
		SkippedColumns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "siglake_index_rebuild_skipped_columns_total", Help: "Column indexes the rebuild gave up because building them would hold more than the merge memory budget; those columns stay unindexed (scanned)."}, []string{"table"}),
	}
	if reg != nil {
		reg.MustRegister(m.Files, m.Blobs, m.Bytes, m.Failures, m.Dropped, m.SkippedColumns)
	}
	return m
}
