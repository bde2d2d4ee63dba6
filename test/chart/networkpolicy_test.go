package chart

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The NetworkPolicy (docs/operations.md "Network"): off by default; on, it selects the pods that
// carry the sidecar, lets gossip in only from the release's pods, the HTTP port and the WAL buffer
// from their selectors, and appends extraIngress for the ingest container's ports.

// portKey is one port of an ingress rule: "7946/UDP".
func portKey(p networkingv1.NetworkPolicyPort) string {
	proto := corev1.ProtocolTCP
	if p.Protocol != nil {
		proto = *p.Protocol
	}
	if p.Port == nil {
		return "all/" + string(proto)
	}
	return p.Port.String() + "/" + string(proto)
}

// rulesByPort indexes a policy's ingress rules by their ports ("9464/TCP").
func rulesByPort(t *testing.T, np *networkingv1.NetworkPolicy) map[string][]networkingv1.NetworkPolicyIngressRule {
	t.Helper()
	out := map[string][]networkingv1.NetworkPolicyIngressRule{}
	for _, r := range np.Spec.Ingress {
		if len(r.Ports) == 0 {
			t.Fatalf("an ingress rule without ports opens every port: %+v", r)
		}
		for _, p := range r.Ports {
			out[portKey(p)] = append(out[portKey(p)], r)
		}
	}
	return out
}

// selects says whether sel (a LabelSelector) matches the labels l.
func selects(t *testing.T, sel *metav1.LabelSelector, l map[string]string) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("selector %+v: %v", sel, err)
	}
	return !s.Empty() && s.Matches(labels.Set(l))
}

func onePolicy(t *testing.T, r rendered) *networkingv1.NetworkPolicy {
	t.Helper()
	if len(r.netpols) != 1 {
		t.Fatalf("%d NetworkPolicies rendered, want 1", len(r.netpols))
	}
	np := r.netpols[0]
	checkMeta(t, "NetworkPolicy/"+np.Name, np.ObjectMeta)
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || len(np.Spec.Egress) != 0 {
		t.Fatalf("policy types %v, egress %v: want Ingress only", np.Spec.PolicyTypes, np.Spec.Egress)
	}
	return np
}

// releasePodsOnly checks that a rule admits exactly the pods podLabels are, and not the same pods
// of another release or namespace.
func releasePodsOnly(t *testing.T, what string, peer networkingv1.NetworkPolicyPeer, podLabels map[string]string) {
	t.Helper()
	if peer.NamespaceSelector != nil || peer.IPBlock != nil || peer.PodSelector == nil {
		t.Fatalf("%s: peer %+v, want a pod selector alone (the release's namespace)", what, peer)
	}
	if !selects(t, peer.PodSelector, podLabels) {
		t.Fatalf("%s: pod selector %v does not select the release's pods %v", what, peer.PodSelector, podLabels)
	}
	other := map[string]string{}
	for k, v := range podLabels {
		other[k] = v
	}
	if _, ok := other["app.kubernetes.io/instance"]; ok {
		other["app.kubernetes.io/instance"] = "another-release"
		if selects(t, peer.PodSelector, other) {
			t.Fatalf("%s: pod selector %v also selects another release's pods", what, peer.PodSelector)
		}
	}
}

