package chart

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// decodeStrict decodes a rendered document into a typed API object, rejecting any field the
// type does not have (a misspelt or misplaced key that the API server would drop or refuse).
func decodeStrict(doc []byte, into any) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("to JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the object")
	}
	return nil
}

// typed returns an empty object of the Go type for apiVersion/kind, or nil if the chart is not
// expected to render that kind.
func typed(apiVersion, kind string) any {
	switch apiVersion + " " + kind {
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Secret":
		return &corev1.Secret{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "networking.k8s.io/v1 NetworkPolicy":
		return &networkingv1.NetworkPolicy{}
	}
	return nil
}

// rendered is one render decoded: the typed objects by kind.
type rendered struct {
	objs         []object
	statefulSets []*appsv1.StatefulSet
	services     []*corev1.Service
	configMaps   []*corev1.ConfigMap
	secrets      []*corev1.Secret
	accounts     []*corev1.ServiceAccount
	svcMonitors  []*monitoringv1.ServiceMonitor
	podMonitors  []*monitoringv1.PodMonitor
	rules        []*monitoringv1.PrometheusRule
	pdbs         []*policyv1.PodDisruptionBudget
	netpols      []*networkingv1.NetworkPolicy
}

func decodeAll(t testing.TB, objs []object) rendered {
	t.Helper()
	r := rendered{objs: objs}
	for _, o := range objs {
		v := typed(o.APIVersion, o.Kind)
		if v == nil {
			t.Errorf("%s: unexpected apiVersion %q kind %q", o, o.APIVersion, o.Kind)
			continue
		}
		if err := decodeStrict(o.YAML, v); err != nil {
			t.Errorf("%s does not decode strictly into %T: %v", o, v, err)
			continue
		}
		switch x := v.(type) {
		case *appsv1.StatefulSet:
			r.statefulSets = append(r.statefulSets, x)
		case *corev1.Service:
			r.services = append(r.services, x)
		case *corev1.ConfigMap:
			r.configMaps = append(r.configMaps, x)
		case *corev1.Secret:
			r.secrets = append(r.secrets, x)
		case *corev1.ServiceAccount:
			r.accounts = append(r.accounts, x)
		case *monitoringv1.ServiceMonitor:
			r.svcMonitors = append(r.svcMonitors, x)
		case *monitoringv1.PodMonitor:
			r.podMonitors = append(r.podMonitors, x)
		case *monitoringv1.PrometheusRule:
			r.rules = append(r.rules, x)
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, x)
		case *networkingv1.NetworkPolicy:
			r.netpols = append(r.netpols, x)
		}
	}
	return r
}

// TestManifestsValidate renders every ci values file and checks each object against the API
// types and the rules the API server would enforce on the fields the chart sets.
func TestManifestsValidate(t *testing.T) {
	dir := chartDir(t)
	for _, f := range ciValues(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			r := decodeAll(t, mustRender(t, dir, "-f", f))
			if len(r.objs) == 0 {
				t.Fatal("nothing rendered")
			}
			checkObjects(t, r)
		})
	}
}

