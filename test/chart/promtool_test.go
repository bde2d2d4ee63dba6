package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

var (
	promtoolOnce sync.Once
	promtoolPath string
	promtoolErr  error
)

// promtool returns the pinned promtool, building it with scripts/promtool.sh on first use; like
// helm, unavailable outside CI skips and in CI fails.
func promtool(t *testing.T) string {
	t.Helper()
	promtoolOnce.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "promtool.sh"), "install")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			promtoolErr = fmt.Errorf("scripts/promtool.sh install: %v\n%s", err, stderr.String())
			return
		}
		promtoolPath = strings.TrimSpace(string(out))
	})
	if promtoolErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtool is required in CI: %v", promtoolErr)
		}
		t.Skipf("promtool unavailable, rule checks skipped (run scripts/promtool.sh install): %v", promtoolErr)
	}
	return promtoolPath
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// renderedRules is the chart's PrometheusRule spec as a Prometheus rule file.
func renderedRules(t *testing.T) []byte {
	t.Helper()
	r := decodeAll(t, mustRender(t, chartDir(t), "-f", filepath.Join(chartDir(t), "ci", "s3-postgres-values.yaml")))
	if len(r.rules) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(r.rules))
	}
	raw, err := yaml.Marshal(r.rules[0].Spec)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestAlertRules: the rendered alerts pass `promtool check rules` and fire, with the labels
// routing needs, on series that show each condition (promtool test rules).
func TestAlertRules(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), renderedRules(t), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), []byte(alertTests), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "test", "rules", "rules_test.yaml")
}

