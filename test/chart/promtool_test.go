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
// an unhealthy pod in another namespace that the rules must ignore.
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
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="p0"}'
        values: '1x90'
      - series: 'siglake_catalog_up{namespace="siglake-test", pod="p1"}'
        values: '1x5 0x85'
      - series: 'siglake_gossip_members{namespace="siglake-test", pod="p0", state="alive"}'
        values: '2x90'
      - series: 'siglake_gossip_members{namespace="siglake-test", pod="p1", state="alive"}'
        values: '1x90'
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
          - exp_labels: {severity: warning, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake drain is behind on p1"
              description: "The oldest sealed WAL segment has waited 17m 0s: the drain cannot keep up or cannot commit (check siglake_catalog_up and siglake_drain_errors_total)."
      - eval_time: 35m
        alertname: SiglakeOverlapDepthHigh
        exp_alerts:
          - exp_labels: {severity: warning, namespace: siglake-test, table: events}
            exp_annotations:
              summary: "siglake table events has overlap depth 30"
              description: "Leveled compaction is not keeping file time ranges disjoint; queries read more files than they should. Check maintenance ownership and backpressure."
      - eval_time: 50m
        alertname: SiglakeMaintenanceSkippedBackpressure
        exp_alerts: []
      - eval_time: 80m
        alertname: SiglakeMaintenanceSkippedBackpressure
        exp_alerts:
          - exp_labels: {severity: warning, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake on p1 skips maintenance for backpressure"
              description: "The sealed-WAL backlog has stayed above SIGLAKE_COMPACTOR_MAX_SEALED_FOR_RECLUSTER for an hour; the sidecar needs more CPU or memory, or the ingest more replicas."
      - eval_time: 5m
        alertname: SiglakeSegmentsQuarantined
        exp_alerts:
          - exp_labels: {severity: warning, namespace: siglake-test, pod: p1, reason: corrupt}
            exp_annotations:
              summary: "siglake quarantined WAL segments on p1 (corrupt)"
              description: "Segments were moved to <wal-dir>/quarantine; their rows are not in the lake. Read quarantine/*.reason.json in the pod."
      - eval_time: 25m
        alertname: SiglakeSegmentsQuarantined
        exp_alerts: []
      - eval_time: 12m
        alertname: SiglakeCatalogDown
        exp_alerts:
          - exp_labels: {severity: critical, namespace: siglake-test, pod: p1}
            exp_annotations:
              summary: "siglake on p1 cannot reach the Iceberg catalog"
              description: "Nothing is committed while the catalog does not answer; segments wait in the WAL until it does."
      - eval_time: 30m
        alertname: SiglakeRetentionBehind
        exp_alerts: []
      - eval_time: 70m
        alertname: SiglakeRetentionBehind
        exp_alerts:
          - exp_labels: {severity: warning, namespace: siglake-test, table: events}
            exp_annotations:
              summary: "siglake table events holds rows older than its retention"
              description: "The oldest row is 10d 0h 0m 0s past the longest period of the table's policy: retention runs fail (siglake_retention_runs_total{outcome=\"failed\"}; the table's retention in /debug/status, siglake retention show) or stay capped behind. Rows past retention may be a compliance problem."
      - eval_time: 15m
        alertname: SiglakeGossipSplitView
        exp_alerts:
          - exp_labels: {severity: warning, namespace: siglake-test}
            exp_annotations:
              summary: "siglake sidecars in siglake-test do not all see each other"
              description: "Some sidecar's gossip view has fewer alive members than there are sidecars: tables may have two owners (safe, but wasted rewrites) or none. Check that TCP and UDP on the gossip port are open between pods."
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
	vars := strings.NewReplacer("$__rate_interval", "5m", "$namespace", "siglake-test", "$pod", ".*")
	var rules []map[string]string
	for _, p := range dash.Panels {
		for _, q := range p.Targets {
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
