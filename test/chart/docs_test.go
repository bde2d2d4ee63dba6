package chart

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// documentedValues reads the value paths in the first column of the chart README's Values table.
func documentedValues(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(chartDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile("^\\| `([A-Za-z0-9_.]+)` \\|")
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Values"
			continue
		}
		if m := row.FindStringSubmatch(line); in && m != nil {
			out = append(out, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the chart README has no Values table")
	}
	return out
}

// leaves lists the value paths of values.yaml down to scalars, lists and empty maps.
func leaves(prefix string, v any, out *[]string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		*out = append(*out, prefix)
		return
	}
	for k, x := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		leaves(p, x, out)
	}
}

// TestReadmeDocumentsValues: every value the README documents exists, and every value in
// values.yaml is documented (itself, or a map above it documented as a whole).
func TestReadmeDocumentsValues(t *testing.T) {
	values := loadValues(t)
	documented := documentedValues(t)
	doc := map[string]bool{}
	for _, d := range documented {
		if doc[d] {
			t.Errorf("README documents %s twice", d)
		}
		doc[d] = true
		if _, ok := lookupPath(values, d); !ok {
			t.Errorf("README documents %s, which values.yaml does not have", d)
		}
	}
	var all []string
	leaves("", values, &all)
	sort.Strings(all)
	for _, l := range all {
		covered := false
		for p := l; p != ""; {
			if doc[p] {
				covered = true
				break
			}
			i := strings.LastIndex(p, ".")
			if i < 0 {
				break
			}
			p = p[:i]
		}
		if !covered {
			t.Errorf("values.yaml has %s, which the README's Values table does not document", l)
		}
	}
}

var metricName = regexp.MustCompile(`\bsiglake_[a-z0-9_]+`)

// pendingMetrics are metrics the spec names that no loop registers yet, which the dashboard and
// alerts may reference already (docs/operations.md says so). None at the moment.
var pendingMetrics = map[string]bool{}

// documentedMetrics reads the metric names in docs/metrics.md's tables.
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(siglake_[a-z0-9_]+)` \\|").FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = true
	}
	if len(out) == 0 {
		t.Fatal("docs/metrics.md lists no siglake_ metrics")
	}
	return out
}

func checkMetricRefs(t *testing.T, what, text string, documented map[string]bool) {
	t.Helper()
	seen := map[string]bool{}
	for _, n := range metricName.FindAllString(text, -1) {
		base := n
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && documented[b] {
				base = b
			}
		}
		if seen[base] {
			continue
		}
		seen[base] = true
		switch {
		case documented[base]:
		case pendingMetrics[base]:
			t.Logf("%s uses %s, not registered yet (pending in the maintenance loop)", what, base)
		default:
			t.Errorf("%s uses %s, which docs/metrics.md does not list", what, base)
		}
	}
	if len(seen) == 0 {
		t.Errorf("%s uses no siglake_ metric", what)
	}
}

// TestDashboardAndAlertsUseDocumentedMetrics: the Grafana dashboard and the PrometheusRule only
// query metrics docs/metrics.md lists (or the named pending ones), and the ConfigMap ships the
// dashboard file unchanged.
func TestDashboardAndAlertsUseDocumentedMetrics(t *testing.T) {
	documented := documentedMetrics(t)
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "dashboards", "siglake-compactor.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string `json:"uid"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			exprs = append(exprs, q.Expr)
		}
	}
	checkMetricRefs(t, "the dashboard", strings.Join(exprs, "\n"), documented)

	r := decodeAll(t, mustRender(t, chartDir(t), "-f", filepath.Join(chartDir(t), "ci", "s3-postgres-values.yaml")))
	if len(r.rules) != 1 || len(r.configMaps) != 1 {
		t.Fatalf("s3-postgres values: want one PrometheusRule and one dashboard ConfigMap, got %d and %d", len(r.rules), len(r.configMaps))
	}
	var ruleText []string
	alerts := map[string]bool{}
	for _, g := range r.rules[0].Spec.Groups {
		for _, rule := range g.Rules {
			ruleText = append(ruleText, rule.Expr.String())
			alerts[rule.Alert] = true
		}
	}
	checkMetricRefs(t, "the PrometheusRule", strings.Join(ruleText, "\n"), documented)
	ops, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for a := range alerts {
		if !strings.Contains(string(ops), a) {
			t.Errorf("alert %s is not described in docs/operations.md", a)
		}
	}
	if got := r.configMaps[0].Data["siglake-compactor.json"]; strings.TrimSpace(got) != strings.TrimSpace(string(raw)) {
		t.Error("the dashboard ConfigMap does not hold dashboards/siglake-compactor.json unchanged")
	}
}

// TestReadmeTemplatesExist: every named template the README tells ingest charts to include is
// defined by the chart.
func TestReadmeTemplatesExist(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(chartDir(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	helpers, err := os.ReadFile(filepath.Join(chartDir(t), "templates", "_helpers.tpl"))
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`define "([^"]+)"`).FindAllStringSubmatch(string(helpers), -1) {
		defined[m[1]] = true
	}
	named := regexp.MustCompile("(?:include \"|`)(siglake-compactor\\.[A-Za-z]+)").FindAllStringSubmatch(string(readme), -1)
	if len(named) == 0 {
		t.Fatal("the README names no template")
	}
	for _, m := range named {
		if !defined[m[1]] {
			t.Errorf("the README names template %s, which _helpers.tpl does not define", m[1])
		}
	}
}
