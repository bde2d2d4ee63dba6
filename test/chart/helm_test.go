package chart

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"
)

const (
	chartName   = "siglake-compactor"
	releaseName = "lake"
	releaseNS   = "siglake-test"
)

// repoRoot is the directory holding go.mod, found from the test's working directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

func chartDir(t testing.TB) string { return filepath.Join(repoRoot(t), "charts", chartName) }

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm returns the pinned helm binary, building it with scripts/helm.sh on first use. Outside CI a
// machine that cannot build it (no Go module proxy) skips the chart tests; in CI that fails.
func helm(t testing.TB) string {
	t.Helper()
	helmOnce.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "helm.sh"), "install")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			helmErr = fmt.Errorf("scripts/helm.sh install: %v\n%s", err, stderr.String())
			return
		}
		helmPath = strings.TrimSpace(string(out))
	})
	if helmErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("helm is required in CI: %v", helmErr)
		}
		t.Skipf("helm unavailable, chart tests skipped (run scripts/helm.sh install): %v", helmErr)
	}
	return helmPath
}

// runHelm runs helm with an isolated home so no user repository or plugin config leaks in.
func runHelm(t testing.TB, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helm(t), args...)
	cmd.Env = append(os.Environ(),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// ciValues lists the chart's ci/*-values.yaml files (chart-testing's convention).
func ciValues(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir(t), "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) < 4 {
		t.Fatalf("expected at least 4 ci values files, found %d", len(files))
	}
	return files
}

// object is one rendered manifest: its raw YAML and the fields every object has.
type object struct {
	Source     string // the template it came from (helm's "# Source:" line)
	APIVersion string
	Kind       string
	Name       string
	YAML       []byte
}

func (o object) String() string { return o.Kind + "/" + o.Name + " (" + o.Source + ")" }

// render runs helm template for chart dir with the values files and extra args. This chart (or a
// copy of it) gets testdata/gossip-key-values.yaml first, as every install with gossip needs a key;
// later values files and --set override it.
func render(t testing.TB, dir string, args ...string) ([]object, error) {
	t.Helper()
	if filepath.Base(dir) == chartName {
		args = append([]string{"-f", filepath.Join(repoRoot(t), "test", "chart", "testdata", "gossip-key-values.yaml")}, args...)
	}
	out, err := runHelm(t, append([]string{"template", releaseName, dir, "--namespace", releaseNS}, args...)...)
	if err != nil {
		return nil, err
	}
	return splitManifests(out)
}

func mustRender(t testing.TB, dir string, args ...string) []object {
	t.Helper()
	objs, err := render(t, dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// splitManifests splits helm's multi-document output and reads each document's kind and name.
func splitManifests(out string) ([]object, error) {
	var objs []object
	for _, doc := range strings.Split("\n"+out, "\n---") {
		src := ""
		var body []string
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok {
				src = s
			}
			body = append(body, line)
		}
		raw := []byte(strings.Join(body, "\n"))
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("document from %s is not YAML: %v\n%s", src, err, raw)
		}
		if head.Kind == "" && head.APIVersion == "" {
			continue // comments only
		}
		objs = append(objs, object{Source: src, APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, YAML: raw})
	}
	return objs, nil
}

func TestHelmLintStrict(t *testing.T) {
	dir := chartDir(t)
	for _, f := range ciValues(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := runHelm(t, "lint", "--strict", dir, "-f", f, "--namespace", releaseNS)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// TestRenderFailures: values the chart must refuse, each with a message naming what is wrong.
func TestRenderFailures(t *testing.T) {
	dir := chartDir(t)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown role", []string{"--set", "compactor.role=compact"}, "compactor.role"},
		{"typo in a key", []string{"--set", "commitBatch.targetMB=8"}, "targetMB"},
		{"negative batch", []string{"--set", "commitBatch.targetMb=-1"}, "targetMb"},
		{"bad catalog", []string{"--set", "catalog.uri=mysql://x"}, "catalog.uri"},
		{"bad port", []string{"--set", "gossip.port=70000"}, "gossip.port"},
		{"no selector without the example", []string{"--set", "example.enabled=false"}, "gossip.service.selector"},
		{"service monitor without service", []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "gossip.service.enabled=false"}, "gossip.service.enabled"},
		{"scraped twice", []string{"--set", "metrics.podMonitor.enabled=true"}, "metrics.scrapeAnnotations and metrics.podMonitor.enabled are on together"},
		{"memory limit not a quantity", []string{"--set", "resources.limits.memory=lots"}, "resources.limits"},
		{"ratio above 1", []string{"--set-json", "goMemLimitRatio=1.2"}, "goMemLimitRatio"},
		{"unknown scheme", []string{"--set", "metrics.podMonitor.scheme=ftp"}, "scheme"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, dir, c.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded, want a failure mentioning %q", c.args, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("failure does not mention %q:\n%v", c.want, err)
			}
		})
	}
}

// copyTree copies the directory src to dst (which must not exist yet).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}
