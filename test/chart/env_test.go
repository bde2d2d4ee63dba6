package chart

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/siglake/siglake/sidecar/config"
)

// auxEnv are the variables the chart renders that are not options of `siglake compactor`, each
// with the reason it is there. Every other rendered name must be an option the binary accepts.
var auxEnv = map[string]string{
	"GOMEMLIMIT":            "Go runtime soft memory limit: goMemLimitRatio of the container's memory limit",
	"AWS_ACCESS_KEY_ID":     "S3 credentials from warehouse.s3.existingSecret (the AWS default chain reads them)",
	"AWS_SECRET_ACCESS_KEY": "S3 credentials from warehouse.s3.existingSecret",
	"POD_IP":                "downward API input of SIGLAKE_GOSSIP_ADVERTISE, and without gossip the default of --peer-advertise",
}

// secrets are the Secrets the ci values files name, with what a cluster would hold in them.
var secrets = map[string]map[string]string{
	"siglake-catalog": {"dsn": "postgres://siglake:s3cret@postgres.db.svc:5432/siglake?sslmode=require", "uri": "postgres://siglake@postgres.db.svc/siglake"},
	"siglake-s3":      {"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE", "AWS_SECRET_ACCESS_KEY": "example-secret"},
}

const (
	fakePodIP   = "10.1.2.3"
	fakePodName = releaseName + "-siglake-compactor-0"
)

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// resolveEnv computes the environment the kubelet would give the container: literal values with
// $(VAR) references to earlier variables expanded, downward API fields, Secret keys.
func resolveEnv(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		var v string
		switch {
		case e.ValueFrom == nil:
			v = envRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
				name := envRef.FindStringSubmatch(ref)[1]
				if x, ok := env[name]; ok {
					return x
				}
				return ref // the kubelet leaves unknown references as they are
			})
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "metadata.name":
				v = fakePodName
			case "status.podIP":
				v = fakePodIP
			default:
				t.Fatalf("env %s: unexpected fieldRef %s", e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			rf := e.ValueFrom.ResourceFieldRef
			q, ok := c.Resources.Limits[corev1.ResourceName(strings.TrimPrefix(rf.Resource, "limits."))]
			if !ok {
				t.Fatalf("env %s: %s is not set on the container", e.Name, rf.Resource)
			}
			v = strconv.FormatInt(q.Value(), 10) // divisor 1: bytes
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			val, ok := secrets[ref.Name][ref.Key]
			if !ok {
				t.Fatalf("env %s: Secret %s key %s is not one the test knows", e.Name, ref.Name, ref.Key)
			}
			v = val
		default:
			t.Fatalf("env %s: unexpected valueFrom %+v", e.Name, e.ValueFrom)
		}
		env[e.Name] = v
	}
	return env
}

// loadEnv runs the binary's option parser over exactly env, the way `siglake compactor` reads its
// process environment (os.LookupEnv: a variable set to "" counts as set).
func loadEnv(t *testing.T, env map[string]string) (config.Config, error) {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "SIGLAKE_") {
			t.Setenv(name, "") // restores the old value after the test
			os.Unsetenv(name)
		}
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	return config.Load(nil, nil)
}

func sidecarContainer(t *testing.T, r rendered) *corev1.Container {
	t.Helper()
	if len(r.statefulSets) != 1 {
		t.Fatalf("want one StatefulSet, got %d", len(r.statefulSets))
	}
	c := container(r.statefulSets[0].Spec.Template.Spec, "siglake-compactor")
	if c == nil {
		t.Fatal("no siglake-compactor container")
	}
	return c
}