// TestIngestChartIncludesSidecar renders charts/examples/ingest, an ingest chart that depends on
// this chart and includes its named templates, and checks the sidecar lands in its pods.
func TestIngestChartIncludesSidecar(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ingest")
	copyTree(t, filepath.Join(root, "charts", "examples", "ingest"), dir)
	// What `helm dependency build` does for a file:// dependency, without writing into the repo.
	copyTree(t, chartDir(t), filepath.Join(dir, "charts", chartName))
	if out, err := runHelm(t, "lint", "--strict", dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	r := decodeAll(t, mustRender(t, dir))
	checkObjects(t, r)
	if len(r.statefulSets) != 1 || r.statefulSets[0].Name != releaseName+"-ingest" {
		t.Fatalf("want only the ingest chart's StatefulSet (the example is off), got %d", len(r.statefulSets))
	}
	pod := r.statefulSets[0].Spec.Template.Spec
	if c := container(pod, "siglake-compactor"); c == nil {
		t.Fatal("the ingest pod has no siglake-compactor container")
	} else if env := envNames(c); !contains(env, "SIGLAKE_CATALOG") || !contains(env, "AWS_ACCESS_KEY_ID") {
		t.Fatalf("the sidecar did not get the ingest chart's siglake-compactor values: env %v", env)
	}
	if len(r.podMonitors) != 1 {
		t.Fatalf("want the PodMonitor the ingest chart enabled, got %d", len(r.podMonitors))
	}
}

func checkObjects(t *testing.T, r rendered) {
	t.Helper()
	seen := map[string]bool{}
	for _, o := range r.objs {
		key := o.Kind + "/" + o.Name
		if seen[key] {
			t.Errorf("%s rendered twice", key)
		}
		seen[key] = true
		for _, msg := range validation.IsDNS1123Subdomain(o.Name) {
			t.Errorf("%s: name: %s", o, msg)
		}
	}
	for _, s := range r.statefulSets {
		checkMeta(t, "StatefulSet/"+s.Name, s.ObjectMeta)
		checkStatefulSet(t, s)
		if sa := s.Spec.Template.Spec.ServiceAccountName; sa != "" && len(r.accounts) > 0 {
			found := false
			for _, a := range r.accounts {
				found = found || a.Name == sa
			}
			if !found {
				t.Errorf("StatefulSet/%s runs as ServiceAccount %q, which the chart does not render beside its own", s.Name, sa)
			}
		}
	}
	for _, a := range r.accounts {
		checkMeta(t, "ServiceAccount/"+a.Name, a.ObjectMeta)
	}
	for _, s := range r.services {
		checkMeta(t, "Service/"+s.Name, s.ObjectMeta)
		checkService(t, s, r.statefulSets)
	}
	for _, c := range r.configMaps {
		checkMeta(t, "ConfigMap/"+c.Name, c.ObjectMeta)
		for k, v := range c.Data {
			if !json.Valid([]byte(v)) && strings.HasSuffix(k, ".json") {
				t.Errorf("ConfigMap/%s: %s is not valid JSON", c.Name, k)
			}
		}
	}
	for _, m := range r.svcMonitors {
		checkMeta(t, "ServiceMonitor/"+m.Name, m.ObjectMeta)
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil {
			t.Errorf("ServiceMonitor/%s: selector: %v", m.Name, err)
			continue
		}
		found := false
		for _, s := range r.services {
			if sel.Matches(labels.Set(s.Labels)) {
				found = true
				for _, ep := range m.Spec.Endpoints {
					if !servicePort(s, ep.Port) {
						t.Errorf("ServiceMonitor/%s: port %q is not a port of Service/%s", m.Name, ep.Port, s.Name)
					}
				}
			}
		}
		if !found {
			t.Errorf("ServiceMonitor/%s selects no rendered Service", m.Name)
		}
	}
	for _, m := range r.podMonitors {
		checkMeta(t, "PodMonitor/"+m.Name, m.ObjectMeta)
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		if err != nil {
			t.Errorf("PodMonitor/%s: selector: %v", m.Name, err)
			continue
		}
		found := false
		for _, s := range r.statefulSets {
			if sel.Matches(labels.Set(s.Spec.Template.Labels)) {
				found = true
				for _, ep := range m.Spec.PodMetricsEndpoints {
					if !podHasPort(s.Spec.Template.Spec, ptrStr(ep.Port)) {
						t.Errorf("PodMonitor/%s: port %q is not a container port of StatefulSet/%s", m.Name, ptrStr(ep.Port), s.Name)
					}
				}
			}
		}
		if !found {
			t.Errorf("PodMonitor/%s selects no rendered pod", m.Name)
		}
	}
	for _, b := range r.pdbs {
		checkMeta(t, "PodDisruptionBudget/"+b.Name, b.ObjectMeta)
		if (b.Spec.MaxUnavailable == nil) == (b.Spec.MinAvailable == nil) {
			t.Errorf("PodDisruptionBudget/%s: want exactly one of maxUnavailable and minAvailable", b.Name)
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			t.Errorf("PodDisruptionBudget/%s: selector %v: %v", b.Name, b.Spec.Selector, err)
			continue
		}
		found := false
		for _, s := range r.statefulSets {
			found = found || sel.Matches(labels.Set(s.Spec.Template.Labels))
		}
		if !found {
			t.Errorf("PodDisruptionBudget/%s selects no rendered pod", b.Name)
		}
	}
	for _, np := range r.netpols {
		checkMeta(t, "NetworkPolicy/"+np.Name, np.ObjectMeta)
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || sel.Empty() {
			// An empty pod selector would restrict every pod of the namespace.
			t.Errorf("NetworkPolicy/%s: pod selector %v: %v", np.Name, np.Spec.PodSelector, err)
			continue
		}
		for _, s := range r.statefulSets {
			if !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
				t.Errorf("NetworkPolicy/%s does not select the pods of StatefulSet/%s", np.Name, s.Name)
			}
		}
	}
	for _, pr := range r.rules {
		checkMeta(t, "PrometheusRule/"+pr.Name, pr.ObjectMeta)
		for _, g := range pr.Spec.Groups {
			for _, rule := range g.Rules {
				if (rule.Alert == "") == (rule.Record == "") || rule.Expr.String() == "" {
					t.Errorf("PrometheusRule/%s: a rule without one alert or record name, or without an expression", pr.Name)
				}
				if strings.Count(rule.Expr.String(), "(") != strings.Count(rule.Expr.String(), ")") ||
					strings.Count(rule.Expr.String(), "{") != strings.Count(rule.Expr.String(), "}") {
					t.Errorf("PrometheusRule/%s: %s: unbalanced expression %q", pr.Name, rule.Alert, rule.Expr.String())
				}
			}
		}
	}
}