func TestNetworkPolicyRenders(t *testing.T) {
	dir := chartDir(t)
	// Off by default, with the buffer on or off.
	for _, args := range [][]string{nil, {"--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.token=np-test-token-0123456789abcdef"}} {
		if r := decodeAll(t, mustRender(t, dir, args...)); len(r.netpols) != 0 {
			t.Fatalf("helm template %v rendered %d NetworkPolicies, want none (networkPolicy.enabled is false)", args, len(r.netpols))
		}
	}
	on := []string{"--set", "networkPolicy.enabled=true"}
	cases := []struct {
		name string
		args []string
		// ports are the rules' ports, sorted; want checks the rules.
		ports []string
		want  func(t *testing.T, rules map[string][]networkingv1.NetworkPolicyIngressRule, pods map[string]string)
	}{
		{"buffer off, no selectors", []string{"--set", "networkPolicy.noOtherIngress=true"},
			[]string{"7946/TCP", "7946/UDP", "9464/TCP"},
			func(t *testing.T, rules map[string][]networkingv1.NetworkPolicyIngressRule, pods map[string]string) {
				if from := rules["9464/TCP"][0].From; len(from) != 0 {
					t.Fatalf("metrics rule from %+v: without selectors any source (Prometheus) must reach it", from)
				}
			}},
		{"gossip over TCP only", []string{"--set", "networkPolicy.noOtherIngress=true", "--set", "gossip.udp=false"},
			[]string{"7946/TCP", "9464/TCP"}, nil},
		{"gossip off", []string{"--set", "networkPolicy.noOtherIngress=true", "--set", "gossip.enabled=false", "--set", "gossip.key="},
			[]string{"9464/TCP"}, nil},
		{"gossip off, catalog claims: group commit over the HTTP port from the release's pods", []string{"--set", "networkPolicy.noOtherIngress=true",
			"--set", "gossip.enabled=false", "--set", "compactor.catalogClaim=true",
			"--set", "networkPolicy.metrics.namespaceSelector.matchLabels.name=monitoring"},
			[]string{"9464/TCP"},
			func(t *testing.T, rules map[string][]networkingv1.NetworkPolicyIngressRule, pods map[string]string) {
				rs := rules["9464/TCP"]
				if len(rs) != 2 || len(rs[1].From) != 1 {
					t.Fatalf("HTTP port rules %+v: want the metrics selectors' and one from the release's pods", rs)
				}
				releasePodsOnly(t, "group commit rule", rs[1].From[0], pods)
			}},
		{"buffer on, selectors, extra ingress", []string{
			"--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.token=np-test-token-0123456789abcdef",
			"--set", "networkPolicy.metrics.namespaceSelector.matchLabels.name=monitoring",
			"--set", "networkPolicy.metrics.podSelector.matchLabels.app=prometheus",
			"--set", "networkPolicy.buffer.namespaceSelector.matchLabels.team=search",
			"--set-json", `networkPolicy.extraIngress=[{"ports":[{"port":4317,"protocol":"TCP"}]}]`},
			[]string{"4317/TCP", "7946/TCP", "7946/UDP", "9464/TCP", "9465/TCP"},
			func(t *testing.T, rules map[string][]networkingv1.NetworkPolicyIngressRule, pods map[string]string) {
				from := rules["9464/TCP"][0].From
				if len(from) != 1 || from[0].NamespaceSelector == nil || from[0].PodSelector == nil ||
					from[0].NamespaceSelector.MatchLabels["name"] != "monitoring" || from[0].PodSelector.MatchLabels["app"] != "prometheus" {
					t.Fatalf("metrics rule from %+v: want one peer with both selectors (pods matching both)", from)
				}
				from = rules["9465/TCP"][0].From
				if len(from) != 2 {
					t.Fatalf("buffer rule from %+v: want the release's pods and the configured namespaces", from)
				}
				releasePodsOnly(t, "buffer rule", from[0], pods)
				if from[1].PodSelector != nil || from[1].NamespaceSelector == nil || from[1].NamespaceSelector.MatchLabels["team"] != "search" {
					t.Fatalf("buffer rule's configured peer %+v", from[1])
				}
				if from := rules["4317/TCP"][0].From; len(from) != 0 {
					t.Fatalf("extra rule from %+v, want it as written", from)
				}
			}},
		{"buffer on, no buffer selectors", []string{"--set", "compactor.walBuffer.enabled=true", "--set", "compactor.walBuffer.token=np-test-token-0123456789abcdef", "--set", "networkPolicy.noOtherIngress=true"},
			[]string{"7946/TCP", "7946/UDP", "9464/TCP", "9465/TCP"},
			func(t *testing.T, rules map[string][]networkingv1.NetworkPolicyIngressRule, pods map[string]string) {
				from := rules["9465/TCP"][0].From
				if len(from) != 1 {
					t.Fatalf("buffer rule from %+v: without selectors only the release's pods", from)
				}
				releasePodsOnly(t, "buffer rule", from[0], pods)
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := decodeAll(t, mustRender(t, dir, append(append([]string(nil), on...), c.args...)...))
			checkObjects(t, r)
			np := onePolicy(t, r)
			pod := r.statefulSets[0].Spec.Template
			if !selects(t, &np.Spec.PodSelector, pod.Labels) {
				t.Fatalf("the policy's pod selector %v does not select the sidecar's pods %v", np.Spec.PodSelector, pod.Labels)
			}
			rules := rulesByPort(t, np)
			var got []string
			for p := range rules {
				got = append(got, p)
			}
			sort.Strings(got)
			eq(t, "ports with ingress rules", strings.Join(got, " "), strings.Join(c.ports, " "))
			// Every port the chart allows (not extraIngress's) is a container port of the sidecar.
			side := container(pod.Spec, "siglake-compactor")
			cports := map[string]bool{}
			for _, p := range side.Ports {
				cports[fmt.Sprintf("%d/%s", p.ContainerPort, p.Protocol)] = true
			}
			for _, p := range got {
				if p != "4317/TCP" && !cports[p] {
					t.Errorf("the policy allows %s, which is no port of the sidecar container %v", p, side.Ports)
				}
			}
			for _, g := range []string{"7946/TCP", "7946/UDP"} {
				for _, rule := range rules[g] {
					if len(rule.From) != 1 {
						t.Fatalf("gossip rule from %+v: want the release's pods only", rule.From)
					}
					releasePodsOnly(t, "gossip rule "+g, rule.From[0], pod.Labels)
				}
			}
			if c.want != nil {
				c.want(t, rules, pod.Labels)
			}
		})
	}
}

