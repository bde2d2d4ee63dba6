package chart

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestServiceAccountValues: serviceAccount.create renders a ServiceAccount with its annotations
// (templated, for IRSA or workload identity) and the pods run as it; serviceAccount.name names it
// or an existing one; the API token is mounted only when asked.
func TestServiceAccountValues(t *testing.T) {
	off := renderOK(t)
	if len(off.accounts) != 0 {
		t.Fatalf("default renders %d ServiceAccounts, want none", len(off.accounts))
	}
	pod := podSpec(t, off)
	if pod.ServiceAccountName != "" || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Fatalf("default pod: serviceAccountName %q, automount %v; want the namespace's default without the token", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}

	on := renderOK(t, "--set", "serviceAccount.create=true",
		"--set-json", `serviceAccount.annotations={"eks.amazonaws.com/role-arn":"arn:aws:iam::123456789012:role/{{ .Release.Name }}-s3"}`)
	if len(on.accounts) != 1 {
		t.Fatalf("serviceAccount.create: %d ServiceAccounts, want 1", len(on.accounts))
	}
	sa := on.accounts[0]
	eq(t, "created ServiceAccount name", sa.Name, releaseName+"-"+chartName)
	eq(t, "IRSA annotation (templated)", sa.Annotations["eks.amazonaws.com/role-arn"], "arn:aws:iam::123456789012:role/"+releaseName+"-s3")
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Errorf("created ServiceAccount automounts its token: %v", sa.AutomountServiceAccountToken)
	}
	eq(t, "pod's ServiceAccount", podSpec(t, on).ServiceAccountName, sa.Name)

	named := renderOK(t, "--set", "serviceAccount.create=true", "--set", "serviceAccount.name=ingest-s3",
		"--set", "serviceAccount.automountServiceAccountToken=true")
	pod = podSpec(t, named)
	if len(named.accounts) != 1 || named.accounts[0].Name != "ingest-s3" || pod.ServiceAccountName != "ingest-s3" {
		t.Errorf("serviceAccount.name=ingest-s3: accounts %v, pod runs as %q", named.accounts, pod.ServiceAccountName)
	}
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken=true: the pod says %v", pod.AutomountServiceAccountToken)
	}

	existing := renderOK(t, "--set", "serviceAccount.name=shared")
	if len(existing.accounts) != 0 || podSpec(t, existing).ServiceAccountName != "shared" {
		t.Errorf("serviceAccount.name without create: %d accounts rendered, pod runs as %q; want none and shared",
			len(existing.accounts), podSpec(t, existing).ServiceAccountName)
	}
	legacy := renderOK(t, "--set", "example.serviceAccountName=old")
	eq(t, "example.serviceAccountName still names the pods' account", podSpec(t, legacy).ServiceAccountName, "old")

	if _, err := render(t, chartDir(t), "--set", "serviceAccount.name=Not_A_Name"); err == nil || !strings.Contains(err.Error(), "serviceAccount") {
		t.Errorf("an invalid serviceAccount.name renders or is refused without naming it: %v", err)
	}
}

// TestCommonLabelsOnEveryObject: commonLabels land on every object's metadata and on the pod
// template, never on a selector; the chart's own labels win over a commonLabels key.
func TestCommonLabelsOnEveryObject(t *testing.T) {
	args := append([]string{
		"--set", "commonLabels.team=logs", "--set", "commonLabels.app\\.kubernetes\\.io/name=other",
		"--set", "serviceAccount.create=true", "--set", "metrics.dashboard.enabled=true",
		"--set", "metrics.scrapeAnnotations=false", "--set", "metrics.podMonitor.enabled=true",
		"--set", "metrics.prometheusRule.enabled=true",
	}, monitoringAPI...)
	r := renderOK(t, args...)
	if len(r.objs) < 8 {
		t.Fatalf("only %d objects rendered", len(r.objs))
	}
	for _, o := range r.objs {
		var m struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(o.YAML, &m); err != nil {
			t.Fatal(err)
		}
		if m.Metadata.Labels["team"] != "logs" {
			t.Errorf("%s: labels %v lack commonLabels team=logs", o, m.Metadata.Labels)
		}
		if m.Metadata.Labels["app.kubernetes.io/name"] != chartName {
			t.Errorf("%s: commonLabels overrode the chart's app.kubernetes.io/name: %v", o, m.Metadata.Labels)
		}
	}
	s := r.statefulSets[0]
	eq(t, "pod template label team", s.Spec.Template.Labels["team"], "logs")
	if _, ok := s.Spec.Selector.MatchLabels["team"]; ok {
		t.Errorf("commonLabels reached the StatefulSet selector (immutable): %v", s.Spec.Selector.MatchLabels)
	}
	// The selector is the default render's: commonLabels on an installed release upgrade cleanly.
	eq(t, "selector", s.Spec.Selector.MatchLabels, renderOK(t).statefulSets[0].Spec.Selector.MatchLabels)
}