// alertTests: one healthy pod (p0) and one unhealthy (p1) in the test release's namespace, and
// an unhealthy pod in another namespace that the rules must ignore. The s3-postgres values add
// the label team=observability to every alert; every alert links its runbook section.
const alertTests = `
rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
      - series: 'siglake_wal_oldest_sealed_age_seconds{namespace="siglake-test", pod="p0"}'
        values: '5x90'
      - series: 'siglake_wal_oldest_sealed_age_seconds{namespace="siglake-test", pod="p1"}'
        values: '0 60 120 180 240 300 360 420 480 540 600 660 720 780 840 900 960 1020 1080 1140 1200'
      - series: 'siglake_wal_oldest_sealed_age_seconds{namespace="elsewhere", pod="p9"}'
        values: '9000x90'
      - series: 'siglake_table_overlap_depth{namespace="siglake-test", pod="p0", table="events"}'
        values: '30x90'
      - series: 'siglake_table_overlap_depth{namespace="siglake-test", pod="p0", table="audit"}'
        values: '3x90'
      - series: 'siglake_compactor_maintenance_skipped_backpressure_total{namespace="siglake-test", pod="p1"}'
        values: '0+1x90'
      - series: 'siglake_compactor_maintenance_skipped_backpressure_total{namespace="siglake-test", pod="p0"}'
        values: '0x90'
      - series: 'siglake_wal_quarantined_segments_total{namespace="siglake-test", pod="p1", reason="corrupt"}'
        values: '0 0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'
      - series: 'siglake_wal_segments_in_quarantine{namespace="siglake-test", pod="p1"}'
        values: '0 0 0 1x17 0x10'
      - series: 'siglake_wal_segments_in_quarantine{namespace="siglake-test", pod="p0"}'
        values: '2x30'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="p0"}'
        values: '1x90'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="p1"}'
        values: '1x5 0x85'
      - series: 'siglake_gossip_members{namespace="siglake-test", pod="p0", state="alive"}'
        values: '2x90'
      - series: 'siglake_gossip_members{namespace="siglake-test", pod="p1", state="alive"}'
        values: '1x90'
      - series: 'siglake_compactor_skipped_files{namespace="siglake-test", pod="p0", table="events"}'
        values: '2x90'
      - series: 'siglake_compactor_skipped_files{namespace="siglake-test", pod="p0", table="audit"}'
        values: '0x90'
      - series: 'siglake_retention_oldest_data_age_seconds{namespace="siglake-test", pod="p0", table="events"}'
        values: '3456000x90'
      - series: 'siglake_retention_period_seconds{namespace="siglake-test", pod="p0", table="events"}'
        values: '2592000x90'
      - series: 'siglake_retention_oldest_data_age_seconds{namespace="siglake-test", pod="p0", table="audit"}'
        values: '90000000x90'
      - series: 'siglake_retention_period_seconds{namespace="siglake-test", pod="p0", table="audit"}'
        values: '0x90'
      - series: 'siglake_retention_oldest_data_age_seconds{namespace="siglake-test", pod="p1", table="metrics"}'
        values: '2595600x90'
      - series: 'siglake_retention_period_seconds{namespace="siglake-test", pod="p1", table="metrics"}'
        values: '2592000x90'
    alert_rule_test:
      - eval_time: 8m
        alertname: SiglakeWALBacklogAge
        exp_alerts: []
      - eval_time: 17m
        alertname: SiglakeWALBacklogAge
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake drain is behind on p1"
              description: "The oldest sealed WAL segment has waited 17m 0s: the drain cannot keep up or cannot commit (check siglake_catalog_up and siglake_drain_errors_total)."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakewalbacklogage"
      - eval_time: 35m
        alertname: SiglakeOverlapDepthHigh
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, table: events}
            exp_annotations:
              summary: "siglake table events has overlap depth 30"
              description: "Leveled compaction is not keeping file time ranges disjoint; queries read more files than they should. Check maintenance ownership and backpressure."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakeoverlapdepthhigh"
      - eval_time: 50m
        alertname: SiglakeMaintenanceSkippedBackpressure
        exp_alerts: []
      - eval_time: 80m
        alertname: SiglakeMaintenanceSkippedBackpressure
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake on p1 skips maintenance for backpressure"
              description: "The sealed-WAL backlog has stayed above SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER for an hour; the sidecar needs more CPU or memory, or the ingest more replicas."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakemaintenanceskippedbackpressure"
      - eval_time: 5m
        alertname: SiglakeSegmentsQuarantined
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p0}
            exp_annotations:
              summary: "siglake on p0 has WAL segments in quarantine"
              description: "Segments sit in <wal-dir>/quarantine (or were moved there in the last 15 minutes); their rows are not in the lake. Read quarantine/*.reason.json in the pod, then remove what was handled: the alert lasts while any remain."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakesegmentsquarantined"
      - eval_time: 9m
        alertname: SiglakeSegmentsQuarantined
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p0}
            exp_annotations:
              summary: "siglake on p0 has WAL segments in quarantine"
              description: "Segments sit in <wal-dir>/quarantine (or were moved there in the last 15 minutes); their rows are not in the lake. Read quarantine/*.reason.json in the pod, then remove what was handled: the alert lasts while any remain."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakesegmentsquarantined"
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake on p1 has WAL segments in quarantine"
              description: "Segments sit in <wal-dir>/quarantine (or were moved there in the last 15 minutes); their rows are not in the lake. Read quarantine/*.reason.json in the pod, then remove what was handled: the alert lasts while any remain."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakesegmentsquarantined"
      - eval_time: 25m
        alertname: SiglakeSegmentsQuarantined
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p0}
            exp_annotations:
              summary: "siglake on p0 has WAL segments in quarantine"
              description: "Segments sit in <wal-dir>/quarantine (or were moved there in the last 15 minutes); their rows are not in the lake. Read quarantine/*.reason.json in the pod, then remove what was handled: the alert lasts while any remain."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakesegmentsquarantined"
      - eval_time: 12m
        alertname: SiglakeCatalogDown
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake on p1 cannot reach the Iceberg catalog"
              description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalogdown"
      - eval_time: 30m
        alertname: SiglakeRetentionBehind
        exp_alerts: []
      - eval_time: 70m
        alertname: SiglakeRetentionBehind
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, table: events}
            exp_annotations:
              summary: "siglake table events holds rows older than its retention"
              description: "The oldest row is 10d 0h 0m 0s past the longest period of the table's policy: retention runs fail (siglake_retention_runs_total{outcome=\"failed\"}; the table's retention in /debug/status, siglake retention show) or stay capped behind. Rows past retention may be a compliance problem."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakeretentionbehind"
      - eval_time: 10m
        alertname: SiglakeFilesSkipped
        exp_alerts: []
      - eval_time: 20m
        alertname: SiglakeFilesSkipped
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, table: events}
            exp_annotations:
              summary: "siglake set 2 data file(s) of events aside"
              description: "Rewrites of these files failed permanently (corrupt, truncated, missing or unreadable objects), so maintenance plans their partitions without them and queries may fail on them. siglake skipped list shows them with their causes; repair or remove each, then siglake skipped clear."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakefilesskipped"
      - eval_time: 15m
        alertname: SiglakeGossipSplitView
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test}
            exp_annotations:
              summary: "siglake sidecars in siglake-test do not all see each other"
              description: "Some sidecar's gossip view has fewer alive members than there are sidecars: tables may have two owners (safe, but wasted rewrites) or none. Check that TCP and UDP on the gossip port are open between pods."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakegossipsplitview"

  # SiglakeCatalogDown is a warning while the WAL absorbs the outage, and critical once the oldest
  # sealed segment has waited catalogDownCriticalBacklogAgeSecs (1800 s): c1's catalog is down from
  # the start and its backlog ages a minute a minute; c0's catalog is down but its backlog young.
  - interval: 1m
    input_series:
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="c0"}'
        values: '0x60'
      - series: 'siglake_wal_oldest_sealed_age_seconds{namespace="siglake-test", pod="c0"}'
        values: '0x60'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="c1"}'
        values: '0x60'
      - series: 'siglake_wal_oldest_sealed_age_seconds{namespace="siglake-test", pod="c1"}'
        values: '0+60x60'
    alert_rule_test:
      - eval_time: 3m
        alertname: SiglakeCatalogDown
        exp_alerts: []
      - eval_time: 20m
        alertname: SiglakeCatalogDown
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: c0}
            exp_annotations:
              summary: "siglake on c0 cannot reach the Iceberg catalog"
              description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalogdown"
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: c1}
            exp_annotations:
              summary: "siglake on c1 cannot reach the Iceberg catalog"
              description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalogdown"
      - eval_time: 40m
        alertname: SiglakeCatalogDown
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: c0}
            exp_annotations:
              summary: "siglake on c0 cannot reach the Iceberg catalog"
              description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalogdown"
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: c1}
            exp_annotations:
              summary: "siglake on c1 cannot reach the Iceberg catalog"
              description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalogdown"
          - exp_labels: {severity: critical, team: observability, namespace: siglake-test, pod: c1}
            exp_annotations:
              summary: "siglake on c1 cannot reach the Iceberg catalog and its WAL is filling"
              description: "The catalog does not answer and the oldest sealed WAL segment has waited 40m 0s: the WAL volume holds every row until the catalog is back; once it is full, ingest can no longer write."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalogdown"

  # SiglakeCatalogNotWritable: w0's commits succeed; w1's are refused from 5m on while its read
  # ping still answers; w2 had failed commits for 3m only, under the alert's for; w3's catalog is
  # down altogether, which is SiglakeCatalogDown's alert, not this one; w4's commits are refused
  # from 5m on while its read ping fails now and then, which must not reset the alert's for.
  - interval: 1m
    input_series:
      - series: 'siglake_catalog_writable{namespace="siglake-test", pod="w0"}'
        values: '1x30'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="w0"}'
        values: '1x30'
      - series: 'siglake_catalog_writable{namespace="siglake-test", pod="w1"}'
        values: '1x5 0x25'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="w1"}'
        values: '1x30'
      - series: 'siglake_catalog_writable{namespace="siglake-test", pod="w2"}'
        values: '0x3 1x27'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="w2"}'
        values: '1x30'
      - series: 'siglake_catalog_writable{namespace="siglake-test", pod="w3"}'
        values: '0x30'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="w3"}'
        values: '0x30'
      - series: 'siglake_catalog_writable{namespace="siglake-test", pod="w4"}'
        values: '1x5 0x25'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="w4"}'
        values: '1 1 1 1 0 1 1 1 0 1 1 1 0 1 1 1 0 1 1 1 0 1 1 1 0 1 1 1 0 1 1'
    alert_rule_test:
      - eval_time: 8m
        alertname: SiglakeCatalogNotWritable
        exp_alerts: []
      - eval_time: 20m
        alertname: SiglakeCatalogNotWritable
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: w1}
            exp_annotations:
              summary: "siglake on w1 cannot commit to the Iceberg catalog"
              description: "The catalog answers reads but the last commit to at least one table from this pod was refused or hung past --commit-timeout (siglake_catalog_commit_timeouts_total): that table's segments wait in the WAL. See catalog_write_errors in /debug/status and the logs."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalognotwritable"
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: w4}
            exp_annotations:
              summary: "siglake on w4 cannot commit to the Iceberg catalog"
              description: "The catalog answers reads but the last commit to at least one table from this pod was refused or hung past --commit-timeout (siglake_catalog_commit_timeouts_total): that table's segments wait in the WAL. See catalog_write_errors in /debug/status and the logs."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakecatalognotwritable"

  # SiglakeMaintenanceNotSucceeding (like Mimir's CompactorHasNotSuccessfullyRunCompaction), on a
  # real clock: m0 succeeds every cycle; m1 stops succeeding at 10m; m2 never succeeds (its gauge
  # stays 0); m3 never succeeds but started only at 60m; the ingest container of m1's pod (another
  # instance) restarted late, which must not hide m1's alert. A drain-only process exports no gauge.
  - interval: 1m
    start_timestamp: 1700000000
    input_series:
      - series: 'siglake_maintenance_last_success_timestamp_seconds{namespace="siglake-test", pod="m0", instance="10.0.0.1:9464"}'
        values: '1700000000+60x120'
      - series: 'process_start_time_seconds{namespace="siglake-test", pod="m0", instance="10.0.0.1:9464"}'
        values: '1699990000x120'
      - series: 'siglake_maintenance_last_success_timestamp_seconds{namespace="siglake-test", pod="m1", instance="10.0.0.2:9464"}'
        values: '1700000000+60x10 1700000600x110'
      - series: 'process_start_time_seconds{namespace="siglake-test", pod="m1", instance="10.0.0.2:9464"}'
        values: '1700000000x120'
      - series: 'process_start_time_seconds{namespace="siglake-test", pod="m1", instance="10.0.0.2:8080"}'
        values: '1700006000x120'
      - series: 'siglake_maintenance_last_success_timestamp_seconds{namespace="siglake-test", pod="m2", instance="10.0.0.3:9464"}'
        values: '0x120'
      - series: 'process_start_time_seconds{namespace="siglake-test", pod="m2", instance="10.0.0.3:9464"}'
        values: '1700000000x120'
      - series: 'siglake_maintenance_last_success_timestamp_seconds{namespace="siglake-test", pod="m3", instance="10.0.0.4:9464"}'
        values: '0x120'
      - series: 'process_start_time_seconds{namespace="siglake-test", pod="m3", instance="10.0.0.4:9464"}'
        values: '1700003600x120'
      - series: 'process_start_time_seconds{namespace="siglake-test", pod="d0", instance="10.0.0.5:9464"}'
        values: '1700000000x120'
    alert_rule_test:
      - eval_time: 70m
        alertname: SiglakeMaintenanceNotSucceeding
        exp_alerts: []
      - eval_time: 90m
        alertname: SiglakeMaintenanceNotSucceeding
        exp_alerts:
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: m1}
            exp_annotations:
              summary: "siglake on m1 has not completed a maintenance cycle"
              description: "No maintenance cycle of this process has completed without an error for 1h 20m 0s: rewrites, snapshot expiry and delete tasks of the tables it owns are not happening. See /debug/status errors (siglake status) and the logs."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakemaintenancenotsucceeding"
          - exp_labels: {severity: warning, team: observability, namespace: siglake-test, pod: m2}
            exp_annotations:
              summary: "siglake on m2 has not completed a maintenance cycle"
              description: "No maintenance cycle of this process has completed without an error since it started: rewrites, snapshot expiry and delete tasks of the tables it owns are not happening. See /debug/status errors (siglake status) and the logs."
              runbook_url: "https://github.com/siglake/siglake/blob/main/docs/operations.md#siglakemaintenancenotsucceeding"
`

// TestOperationsAlertsCheck: the alert rules written out in docs/operations.md are valid.
func TestOperationsAlertsCheck(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(groups:.*?)```").FindSubmatch(raw)
	if m == nil {
		t.Fatal("docs/operations.md has no ```yaml block of rule groups")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), m[1], 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "rules.yaml")
}

// TestDashboardQueriesParse: every dashboard query is valid PromQL once Grafana's variables are
// substituted (checked as recording rules by promtool).
func TestDashboardQueriesParse(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "siglake-compactor.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$namespace", "siglake-test", "$pod", ".*", "$cluster", ".*")
	var rules []map[string]string
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
			// Every query follows the cluster variable (All matches series without the label).
			if !strings.Contains(q.Expr, `cluster=~"$cluster"`) {
				t.Errorf("dashboard query %q does not select cluster=~\"$cluster\"", q.Expr)
			}
			rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard_query_%d", len(rules)), "expr": vars.Replace(q.Expr)})
		}
	}
	file, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.yaml"), file, 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "dashboard.yaml")
}