// TestNetworkPolicyIngestChart: where an ingest chart carries the sidecar (example.enabled
// false), the policy selects the pods gossip.service.selector names, and gossip comes only from
// them.
func TestNetworkPolicyIngestChart(t *testing.T) {
	r := decodeAll(t, mustRender(t, chartDir(t), "--set", "example.enabled=false", "--set", "gossip.service.selector.app=ingest",
		"--set", "networkPolicy.enabled=true", "--set-json", `networkPolicy.extraIngress=[{"ports":[{"port":8080}]}]`))
	np := onePolicy(t, r)
	ingest := map[string]string{"app": "ingest", "pod-template-hash": "x"}
	if !selects(t, &np.Spec.PodSelector, ingest) {
		t.Fatalf("pod selector %v does not select the ingest pods", np.Spec.PodSelector)
	}
	rules := rulesByPort(t, np)
	if len(rules["7946/TCP"]) != 1 || len(rules["8080/TCP"]) != 1 {
		t.Fatalf("rules %v: want gossip and the ingest port", rules)
	}
	from := rules["7946/TCP"][0].From
	if len(from) != 1 || from[0].PodSelector == nil || from[0].NamespaceSelector != nil || !selects(t, from[0].PodSelector, ingest) ||
		selects(t, from[0].PodSelector, map[string]string{"app": "other"}) {
		t.Fatalf("gossip from %+v: want the ingest pods only", from)
	}
}

// TestNetworkPolicyRenderFailures: the policy restricts the whole pod, so the chart refuses to
// cut off the ingest container's ports by omission.
func TestNetworkPolicyRenderFailures(t *testing.T) {
	dir := chartDir(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no word on ingest's ports", nil, "networkPolicy.extraIngress"},
		{"example ingest ports cut off", []string{"--set", "networkPolicy.noOtherIngress=true",
			"--set-json", `example.ingest.ports=[{"name":"otlp","containerPort":4317}]`}, "example.ingest.ports"},
		{"misspelt selector", []string{"--set", "networkPolicy.noOtherIngress=true", "--set", "networkPolicy.metrics.namespaceSelector.matchLabel.a=b"}, "matchLabel"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, dir, append([]string{"--set", "networkPolicy.enabled=true"}, c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("helm template %v: %v; want a failure naming %q", c.args, err, c.want)
			}
		})
	}
}
