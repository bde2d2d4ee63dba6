{{/*
The alerts of docs/operations.md ("Alerts"), scoped to the release's namespace, as a YAML list of
Prometheus rules. prometheusrule.yaml leaves out the disabled ones, adds additionalRuleLabels and
the runbook_url (the alert's section of docs/operations.md: runbookUrl#<alert in lower case>).
*/}}
{{- define "siglake-compactor.alerts" -}}
{{- $r := .Values.metrics.prometheusRule }}
{{- $ns := printf "namespace=%q" .Release.Namespace }}
- alert: SiglakeWALBacklogAge
  expr: max by (namespace, pod) (siglake_wal_oldest_sealed_age_seconds{ {{- $ns -}} }) > {{ $r.backlogAgeSecs }}
  for: 10m
  labels:
    severity: warning
  annotations:
    summary: "siglake drain is behind on {{`{{ $labels.pod }}`}}"
    description: "The oldest sealed WAL segment has waited {{`{{ $value | humanizeDuration }}`}}: the drain cannot keep up or cannot commit (check siglake_catalog_up and siglake_drain_errors_total)."
- alert: SiglakeOverlapDepthHigh
  expr: max by (namespace, table) (siglake_table_overlap_depth{ {{- $ns -}} }) > {{ $r.overlapDepth }}
  for: 30m
  labels:
    severity: warning
  annotations:
    summary: "siglake table {{`{{ $labels.table }}`}} has overlap depth {{`{{ $value }}`}}"
    description: "Leveled compaction is not keeping file time ranges disjoint; queries read more files than they should. Check maintenance ownership and backpressure."
- alert: SiglakeRetentionBehind
  expr: max by (namespace, table) (siglake_retention_oldest_data_age_seconds{ {{- $ns -}} } - on (namespace, pod, table) siglake_retention_period_seconds{ {{- $ns -}} } > {{ $r.retentionSlackSecs }} and on (namespace, pod, table) siglake_retention_period_seconds{ {{- $ns -}} } > 0)
  for: 1h
  labels:
    severity: warning
  annotations:
    summary: "siglake table {{`{{ $labels.table }}`}} holds rows older than its retention"
    description: "The oldest row is {{`{{ $value | humanizeDuration }}`}} past the longest period of the table's policy: retention runs fail (siglake_retention_runs_total{outcome=\"failed\"}; the table's retention in /debug/status, siglake retention show) or stay capped behind. Rows past retention may be a compliance problem."
- alert: SiglakeFilesSkipped
  expr: max by (namespace, table) (siglake_compactor_skipped_files{ {{- $ns -}} }) > 0
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: "siglake set {{`{{ $value }}`}} data file(s) of {{`{{ $labels.table }}`}} aside"
    description: "Rewrites of these files failed permanently (corrupt, truncated, missing or unreadable objects), so maintenance plans their partitions without them and queries may fail on them. siglake skipped list shows them with their causes; repair or remove each, then siglake skipped clear."
- alert: SiglakeMaintenanceSkippedBackpressure
  expr: sum by (namespace, pod) (rate(siglake_compactor_maintenance_skipped_backpressure_total{ {{- $ns -}} }[15m])) > 0
  for: 1h
  labels:
    severity: warning
  annotations:
    summary: "siglake on {{`{{ $labels.pod }}`}} skips maintenance for backpressure"
    description: "The sealed-WAL backlog has stayed above SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER for an hour; the sidecar needs more CPU or memory, or the ingest more replicas."
- alert: SiglakeMaintenanceNotSucceeding
  expr: max by (namespace, pod) ((time() - siglake_maintenance_last_success_timestamp_seconds{ {{- $ns -}} }) > {{ $r.maintenanceStaleSecs }} and on (namespace, pod, instance) (time() - process_start_time_seconds{ {{- $ns -}} }) > {{ $r.maintenanceStaleSecs }})
  for: 15m
  labels:
    severity: warning
  annotations:
    summary: "siglake on {{`{{ $labels.pod }}`}} has not completed a maintenance cycle"
    description: "No maintenance cycle of this process has completed without an error {{`{{ if gt $value 1e9 }}since it started{{ else }}for {{ $value | humanizeDuration }}{{ end }}`}}: rewrites, snapshot expiry and delete tasks of the tables it owns are not happening. See /debug/status errors (siglake status) and the logs."
- alert: SiglakeSegmentsQuarantined
  expr: max by (namespace, pod) (siglake_wal_segments_in_quarantine{ {{- $ns -}} }) > 0 or sum by (namespace, pod) (increase(siglake_wal_quarantined_segments_total{ {{- $ns -}} }[15m])) > 0
  for: 5m
  labels:
    severity: warning
  annotations:
    summary: "siglake on {{`{{ $labels.pod }}`}} has WAL segments in quarantine"
    description: "Segments sit in <wal-dir>/quarantine (or were moved there in the last 15 minutes); their rows are not in the lake. Read quarantine/*.reason.json in the pod, then remove what was handled: the alert lasts while any remain."
{{- if .Values.gossip.enabled }}
- alert: SiglakeGossipSplitView
  expr: min by (namespace) (siglake_gossip_members{ {{- $ns -}}, state="alive"}) < count by (namespace) (siglake_gossip_members{ {{- $ns -}}, state="alive"})
  for: 10m
  labels:
    severity: warning
  annotations:
    summary: "siglake sidecars in {{`{{ $labels.namespace }}`}} do not all see each other"
    description: "Some sidecar's gossip view has fewer alive members than there are sidecars: tables may have two owners (safe, but wasted rewrites) or none. Check that TCP and UDP on the gossip port are open between pods."
{{- end }}
- alert: SiglakeCatalogDown
  expr: max by (namespace, pod) (1 - siglake_catalog_up{ {{- $ns -}} }) > 0
  for: 5m
  labels:
    severity: warning
  annotations:
    summary: "siglake on {{`{{ $labels.pod }}`}} cannot reach the Iceberg catalog"
    description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
- alert: SiglakeCatalogDown
  expr: max by (namespace, pod) (siglake_wal_oldest_sealed_age_seconds{ {{- $ns -}} }) > {{ $r.catalogDownCriticalBacklogAgeSecs }} and on (namespace, pod) max by (namespace, pod) (siglake_catalog_up{ {{- $ns -}} }) == 0
  for: 5m
  labels:
    severity: critical
  annotations:
    summary: "siglake on {{`{{ $labels.pod }}`}} cannot reach the Iceberg catalog and its WAL is filling"
    description: "The catalog does not answer and the oldest sealed WAL segment has waited {{`{{ $value | humanizeDuration }}`}}: the WAL volume holds every row until the catalog is back; once it is full, ingest can no longer write."
- alert: SiglakeCatalogNotWritable
  # max_over_time: a read ping that fails now and then must not reset the for; a catalog down for
  # the whole window is SiglakeCatalogDown's.
  expr: max by (namespace, pod) (siglake_catalog_writable{ {{- $ns -}} }) == 0 and on (namespace, pod) max by (namespace, pod) (max_over_time(siglake_catalog_up{ {{- $ns -}} }[5m])) == 1
  for: 5m
  labels:
    severity: warning
  annotations:
    summary: "siglake on {{`{{ $labels.pod }}`}} cannot commit to the Iceberg catalog"
    description: "The catalog answers reads but the last commit to at least one table from this pod was refused or hung past --commit-timeout (siglake_catalog_commit_timeouts_total): that table's segments wait in the WAL. See catalog_write_errors in /debug/status and the logs."
{{- end }}