// TestRenderedEnvIsAccepted: every variable the chart renders is an option of the binary (or a
// listed auxiliary one), the binary's parser accepts the rendered values, and they mean what the
// values file says.
func TestRenderedEnvIsAccepted(t *testing.T) {
	accepted := map[string]bool{}
	for _, n := range config.EnvNames() {
		accepted[n] = true
	}
	mb := int64(1 << 20)
	checks := map[string]func(t *testing.T, c config.Config, env map[string]string){
		"default-values.yaml": func(t *testing.T, c config.Config, env map[string]string) {
			eq(t, "role", c.Role, config.RoleAll)
			eq(t, "commit batch bytes", c.CommitBatchTargetBytes, 32*mb)
			eq(t, "commit batch age", c.CommitBatchMaxAge, 10*time.Second)
			eq(t, "group commit", c.GroupCommit, true)
			eq(t, "group commit interval", c.GroupCommitInterval, time.Second)
			eq(t, "group commit fallback", c.GroupCommitFallbackAfter, 30*time.Second)
			eq(t, "manifest merge min count", c.ManifestMergeMinCount, 100)
			eq(t, "mark prune after", c.MarkPruneAfter, 7*24*time.Hour)
			eq(t, "snapshot expiry", c.SnapshotExpireInterval, 60*time.Second)
			eq(t, "snapshots retained", c.SnapshotRetain, 100)
			eq(t, "inverted index", c.InvertedIndex, true)
			eq(t, "index rebuild", c.IndexRebuild, false)
			eq(t, "delete tasks (default on, nothing rendered)", c.DeleteTasks, true)
			eq(t, "http", c.HTTPAddr, "0.0.0.0:9464")
			eq(t, "gossip bind", c.GossipBind, "0.0.0.0:7946")
			eq(t, "gossip advertise", c.GossipAdvertise, fakePodIP+":7946")
			eq(t, "gossip join", c.GossipJoin, []string{releaseName + "-siglake-compactor-headless." + releaseNS + ".svc:7946"})
			eq(t, "node name", c.NodeName, fakePodName)
			eq(t, "wal dir", c.WALDir, "/var/lib/siglake/wal")
			eq(t, "catalog", c.Catalog, "sqlite:/var/lib/siglake/data/catalog.db")
			eq(t, "GOMEMLIMIT (0.9 of 1Gi)", env["GOMEMLIMIT"], "966367641")
		},
		"drain-only-values.yaml": func(t *testing.T, c config.Config, env map[string]string) {
			eq(t, "role", c.Role, config.RoleDrain)
			eq(t, "catalog (shared: 5 replicas)", c.Catalog, "postgres://siglake@postgres.db.svc:5432/siglake?sslmode=require")
			eq(t, "warehouse (shared: 5 replicas)", c.Warehouse, "s3://lake/siglake")
			eq(t, "commit batch bytes", c.CommitBatchTargetBytes, int64(0))
			eq(t, "commit batch age", c.CommitBatchMaxAge, 5*time.Second)
		},
		"all-off-values.yaml": func(t *testing.T, c config.Config, env map[string]string) {
			eq(t, "inverted index", c.InvertedIndex, false)
			eq(t, "delete tasks", c.DeleteTasks, false)
			eq(t, "SIGLAKE_DELETE_TASKS", env["SIGLAKE_DELETE_TASKS"], "0")
			eq(t, "recluster interval", c.ReclusterInterval, time.Duration(0))
			eq(t, "leveled", c.Leveled, false)
			eq(t, "backpressure compact every", c.BackpressureCompactEvery, 0)
			eq(t, "level max gen", c.LevelMaxGen, 0)
			eq(t, "snapshot expiry", c.SnapshotExpireInterval, time.Duration(0))
			eq(t, "group commit", c.GroupCommit, false)
			eq(t, "manifest merge", c.ManifestMergeMinCount, 0)
			eq(t, "mark prune after", c.MarkPruneAfter, time.Duration(0))
			eq(t, "gossip bind", c.GossipBind, "")
			eq(t, "gossip join", len(c.GossipJoin), 0)
			_, hasLimit := env["GOMEMLIMIT"]
			eq(t, "GOMEMLIMIT without a memory limit", hasLimit, false)
		},
		"networkpolicy-values.yaml": func(t *testing.T, c config.Config, env map[string]string) {
			// The policy restricts who reaches the listeners, not where they bind.
			eq(t, "http", c.HTTPAddr, "0.0.0.0:9464")
			eq(t, "gossip bind", c.GossipBind, "0.0.0.0:7946")
		},
		"s3-postgres-values.yaml": func(t *testing.T, c config.Config, env map[string]string) {
			eq(t, "catalog (from the Secret)", c.Catalog, secrets["siglake-catalog"]["dsn"])
			eq(t, "namespace", c.Namespace, "logs")
			eq(t, "index rebuild", c.IndexRebuild, true)
			eq(t, "warehouse", c.Warehouse, "s3://lake/siglake")
			eq(t, "s3 endpoint", c.S3Endpoint, "https://s3.storage.example.internal")
			eq(t, "s3 region", c.S3Region, "eu-west-1")
			eq(t, "s3 path style", c.S3PathStyle, true)
			eq(t, "AWS_ACCESS_KEY_ID", env["AWS_ACCESS_KEY_ID"], "AKIAEXAMPLE")
			eq(t, "AWS_SECRET_ACCESS_KEY", env["AWS_SECRET_ACCESS_KEY"], "example-secret")
			eq(t, "commit batch bytes", c.CommitBatchTargetBytes, 64*mb)
			eq(t, "commit batch age", c.CommitBatchMaxAge, 15*time.Second)
			eq(t, "snapshot expiry", c.SnapshotExpireInterval, 120*time.Second)
			eq(t, "snapshots retained", c.SnapshotRetain, 50)
			eq(t, "log level (extraEnv)", c.LogLevel, "warn")
			eq(t, "GOMEMLIMIT (0.9 of 2Gi)", env["GOMEMLIMIT"], "1932735283")
		},
	}
	dir := chartDir(t)
	for _, f := range ciValues(t) {
		name := filepath.Base(f)
		t.Run(name, func(t *testing.T) {
			c := sidecarContainer(t, decodeAll(t, mustRender(t, dir, "-f", f)))
			env := resolveEnv(t, c)
			for n := range env {
				if strings.HasPrefix(n, "SIGLAKE_") && !accepted[n] {
					t.Errorf("the chart renders %s, which `siglake compactor` does not accept", n)
				}
				if !strings.HasPrefix(n, "SIGLAKE_") && auxEnv[n] == "" {
					t.Errorf("the chart renders %s, neither an option nor a listed auxiliary variable", n)
				}
			}
			cfg, err := loadEnv(t, env)
			if err != nil {
				t.Fatalf("the binary's option parser rejects the rendered environment: %v", err)
			}
			check := checks[name]
			if check == nil {
				t.Fatalf("no expectations for %s: add them to this test", name)
			}
			check(t, cfg, env)
		})
	}
}