// TestImageRegistryAndPullSecrets: global.image.registry replaces the registry host of every
// image (or prefixes a repository without one); imagePullSecrets and global.imagePullSecrets take
// names or objects, merged without duplicates.
func TestImageRegistryAndPullSecrets(t *testing.T) {
	images := func(r rendered) map[string]string {
		out := map[string]string{}
		for _, c := range podSpec(t, r).Containers {
			out[c.Name] = c.Image
		}
		return out
	}
	eq(t, "default images", images(renderOK(t)), map[string]string{
		"ingest": "registry.k8s.io/pause:3.10", "siglake-compactor": "ghcr.io/siglake/siglake:0.1.0"})
	eq(t, "mirrored images", images(renderOK(t, "--set", "global.image.registry=mirror.example:5000/hub")), map[string]string{
		"ingest": "mirror.example:5000/hub/pause:3.10", "siglake-compactor": "mirror.example:5000/hub/siglake/siglake:0.1.0"})
	eq(t, "mirrored, repository without a host, digest", images(renderOK(t, "--set", "global.image.registry=mirror.example",
		"--set", "image.repository=siglake/siglake", "--set", "image.digest=sha256:"+strings.Repeat("ab", 32),
		"--set", "example.ingest.image.repository=localhost/ingest")), map[string]string{
		"ingest": "mirror.example/ingest:3.10", "siglake-compactor": "mirror.example/siglake/siglake@sha256:" + strings.Repeat("ab", 32)})

	r := renderOK(t, "--set-json", `imagePullSecrets=["regcred",{"name":"mirror"}]`, "--set-json", `global.imagePullSecrets=[{"name":"regcred"},"org"]`)
	eq(t, "pull secrets", podSpec(t, r).ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}, {Name: "org"}})
	if got := podSpec(t, renderOK(t)).ImagePullSecrets; got != nil {
		t.Errorf("default pull secrets %v, want none", got)
	}
	if _, err := render(t, chartDir(t), "--set", "global.image.registry=https://mirror"); err == nil || !strings.Contains(err.Error(), "registry") {
		t.Errorf("a registry with a scheme renders, or is refused without naming it: %v", err)
	}
}

// TestExtraObjects: each extraObjects entry, a map or a string, renders as its own templated
// manifest.
func TestExtraObjects(t *testing.T) {
	r := renderOK(t,
		"--set-json", `extraObjects=[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"{{ include \"siglake-compactor.fullname\" . }}-extra"},"data":{"ns":"{{ .Release.Namespace }}"}},`+
			`"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ .Release.Name }}-catalog\nstringData:\n  uri: postgres://pg/siglake\n"]`)
	var cm *corev1.ConfigMap
	for _, c := range r.configMaps {
		if c.Name == releaseName+"-"+chartName+"-extra" {
			cm = c
		}
	}
	if cm == nil || cm.Data["ns"] != releaseNS {
		t.Errorf("the map entry did not render templated: %v", r.configMaps)
	}
	var sec *corev1.Secret
	for _, s := range r.secrets {
		if s.Name == releaseName+"-catalog" {
			sec = s
		}
	}
	if sec == nil || sec.StringData["uri"] != "postgres://pg/siglake" {
		t.Errorf("the string entry did not render templated: %v", r.secrets)
	}
	if n := len(r.objs) - len(renderOK(t).objs); n != 2 {
		t.Errorf("two extraObjects added %d objects", n)
	}
}

