package chart

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// monitoringAPI makes helm template render as against a cluster with prometheus-operator.
var monitoringAPI = []string{"--api-versions", "monitoring.coreos.com/v1"}

// renderOK renders the chart with args, decodes every object strictly and checks it like the ci
// renders.
func renderOK(t *testing.T, args ...string) rendered {
	t.Helper()
	r := decodeAll(t, mustRender(t, chartDir(t), args...))
	checkObjects(t, r)
	return r
}

func podSpec(t *testing.T, r rendered) corev1.PodSpec {
	t.Helper()
	if len(r.statefulSets) != 1 {
		t.Fatalf("want one StatefulSet, got %d", len(r.statefulSets))
	}
	return r.statefulSets[0].Spec.Template.Spec
}

func volumeNames(pod corev1.PodSpec) []string {
	var out []string
	for _, v := range pod.Volumes {
		out = append(out, v.Name)
	}
	return out
}

// TestSidecarExtensionValues: extraArgs, extraEnvFrom, extraVolumes, the full probe objects,
// priorityClassName, topologySpreadConstraints, extraContainers; each off (the default renders
// nothing of it) and on.
func TestSidecarExtensionValues(t *testing.T) {
	off := renderOK(t)
	pod := podSpec(t, off)
	c := container(pod, "siglake-compactor")
	if !reflect.DeepEqual(c.Args, []string{"compactor"}) || c.EnvFrom != nil || c.StartupProbe != nil || pod.PriorityClassName != "" ||
		pod.TopologySpreadConstraints != nil || len(pod.Containers) != 2 {
		t.Fatalf("defaults render an extension: args %v, envFrom %v, startup %v, priority %q, spread %v, %d containers",
			c.Args, c.EnvFrom, c.StartupProbe, pod.PriorityClassName, pod.TopologySpreadConstraints, len(pod.Containers))
	}
	if !reflect.DeepEqual(volumeNames(pod), []string{"siglake-tmp", "siglake-gossip-key"}) {
		t.Fatalf("default volumes %v (the scratch volume and the gossip key every install needs)", volumeNames(pod))
	}

	on := renderOK(t,
		"--set-json", `extraArgs=["--log-level=debug","--shutdown-timeout=20s"]`,
		"--set-json", `extraEnvFrom=[{"secretRef":{"name":"siglake-options"}},{"configMapRef":{"name":"tuning","optional":true}}]`,
		"--set-json", `extraVolumes=[{"name":"ca","configMap":{"name":"internal-ca"}}]`,
		"--set-json", `extraVolumeMounts=[{"name":"ca","mountPath":"/etc/ssl/internal","readOnly":true}]`,
		"--set-json", `livenessProbe={"exec":{"command":["/siglake","version"]},"periodSeconds":30}`,
		"--set-json", `readinessProbe={"httpGet":{"path":"/readyz","port":"siglake-http"},"periodSeconds":7}`,
		"--set-json", `startupProbe={"httpGet":{"path":"/healthz","port":"siglake-http"},"failureThreshold":30}`,
		"--set", "example.priorityClassName=ingest-critical",
		"--set-json", `example.topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"},`+
			`{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"tier":"{{ .Release.Name }}-ingest"}}}]`,
		"--set-json", `example.extraContainers=[{"name":"shipper","image":"registry.example/shipper:1","args":["--wal-dir={{ .Values.wal.mountPath }}"]}]`,
	)
	pod = podSpec(t, on)
	c = container(pod, "siglake-compactor")
	if want := []string{"compactor", "--log-level=debug", "--shutdown-timeout=20s"}; !reflect.DeepEqual(c.Args, want) {
		t.Errorf("args %v, want %v", c.Args, want)
	}
	if len(c.EnvFrom) != 2 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "siglake-options" || c.EnvFrom[1].ConfigMapRef == nil {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	if !reflect.DeepEqual(volumeNames(pod), []string{"siglake-tmp", "siglake-gossip-key", "ca"}) {
		t.Errorf("volumes %v, want the extra volume after the chart's", volumeNames(pod))
	}
	if p := c.LivenessProbe; p == nil || p.Exec == nil || p.HTTPGet != nil || p.PeriodSeconds != 30 || p.InitialDelaySeconds != 0 {
		t.Errorf("livenessProbe %+v: want the value as given, none of the default's fields", p)
	}
	if p := c.ReadinessProbe; p == nil || p.PeriodSeconds != 7 {
		t.Errorf("readinessProbe %+v: want the value (it renders although probes.readiness.enabled is false)", p)
	}
	if p := c.StartupProbe; p == nil || p.FailureThreshold != 30 || p.HTTPGet.Path != "/healthz" {
		t.Errorf("startupProbe %+v", p)
	}
	if pod.PriorityClassName != "ingest-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	tsc := pod.TopologySpreadConstraints
	if len(tsc) != 2 {
		t.Fatalf("topologySpreadConstraints %+v", tsc)
	}
	if sel := tsc[0].LabelSelector; sel == nil || sel.MatchLabels["app.kubernetes.io/name"] != chartName || sel.MatchLabels["app.kubernetes.io/instance"] != releaseName {
		t.Errorf("a constraint without labelSelector gets the pods' selector labels: %+v", sel)
	}
	if sel := tsc[1].LabelSelector; sel == nil || !reflect.DeepEqual(sel.MatchLabels, map[string]string{"tier": releaseName + "-ingest"}) {
		t.Errorf("a constraint's own labelSelector is kept (templated): %+v", sel)
	}
	if x := container(pod, "shipper"); x == nil || !reflect.DeepEqual(x.Args, []string{"--wal-dir=/var/lib/siglake/wal"}) {
		t.Errorf("extraContainers: %+v (templated with tpl)", x)
	}

	// The probes' defaults still apply beside a full object of another kind.
	r := renderOK(t, "--set-json", `startupProbe={"httpGet":{"path":"/healthz","port":"siglake-http"}}`)
	if c := container(podSpec(t, r), "siglake-compactor"); c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe != nil {
		t.Errorf("with only startupProbe set: liveness %+v, readiness %+v; want the defaults", c.LivenessProbe, c.ReadinessProbe)
	}
}

// TestIngestChartExtraVolumes: siglake-compactor.volumes, which an ingest chart includes, carries
// extraVolumes, so extraVolumeMounts have their volume there too.
func TestIngestChartExtraVolumes(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ingest")
	copyTree(t, filepath.Join(root, "charts", "examples", "ingest"), dir)
	copyTree(t, chartDir(t), filepath.Join(dir, "charts", chartName))
	r := decodeAll(t, mustRender(t, dir,
		"--set-json", `siglake-compactor.extraVolumes=[{"name":"ca","configMap":{"name":"internal-ca"}}]`,
		"--set-json", `siglake-compactor.extraVolumeMounts=[{"name":"ca","mountPath":"/etc/ssl/internal"}]`))
	checkObjects(t, r)
	if got := volumeNames(podSpec(t, r)); !contains(got, "ca") {
		t.Errorf("ingest pod volumes %v lack the extra volume", got)
	}
	if pl := podSpec(t, r); r.statefulSets[0].Spec.Template.Labels["app.kubernetes.io/part-of"] != "memberlist" || len(pl.Containers) != 2 {
		t.Errorf("ingest pod labels %v: want app.kubernetes.io/part-of=memberlist", r.statefulSets[0].Spec.Template.Labels)
	}
}

// TestPodDisruptionBudget: on by default for the example StatefulSet (maxUnavailable 1), a
// percentage accepted, off renders none.
func TestPodDisruptionBudget(t *testing.T) {
	r := renderOK(t)
	if len(r.pdbs) != 1 || r.pdbs[0].Spec.MaxUnavailable.IntValue() != 1 {
		t.Fatalf("default: %d PodDisruptionBudgets %+v, want one with maxUnavailable 1", len(r.pdbs), r.pdbs)
	}
	if r := renderOK(t, "--set", "example.podDisruptionBudget.maxUnavailable=25%"); len(r.pdbs) != 1 || r.pdbs[0].Spec.MaxUnavailable.StrVal != "25%" {
		t.Errorf("maxUnavailable 25%%: %+v", r.pdbs)
	}
	if r := renderOK(t, "--set", "example.podDisruptionBudget.enabled=false"); len(r.pdbs) != 0 {
		t.Errorf("disabled: %d PodDisruptionBudgets", len(r.pdbs))
	}
	if r := renderOK(t, "--set", "example.enabled=false", "--set", "gossip.service.selector.app=ingest"); len(r.pdbs) != 0 {
		t.Errorf("without the example StatefulSet: %d PodDisruptionBudgets (the ingest chart owns its pods' budget)", len(r.pdbs))
	}
}

// TestGoMemLimitRatio: GOMEMLIMIT is goMemLimitRatio of the memory limit in bytes, rounded down,
// for every form of quantity; none with the ratio 0 or without a memory limit; a limit that is
// not a quantity fails the render.
func TestGoMemLimitRatio(t *testing.T) {
	for _, c := range []struct {
		limit string // as given to --set-json
		ratio string
	}{
		{`"1Gi"`, ""}, {`"512Mi"`, "0.9"}, {`"1.5Gi"`, "0.9"}, {`"2G"`, "0.9"}, {`"256M"`, "0.75"},
		{`"3Gi"`, "1"}, {`"1000000000"`, "0.9"}, {`1073741824`, "0.9"}, {`"4096Ki"`, "0.9"}, {`"1.25G"`, "1"},
	} {
		args := []string{"--set-json", "resources.limits.memory=" + c.limit}
		ratio := 0.9
		if c.ratio != "" {
			args = append(args, "--set", "goMemLimitRatio="+c.ratio)
			ratio = mustFloat(t, c.ratio)
		}
		env := resolveEnv(t, sidecarContainer(t, renderOK(t, args...)))
		q := resource.MustParse(strings.Trim(c.limit, `"`))
		want := int64(math.Floor(float64(q.Value()) * ratio))
		if got := env["GOMEMLIMIT"]; got != itoa(want) {
			t.Errorf("limit %s, ratio %v: GOMEMLIMIT %q, want %d", c.limit, ratio, got, want)
		}
	}
	for name, args := range map[string][]string{
		"ratio 0":         {"--set", "goMemLimitRatio=0"},
		"no memory limit": {"--set-json", "resources.limits=null"},
	} {
		if env := resolveEnv(t, sidecarContainer(t, renderOK(t, args...))); env["GOMEMLIMIT"] != "" {
			t.Errorf("%s: GOMEMLIMIT %q rendered", name, env["GOMEMLIMIT"])
		}
	}
	if _, err := render(t, chartDir(t), "--set", "goMemLimitRatio=1.5"); err == nil {
		t.Error("goMemLimitRatio 1.5 rendered; the schema bounds it by 1")
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q.AsApproximateFloat64()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestMonitoringObjectsNeedTheAPI: the ServiceMonitor, PodMonitor and PrometheusRule render
// when the cluster has the monitoring.coreos.com/v1 API, or with metrics.forceMonitoringApi;
// enabled without either, the render fails naming the value and the API (install notes, which
// helm template and GitOps tools never show, are no place to say the scrape or alerts are gone).
func TestMonitoringObjectsNeedTheAPI(t *testing.T) {
	for _, c := range []struct{ value, kind string }{
		{"metrics.serviceMonitor.enabled", "ServiceMonitor"},
		{"metrics.podMonitor.enabled", "PodMonitor"},
		{"metrics.prometheusRule.enabled", "PrometheusRule"},
	} {
		args := []string{"--set", "metrics.scrapeAnnotations=false", "--set", c.value + "=true"}
		count := func(r rendered) int { return len(r.svcMonitors) + len(r.podMonitors) + len(r.rules) }
		_, err := render(t, chartDir(t), args...)
		if err == nil {
			t.Errorf("%s without the API renders; want a failure", c.value)
		} else {
			for _, want := range []string{c.value, c.kind, "monitoring.coreos.com/v1", "--api-versions", "metrics.forceMonitoringApi"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s without the API: the failure does not say %q:\n%v", c.value, want, err)
				}
			}
		}
		if n := count(renderOK(t, append(args, monitoringAPI...)...)); n != 1 {
			t.Errorf("%s with the API: %d monitoring objects, want 1", c.value, n)
		}
		if n := count(renderOK(t, append(args, "--set", "metrics.forceMonitoringApi=true")...)); n != 1 {
			t.Errorf("%s forced: %d monitoring objects, want 1", c.value, n)
		}
	}
	// The dashboard is a ConfigMap, which every cluster has: it needs no API.
	if n := len(renderOK(t, "--set", "metrics.dashboard.enabled=true").configMaps); n != 1 {
		t.Errorf("the dashboard without the monitoring API: %d ConfigMaps, want 1", n)
	}
}

// TestDoubleScrapingRefused: the scrape annotations, the ServiceMonitor and the PodMonitor each
// scrape every pod; two or three of them on is refused, naming them.
func TestDoubleScrapingRefused(t *testing.T) {
	sa, sm, pm := "metrics.scrapeAnnotations", "metrics.serviceMonitor.enabled", "metrics.podMonitor.enabled"
	for _, on := range [][]string{{sa, sm}, {sa, pm}, {sm, pm}, {sa, sm, pm}} {
		args := append([]string{}, monitoringAPI...)
		for _, v := range []string{sa, sm, pm} {
			args = append(args, "--set", v+"="+boolString(contains(on, v)))
		}
		_, err := render(t, chartDir(t), args...)
		if err == nil {
			t.Errorf("%v on together rendered; want a refusal", on)
			continue
		}
		for _, v := range on {
			if !strings.Contains(err.Error(), v) {
				t.Errorf("%v: the refusal does not name %s:\n%v", on, v, err)
			}
		}
	}
	for _, v := range []string{sm, pm} {
		renderOK(t, append([]string{"--set", sa + "=false", "--set", v + "=true"}, monitoringAPI...)...)
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestMonitorValues: scrapeTimeout, annotations, namespaceSelector, relabelings,
// metricRelabelings, scheme and tlsConfig of the ServiceMonitor and PodMonitor, off and on.
func TestMonitorValues(t *testing.T) {
	for _, kind := range []string{"serviceMonitor", "podMonitor"} {
		base := append([]string{"--set", "metrics.scrapeAnnotations=false", "--set", "metrics." + kind + ".enabled=true"}, monitoringAPI...)
		endpoint := func(r rendered) (monitoringv1.NamespaceSelector, map[string]string, scrapeFields) {
			if kind == "serviceMonitor" {
				m := r.svcMonitors[0]
				e := m.Spec.Endpoints[0]
				return m.Spec.NamespaceSelector, m.Annotations, scrapeFields{string(e.ScrapeTimeout), schemeOf(e.Scheme), e.TLSConfig != nil, len(e.RelabelConfigs), len(e.MetricRelabelConfigs)}
			}
			m := r.podMonitors[0]
			e := m.Spec.PodMetricsEndpoints[0]
			return m.Spec.NamespaceSelector, m.Annotations, scrapeFields{string(e.ScrapeTimeout), schemeOf(e.Scheme), e.TLSConfig != nil, len(e.RelabelConfigs), len(e.MetricRelabelConfigs)}
		}
		ns, ann, f := endpoint(renderOK(t, base...))
		if !reflect.DeepEqual(ns.MatchNames, []string{releaseNS}) || ns.Any || ann != nil || f != (scrapeFields{}) {
			t.Errorf("%s defaults: namespaceSelector %+v, annotations %v, endpoint %+v", kind, ns, ann, f)
		}
		p := "metrics." + kind + "."
		ns, ann, f = endpoint(renderOK(t, append(base,
			"--set", p+"scrapeTimeout=10s",
			"--set", p+"annotations.team=observability",
			"--set-json", p+`namespaceSelector={"any":true}`,
			"--set-json", p+`relabelings=[{"sourceLabels":["__meta_kubernetes_pod_node_name"],"targetLabel":"node"}]`,
			"--set-json", p+`metricRelabelings=[{"sourceLabels":["__name__"],"regex":"go_gc_.*","action":"drop"},{"regex":"le","action":"labeldrop"}]`,
			"--set", p+"scheme=https",
			"--set-json", p+`tlsConfig={"insecureSkipVerify":true,"serverName":"siglake"}`,
		)...))
		want := scrapeFields{"10s", "https", true, 1, 2}
		if !ns.Any || ann["team"] != "observability" || f != want {
			t.Errorf("%s set: namespaceSelector %+v, annotations %v, endpoint %+v, want %+v", kind, ns, ann, f, want)
		}
	}
}

type scrapeFields struct {
	timeout, scheme            string
	tls                        bool
	relabelings, metricRelabel int
}

func schemeOf(s *monitoringv1.Scheme) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

// ruleAlerts renders the PrometheusRule with args and returns its chart group's rules by alert
// name (several rules may share one), and every group's name.
func ruleAlerts(t *testing.T, args ...string) (map[string][]monitoringv1.Rule, []string) {
	t.Helper()
	r := renderOK(t, append(append([]string{"--set", "metrics.prometheusRule.enabled=true"}, monitoringAPI...), args...)...)
	if len(r.rules) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(r.rules))
	}
	alerts := map[string][]monitoringv1.Rule{}
	var groups []string
	for _, g := range r.rules[0].Spec.Groups {
		groups = append(groups, g.Name)
		if g.Name != "siglake-compactor" {
			continue
		}
		for _, rule := range g.Rules {
			alerts[rule.Alert] = append(alerts[rule.Alert], rule)
		}
	}
	return alerts, groups
}

// TestPrometheusRuleValues: every alert has a runbook_url into its docs/operations.md section,
// which exists; disabled, additionalRuleLabels, additionalGroups, annotations and runbookUrl;
// the catalog-down alert is a warning first and critical when the WAL backlog is old.
func TestPrometheusRuleValues(t *testing.T) {
	alerts, groups := ruleAlerts(t)
	if !reflect.DeepEqual(groups, []string{"siglake-compactor"}) {
		t.Errorf("groups %v", groups)
	}
	anchors := operationsAnchors(t)
	for name, rules := range alerts {
		for _, rule := range rules {
			url := rule.Annotations["runbook_url"]
			anchor, ok := strings.CutPrefix(url, "https://github.com/siglake/siglake/blob/main/docs/operations.md#")
			if !ok || !anchors[anchor] {
				t.Errorf("%s: runbook_url %q does not point to a section of docs/operations.md", name, url)
			}
			if _, ok := rule.Labels["team"]; ok {
				t.Errorf("%s: a label nobody asked for: %v", name, rule.Labels)
			}
		}
	}
	down := alerts["SiglakeCatalogDown"]
	if len(down) != 2 || down[0].Labels["severity"] != "warning" || down[1].Labels["severity"] != "critical" ||
		!strings.Contains(down[1].Expr.String(), "siglake_wal_oldest_sealed_age_seconds") || !strings.Contains(down[1].Expr.String(), "> 1800") {
		t.Errorf("SiglakeCatalogDown: %+v; want a warning, and a critical on the backlog age above 1800 s", down)
	}
	if nw := alerts["SiglakeCatalogNotWritable"]; len(nw) != 1 || nw[0].Labels["severity"] != "warning" ||
		!strings.Contains(nw[0].Expr.String(), "siglake_catalog_writable") {
		t.Errorf("SiglakeCatalogNotWritable: %+v; want a warning on siglake_catalog_writable", nw)
	}
	if len(alerts["SiglakeMaintenanceNotSucceeding"]) != 1 || !strings.Contains(alerts["SiglakeMaintenanceNotSucceeding"][0].Expr.String(), "> 3600") {
		t.Errorf("SiglakeMaintenanceNotSucceeding: %+v", alerts["SiglakeMaintenanceNotSucceeding"])
	}

	alerts, groups = ruleAlerts(t,
		"--set", "metrics.prometheusRule.disabled.SiglakeCatalogDown=true",
		"--set", "metrics.prometheusRule.disabled.SiglakeGossipSplitView=true",
		"--set", "metrics.prometheusRule.disabled.SiglakeOverlapDepthHigh=false",
		"--set", "metrics.prometheusRule.additionalRuleLabels.team=observability",
		"--set", "metrics.prometheusRule.additionalRuleLabels.severity=page", // the alert's own wins
		"--set", "metrics.prometheusRule.runbookUrl=https://wiki.example.internal/siglake",
		"--set", "metrics.prometheusRule.catalogDownCriticalBacklogAgeSecs=600",
		"--set", "metrics.prometheusRule.maintenanceStaleSecs=7200",
		"--set-json", `metrics.prometheusRule.additionalGroups=[{"name":"mine","rules":[{"alert":"MyAlert","expr":"vector(1)","labels":{"severity":"info"}}]}]`,
	)
	if _, ok := alerts["SiglakeCatalogDown"]; ok || alerts["SiglakeGossipSplitView"] != nil || alerts["SiglakeOverlapDepthHigh"] == nil {
		t.Errorf("disabled: alerts %v", keys(alerts))
	}
	if !reflect.DeepEqual(groups, []string{"siglake-compactor", "mine"}) {
		t.Errorf("additionalGroups: groups %v", groups)
	}
	for name, rules := range alerts {
		for _, rule := range rules {
			if rule.Labels["team"] != "observability" || rule.Labels["severity"] == "page" {
				t.Errorf("%s labels %v: want team=observability added, its own severity kept", name, rule.Labels)
			}
			if want := "https://wiki.example.internal/siglake#" + strings.ToLower(name); rule.Annotations["runbook_url"] != want {
				t.Errorf("%s runbook_url %q, want %q", name, rule.Annotations["runbook_url"], want)
			}
		}
	}
	if !strings.Contains(alerts["SiglakeMaintenanceNotSucceeding"][0].Expr.String(), "> 7200") {
		t.Errorf("maintenanceStaleSecs: %s", alerts["SiglakeMaintenanceNotSucceeding"][0].Expr.String())
	}
	if down, _ := ruleAlerts(t, "--set", "metrics.prometheusRule.catalogDownCriticalBacklogAgeSecs=600"); !strings.Contains(down["SiglakeCatalogDown"][1].Expr.String(), "> 600") {
		t.Errorf("catalogDownCriticalBacklogAgeSecs: %s", down["SiglakeCatalogDown"][1].Expr.String())
	}
	// Everything disabled leaves only the groups of one's own.
	var all []string
	for name := range alerts {
		all = append(all, "--set", "metrics.prometheusRule.disabled."+name+"=true")
	}
	all = append(all, "--set", "metrics.prometheusRule.disabled.SiglakeCatalogDown=true", "--set", "metrics.prometheusRule.disabled.SiglakeGossipSplitView=true",
		"--set-json", `metrics.prometheusRule.additionalGroups=[{"name":"mine","rules":[{"record":"x","expr":"vector(1)"}]}]`)
	if _, groups := ruleAlerts(t, all...); !reflect.DeepEqual(groups, []string{"mine"}) {
		t.Errorf("every alert disabled: groups %v, want only mine", groups)
	}
	r := renderOK(t, append([]string{"--set", "metrics.prometheusRule.enabled=true", "--set", "metrics.prometheusRule.annotations.owner=sre"}, monitoringAPI...)...)
	if r.rules[0].Annotations["owner"] != "sre" {
		t.Errorf("PrometheusRule annotations %v", r.rules[0].Annotations)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// operationsAnchors are the section anchors of docs/operations.md as GitHub makes them
// (lower case, spaces to hyphens, other punctuation dropped).
func operationsAnchors(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, m := range regexp.MustCompile(`(?m)^#{1,6} (.+)$`).FindAllStringSubmatch(string(raw), -1) {
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), ""), " ", "-")
		out[a] = true
	}
	return out
}

// TestDashboardValues: the dashboard ConfigMap's annotations (the Grafana sidecar's folder) and
// namespace, off and on.
func TestDashboardValues(t *testing.T) {
	r := renderOK(t, "--set", "metrics.dashboard.enabled=true")
	if c := r.configMaps[0]; c.Namespace != releaseNS || c.Annotations != nil {
		t.Errorf("default dashboard ConfigMap: namespace %q, annotations %v", c.Namespace, c.Annotations)
	}
	r = renderOK(t, "--set", "metrics.dashboard.enabled=true", "--set", "metrics.dashboard.namespace=grafana", "--set", "metrics.dashboard.annotations.grafana_folder=siglake")
	if c := r.configMaps[0]; c.Namespace != "grafana" || c.Annotations["grafana_folder"] != "siglake" {
		t.Errorf("dashboard ConfigMap: namespace %q, annotations %v", c.Namespace, c.Annotations)
	}
}

// TestGossipServiceConvention: the gossip Service and the pods carry the Grafana charts'
// memberlist label, its TCP port is named gossip-ring with appProtocol tcp; gossip.udp false
// leaves UDP out of the pod and the Service (TCP only).
func TestGossipServiceConvention(t *testing.T) {
	for _, udp := range []bool{true, false} {
		r := renderOK(t, "--set", "gossip.udp="+boolString(udp))
		if len(r.services) != 1 {
			t.Fatalf("want one Service, got %d", len(r.services))
		}
		s := r.services[0]
		if s.Labels["app.kubernetes.io/part-of"] != "memberlist" || r.statefulSets[0].Spec.Template.Labels["app.kubernetes.io/part-of"] != "memberlist" {
			t.Errorf("udp %v: Service labels %v, pod labels %v: want app.kubernetes.io/part-of=memberlist", udp, s.Labels, r.statefulSets[0].Spec.Template.Labels)
		}
		var tcp *corev1.ServicePort
		hasUDP := false
		for i, p := range s.Spec.Ports {
			if p.Name == "gossip-ring" {
				tcp = &s.Spec.Ports[i]
			}
			hasUDP = hasUDP || p.Protocol == corev1.ProtocolUDP
		}
		if tcp == nil || tcp.Protocol != corev1.ProtocolTCP || tcp.AppProtocol == nil || *tcp.AppProtocol != "tcp" || tcp.Port != 7946 {
			t.Errorf("udp %v: gossip port %+v, want gossip-ring 7946/TCP appProtocol tcp", udp, tcp)
		}
		c := sidecarContainer(t, r)
		podUDP := false
		for _, p := range c.Ports {
			podUDP = podUDP || p.Protocol == corev1.ProtocolUDP
		}
		if hasUDP != udp || podUDP != udp {
			t.Errorf("gossip.udp %v: UDP in the Service %v, in the container %v", udp, hasUDP, podUDP)
		}
		// The binary binds the same address either way: TCP only changes what the pod exposes.
		if env := resolveEnv(t, c); env["SIGLAKE_GOSSIP_BIND"] != "0.0.0.0:7946" {
			t.Errorf("udp %v: SIGLAKE_GOSSIP_BIND %q", udp, env["SIGLAKE_GOSSIP_BIND"])
		}
	}
	r := renderOK(t, "--set", "gossip.enabled=false")
	if s := r.services[0]; s.Labels["app.kubernetes.io/part-of"] != "" || len(s.Spec.Ports) != 1 {
		t.Errorf("gossip off: Service labels %v, ports %+v; want the HTTP port only, no memberlist label", s.Labels, s.Spec.Ports)
	}
}