// TestChartDefaultsMatchBinary: with default values the sidecar runs with the binary's own
// defaults, except for the settings the chart sets on purpose for a pod.
func TestChartDefaultsMatchBinary(t *testing.T) {
	c := sidecarContainer(t, decodeAll(t, mustRender(t, chartDir(t))))
	got, err := loadEnv(t, resolveEnv(t, c))
	if err != nil {
		t.Fatal(err)
	}
	want, err := loadEnv(t, map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	// On purpose: listen on the pod IP, join the peers, the pod's name, the data volume.
	want.HTTPAddr, want.GossipBind, want.GossipAdvertise, want.GossipJoin = got.HTTPAddr, got.GossipBind, got.GossipAdvertise, got.GossipJoin
	want.NodeName, want.Catalog, want.Warehouse = got.NodeName, got.Catalog, got.Warehouse
	// The gossip key every install needs (from testdata/gossip-key-values.yaml) and the release's label.
	want.GossipKeyFile, want.GossipClusterLabel = got.GossipKeyFile, got.GossipClusterLabel
	if !reflect.DeepEqual(got, want) {
		gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
		for i := 0; i < gv.NumField(); i++ {
			if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
				t.Errorf("chart default %s = %v, binary default %v", gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
			}
		}
	}
}

// TestOptionsHaveChartValues: every option whose Chart field names a Helm value has that value
// in values.yaml, and the chart renders its variable in some ci render.
func TestOptionsHaveChartValues(t *testing.T) {
	values := loadValues(t)
	rendered := map[string]bool{}
	dir := chartDir(t)
	for _, f := range ciValues(t) {
		c := sidecarContainer(t, decodeAll(t, mustRender(t, dir, "-f", f)))
		for _, n := range envNames(c) {
			rendered[n] = true
		}
	}
	for _, o := range config.Options() {
		if o.Chart == "" {
			continue
		}
		if _, ok := lookupPath(values, o.Chart); !ok {
			t.Errorf("option %s names Helm value %s, which values.yaml does not have", o.Env, o.Chart)
		}
		if strings.HasSuffix(o.Chart, "existingSecret") {
			continue // credentials render as AWS_* from the Secret, never as literal values
		}
		if !rendered[o.Env] {
			t.Errorf("option %s (value %s) is rendered by no ci values file", o.Env, o.Chart)
		}
	}
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func loadValues(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("values.yaml: %v", err)
	}
	return v
}

// lookupPath finds a dotted value path (a.b.c) in decoded values.
func lookupPath(v map[string]any, path string) (any, bool) {
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}
