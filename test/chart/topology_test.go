package chart

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReplicasNeedSharedLake: a table's maintenance owner is picked among the members sharing one
// catalog, so the chart refuses several pods on per-pod storage (the embedded SQLite catalog, a
// local warehouse), saying why and what to set; one pod, or several on a shared catalog and an
// s3:// warehouse, render.
func TestReplicasNeedSharedLake(t *testing.T) {
	dir := chartDir(t)
	const (
		pg = "catalog.uri=postgres://siglake@postgres.db.svc:5432/siglake"
		s3 = "warehouse.uri=s3://lake/siglake"
	)
	fails := []struct {
		name string
		args []string
		want []string
	}{
		{"sqlite, 3 replicas", []string{"--set", "example.replicas=3"}, []string{
			"example.replicas is 3", "embedded SQLite catalog", "private to each pod", "unrelated lakes",
			"postgres://", "rest+https://", "s3:// warehouse.uri", "example.replicas: 1",
		}},
		{"sqlite, s3 warehouse, 2 replicas", []string{"--set", "example.replicas=2", "--set", s3}, []string{
			"example.replicas is 2", "embedded SQLite catalog",
		}},
		{"postgres, local warehouse, 3 replicas", []string{"--set", "example.replicas=3", "--set", pg}, []string{
			"example.replicas is 3", `warehouse.uri "/var/lib/siglake/data/warehouse" is a local path`,
		}},
		{"postgres, file:// warehouse, 3 replicas", []string{"--set", "example.replicas=3", "--set", pg, "--set", "warehouse.uri=file:///lake"}, []string{
			"local path",
		}},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			_, err := render(t, dir, c.args...)
			if err == nil {
				t.Fatalf("helm template %v rendered a set of unrelated lakes; want a failure", c.args)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the failure does not say %q:\n%v", w, err)
				}
			}
		})
	}

	renders := []struct {
		name     string
		args     []string
		replicas int32
	}{
		{"defaults (sqlite, 1 replica)", nil, 1},
		{"sqlite, replicas 1", []string{"--set", "example.replicas=1"}, 1},
		{"sqlite, replicas 0", []string{"--set", "example.replicas=0"}, 0},
		{"postgres and s3, 3 replicas", []string{"--set", "example.replicas=3", "--set", pg, "--set", s3}, 3},
		{"rest and s3, 3 replicas", []string{"--set", "example.replicas=3", "--set", "catalog.uri=rest+https://catalog.example.internal", "--set", s3}, 3},
		{"catalog Secret and s3, 3 replicas", []string{"--set", "example.replicas=3", "--set", "catalog.existingSecret=siglake-catalog", "--set", s3}, 3},
	}
	for _, c := range renders {
		t.Run(c.name, func(t *testing.T) {
			r := decodeAll(t, mustRender(t, dir, c.args...))
			if len(r.statefulSets) != 1 || r.statefulSets[0].Spec.Replicas == nil {
				t.Fatalf("want one StatefulSet with replicas set, got %d", len(r.statefulSets))
			}
			if got := *r.statefulSets[0].Spec.Replicas; got != c.replicas {
				t.Errorf("replicas = %d, want %d", got, c.replicas)
			}
		})
	}

	// Every ci values file with several replicas is on a shared catalog and warehouse (it renders).
	for _, f := range ciValues(t) {
		if _, err := render(t, dir, "-f", f); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

// TestIngestChartNeedsSharedLake: an ingest chart that includes siglake-compactor.requireSharedLake
// (charts/examples/ingest does) gets the same refusal for its own replica count.
func TestIngestChartNeedsSharedLake(t *testing.T) {
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "ingest")
	copyTree(t, filepath.Join(root, "charts", "examples", "ingest"), dir)
	copyTree(t, chartDir(t), filepath.Join(dir, "charts", chartName))
	embedded := []string{"--set", "siglake-compactor.catalog.existingSecret=", "--set", "siglake-compactor.catalog.uri=sqlite:/var/lib/siglake/data/catalog.db"}
	_, err := render(t, dir, embedded...)
	if err == nil {
		t.Fatal("the ingest chart rendered 3 pods on the embedded catalog; want a failure")
	}
	for _, w := range []string{"replicas is 3", "embedded SQLite catalog", "replicas: 1"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the failure does not say %q:\n%v", w, err)
		}
	}
	if _, err := render(t, dir, append(embedded, "--set", "replicas=1")...); err != nil {
		t.Errorf("one ingest pod on the embedded catalog: %v", err)
	}
}