func checkMeta(t *testing.T, what string, m metav1.ObjectMeta) {
	t.Helper()
	if m.Name == "" {
		t.Errorf("%s: no name", what)
	}
	checkLabels(t, what+" labels", m.Labels)
	for k := range m.Annotations {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s annotation %q: %s", what, k, msg)
		}
	}
}

func checkLabels(t *testing.T, what string, l map[string]string) {
	t.Helper()
	for k, v := range l {
		for _, msg := range validation.IsQualifiedName(k) {
			t.Errorf("%s: key %q: %s", what, k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			t.Errorf("%s: %s=%q: %s", what, k, v, msg)
		}
	}
}

func checkStatefulSet(t *testing.T, s *appsv1.StatefulSet) {
	t.Helper()
	what := "StatefulSet/" + s.Name
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	if err != nil {
		t.Fatalf("%s: selector: %v", what, err)
	}
	if !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
		t.Errorf("%s: selector %v does not match the pod template labels %v", what, sel, s.Spec.Template.Labels)
	}
	checkLabels(t, what+" pod labels", s.Spec.Template.Labels)
	pod := s.Spec.Template.Spec
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		if volumes[v.Name] {
			t.Errorf("%s: volume %q twice", what, v.Name)
		}
		volumes[v.Name] = true
	}
	for _, c := range s.Spec.VolumeClaimTemplates {
		if volumes[c.Name] {
			t.Errorf("%s: %q is both a volume and a claim template", what, c.Name)
		}
		volumes[c.Name] = true
	}
	ports := map[string]bool{}
	containers := map[string]bool{}
	for _, c := range pod.Containers {
		cw := what + " container " + c.Name
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			t.Errorf("%s: name: %s", cw, msg)
		}
		containers[c.Name] = true
		if c.Image == "" || strings.HasSuffix(c.Image, ":") {
			t.Errorf("%s: image %q has no tag", cw, c.Image)
		}
		for _, p := range c.Ports {
			for _, msg := range validation.IsValidPortName(p.Name) {
				t.Errorf("%s: port name %q: %s", cw, p.Name, msg)
			}
			if ports[p.Name] {
				t.Errorf("%s: port name %q used twice in the pod", cw, p.Name)
			}
			ports[p.Name] = true
		}
		mounts := map[string]bool{}
		for _, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				t.Errorf("%s: mounts %q, which is neither a volume nor a claim template", cw, m.Name)
			}
			if mounts[m.MountPath] {
				t.Errorf("%s: two mounts at %s", cw, m.MountPath)
			}
			mounts[m.MountPath] = true
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.StrVal != "" && !hasPort(c, p.HTTPGet.Port.StrVal) {
				t.Errorf("%s: probe port %q is not one of its ports", cw, p.HTTPGet.Port.StrVal)
			}
		}
		defined := map[string]bool{}
		names := map[string]bool{}
		for _, e := range c.Env {
			if names[e.Name] {
				t.Errorf("%s: env %s twice", cw, e.Name)
			}
			names[e.Name] = true
			for _, ref := range regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`).FindAllStringSubmatch(e.Value, -1) {
				if !defined[ref[1]] {
					t.Errorf("%s: env %s refers to $(%s), not defined before it", cw, e.Name, ref[1])
				}
			}
			if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil {
				rf := e.ValueFrom.ResourceFieldRef
				if rf.ContainerName != "" && rf.ContainerName != c.Name {
					t.Errorf("%s: env %s takes %s of container %q", cw, e.Name, rf.Resource, rf.ContainerName)
				}
				if _, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(rf.Resource, "limits."))]; !ok {
					t.Errorf("%s: env %s takes %s, but the container sets no such limit", cw, e.Name, rf.Resource)
				}
			}
			defined[e.Name] = true
		}
	}
	for _, m := range pod.Containers {
		for _, e := range m.Env {
			if e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.ContainerName != "" &&
				!containers[e.ValueFrom.ResourceFieldRef.ContainerName] {
				t.Errorf("%s: env %s names container %q", what, e.Name, e.ValueFrom.ResourceFieldRef.ContainerName)
			}
		}
	}
	sc := container(pod, "siglake-compactor")
	if sc == nil {
		t.Errorf("%s: no siglake-compactor container", what)
		return
	}
	x := sc.SecurityContext
	if x == nil || x.RunAsNonRoot == nil || !*x.RunAsNonRoot || x.ReadOnlyRootFilesystem == nil || !*x.ReadOnlyRootFilesystem ||
		x.AllowPrivilegeEscalation == nil || *x.AllowPrivilegeEscalation {
		t.Errorf("%s: the sidecar must run non-root with a read-only root filesystem: %+v", what, x)
	}
	if s.Spec.Template.Spec.TerminationGracePeriodSeconds != nil && *s.Spec.Template.Spec.TerminationGracePeriodSeconds <= 30 {
		t.Errorf("%s: terminationGracePeriodSeconds %d does not exceed the sidecar's 30 s shutdown timeout", what, *s.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}
}

func checkService(t *testing.T, s *corev1.Service, sets []*appsv1.StatefulSet) {
	t.Helper()
	what := "Service/" + s.Name
	if s.Spec.ClusterIP != corev1.ClusterIPNone || !s.Spec.PublishNotReadyAddresses {
		t.Errorf("%s: want a headless Service with publishNotReadyAddresses (gossip join before ready)", what)
	}
	names := map[string]bool{}
	for _, p := range s.Spec.Ports {
		if names[p.Name] {
			t.Errorf("%s: port %q twice", what, p.Name)
		}
		names[p.Name] = true
		for _, msg := range validation.IsValidPortName(p.Name) {
			t.Errorf("%s: port name %q: %s", what, p.Name, msg)
		}
	}
	sel := labels.SelectorFromSet(s.Spec.Selector)
	for _, set := range sets {
		if !sel.Matches(labels.Set(set.Spec.Template.Labels)) {
			continue
		}
		for _, p := range s.Spec.Ports {
			if p.TargetPort.StrVal != "" && !podHasPort(set.Spec.Template.Spec, p.TargetPort.StrVal) {
				t.Errorf("%s: targetPort %q is not a container port of StatefulSet/%s", what, p.TargetPort.StrVal, set.Name)
			}
		}
		return
	}
	if len(sets) > 0 {
		t.Errorf("%s: selector %v matches no rendered pod template", what, s.Spec.Selector)
	}
}

func container(pod corev1.PodSpec, name string) *corev1.Container {
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	return nil
}

func hasPort(c corev1.Container, name string) bool {
	for _, p := range c.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func podHasPort(pod corev1.PodSpec, name string) bool {
	for _, c := range pod.Containers {
		if hasPort(c, name) {
			return true
		}
	}
	return false
}

func servicePort(s *corev1.Service, name string) bool {
	for _, p := range s.Spec.Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func ptrStr(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func envNames(c *corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestDecodeStrictRejects: the strict decoding this package relies on does fail on a misspelt
// or misplaced field and on a wrong type, where a plain decode would drop the field silently.
func TestDecodeStrictRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"misspelt field":  "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  replica: 3\n",
		"misplaced field": "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  publishNotReadyAddresses: true\n  clusterIP: None\n  selectors: {a: b}\n",
		"wrong type":      "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec:\n  publishNotReadyAddresses: \"yes please\"\n",
		"monitor field":   "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: x}\nspec:\n  podMetricEndpoints: []\n",
	} {
		objs, err := splitManifests(doc)
		if err != nil || len(objs) != 1 {
			t.Fatalf("%s: split: %v (%d objects)", name, err, len(objs))
		}
		if err := decodeStrict(objs[0].YAML, typed(objs[0].APIVersion, objs[0].Kind)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}