// podTemplateYAML is the StatefulSet's pod template of r, serialised.
func podTemplateYAML(t *testing.T, r rendered) string {
	t.Helper()
	if len(r.statefulSets) != 1 {
		t.Fatalf("want one StatefulSet, got %d", len(r.statefulSets))
	}
	out, err := yaml.Marshal(r.statefulSets[0].Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// withChartVersion copies the chart with Chart.yaml's version and appVersion replaced.
func withChartVersion(t *testing.T, version, appVersion string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), chartName)
	copyTree(t, chartDir(t), dir)
	p := filepath.Join(dir, "Chart.yaml")
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "version:"):
			l = "version: " + version
		case strings.HasPrefix(l, "appVersion:"):
			l = "appVersion: " + `"` + appVersion + `"`
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPodTemplateSameAcrossChartVersions: a chart upgrade that changes nothing the pods run (same
// image, same values) leaves the example pod template byte-identical, so it restarts no ingest
// pod; the versions stay on the objects' metadata labels.
func TestPodTemplateSameAcrossChartVersions(t *testing.T) {
	for _, f := range ciValues(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			args := []string{"-f", f, "--set", "image.tag=0.1.0"}
			old := decodeAll(t, mustRender(t, chartDir(t), args...))
			// render gives only the chart's own directory the gossip key values: pass them here.
			key := filepath.Join(repoRoot(t), "test", "chart", "testdata", "gossip-key-values.yaml")
			next := decodeAll(t, mustRender(t, withChartVersion(t, "0.2.0", "0.2.0"), append([]string{"-f", key}, args...)...))
			if a, b := podTemplateYAML(t, old), podTemplateYAML(t, next); a != b {
				t.Errorf("chart 0.1.0 and 0.2.0 render different pod templates (every pod restarts on upgrade):\n--- 0.1.0\n%s\n--- 0.2.0\n%s", a, b)
			}
			eq(t, "0.2.0 StatefulSet chart label", next.statefulSets[0].Labels["helm.sh/chart"], chartName+"-0.2.0")
			eq(t, "0.2.0 StatefulSet version label", next.statefulSets[0].Labels["app.kubernetes.io/version"], "0.2.0")
		})
	}
}

// TestPackagedChartRendersSame: `helm package` of the chart directory renders exactly what the
// directory renders, for every ci values file (nothing the templates read is left out of the
// archive), and the archive holds the schema, README and dashboard.
func TestPackagedChartRendersSame(t *testing.T) {
	out := t.TempDir()
	if msg, err := runHelm(t, "package", chartDir(t), "--destination", out); err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	tgz := filepath.Join(out, chartName+"-0.1.0.tgz")
	names := archiveNames(t, tgz)
	for _, want := range []string{"Chart.yaml", "values.yaml", "values.schema.json", "README.md", "dashboards/siglake-compactor.json", "templates/_helpers.tpl"} {
		if !names[chartName+"/"+want] {
			t.Errorf("the package lacks %s", want)
		}
	}
	key := filepath.Join(repoRoot(t), "test", "chart", "testdata", "gossip-key-values.yaml")
	for _, f := range ciValues(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			args := []string{"template", releaseName, "", "--namespace", releaseNS, "-f", key, "-f", f}
			args[2] = chartDir(t)
			fromDir, err := runHelm(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			args[2] = tgz
			fromPackage, err := runHelm(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			if fromDir != fromPackage {
				t.Errorf("the packaged chart renders differently from the directory with %s", filepath.Base(f))
			}
		})
	}
	// A schema violation is refused from the package too (the schema travels in the archive).
	if _, err := runHelm(t, "template", releaseName, tgz, "-f", key, "--set", "compactor.role=compact"); err == nil {
		t.Error("the packaged chart renders compactor.role=compact: its schema is not applied")
	}
}

func archiveNames(t *testing.T, tgz string) map[string]bool {
	t.Helper()
	f, err := os.Open(tgz)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = true
	}
}
