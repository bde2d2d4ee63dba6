package chart

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/siglake/siglake/sidecar/config"
)

// schemaNode is the part of a values.schema.json node the bounds test reads.
type schemaNode struct {
	Type       any                    `json:"type"`
	Minimum    *float64               `json:"minimum"`
	Maximum    *float64               `json:"maximum"`
	Enum       []any                  `json:"enum"`
	Properties map[string]*schemaNode `json:"properties"`
}

// schemaLeaves maps each value path of the schema to its node.
func schemaLeaves(t *testing.T) map[string]*schemaNode {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var root schemaNode
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	out := map[string]*schemaNode{}
	var walk func(prefix string, n *schemaNode)
	walk = func(prefix string, n *schemaNode) {
		for k, c := range n.Properties {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = c
			walk(p, c)
		}
	}
	walk("", &root)
	return out
}

// boundNotTheBinary are chart values whose schema bound is not the binary's, each with the reason.
// For these the test checks only that the schema's boundary values are accepted by the binary.
var boundNotTheBinary = map[string]string{
	"http.port":   "renders into the address SIGLAKE_HTTP_ADDR, which the binary takes as any host:port (:0 picks a free port); 1-65535 is Kubernetes' containerPort range",
	"gossip.port": "renders into the address SIGLAKE_GOSSIP_BIND, which the binary takes as any host:port; 1-65535 is Kubernetes' containerPort range",
}

// verdictCompanions are the values a value needs beside it to render at all: the WAL buffer beyond
// loopback needs credentials (TestWALBufferAuthRenderFailures), so its switch is probed on loopback.
var verdictCompanions = map[string][]string{
	"compactor.walBuffer.enabled": {"--set", "compactor.walBuffer.bind=127.0.0.1"},
}

// binaryVerdict renders the chart in dir with value path=v and runs the sidecar's environment
// through the binary: its option parser (config.Load), then the planner's validation
// (config.PlanConfig), so a value the parser passes but the planner refuses (max fan-in 1)
// counts as refused. A render failure is returned as renderErr.
func binaryVerdict(t *testing.T, dir, path, v string) (renderErr, binaryErr error) {
	t.Helper()
	args := append([]string{"--set-json", path + "=" + v}, verdictCompanions[path]...)
	objs, err := render(t, dir, args...)
	if err != nil {
		return err, nil
	}
	env := resolveEnv(t, sidecarContainer(t, decodeAll(t, objs)))
	cfg, err := loadEnv(t, env)
	if err != nil {
		return nil, err
	}
	_, err = config.PlanConfig(cfg)
	return nil, err
}

// TestSchemaBoundsMatchBinary: for every chart value that renders an option of the binary (an
// Option's Chart field), each bound of values.schema.json (minimum, maximum, enum) is the binary's
// own: the chart accepts the boundary value and the binary runs with it, the chart refuses the
// value one past it, and so would the binary (rendered from a copy of the chart without the
// schema). Every integer value that renders an option has a minimum.
func TestSchemaBoundsMatchBinary(t *testing.T) {
	dir := chartDir(t)
	noSchema := filepath.Join(t.TempDir(), chartName)
	copyTree(t, dir, noSchema)
	if err := os.Remove(filepath.Join(noSchema, "values.schema.json")); err != nil {
		t.Fatal(err)
	}
	nodes := schemaLeaves(t)
	options := map[string][]string{} // chart value -> the options it renders
	for _, o := range config.Options() {
		if o.Chart != "" {
			options[o.Chart] = append(options[o.Chart], o.Env)
		}
	}
	var paths []string
	for p := range options {
		paths = append(paths, p)
	}
	sort.Strings(paths)

	checked := 0
	for _, path := range paths {
		n := nodes[path]
		if n == nil {
			t.Errorf("%s (option %v) has no node in values.schema.json", path, options[path])
			continue
		}
		if n.Type == "integer" && n.Minimum == nil {
			t.Errorf("%s (option %v) is an integer without a minimum in values.schema.json", path, options[path])
		}
		type probe struct {
			inside, outside string // the boundary value and the one past it, as JSON
			bound           string
		}
		var probes []probe
		if n.Minimum != nil {
			m := int64(*n.Minimum)
			probes = append(probes, probe{strconv.FormatInt(m, 10), strconv.FormatInt(m-1, 10), fmt.Sprintf("minimum %d", m)})
		}
		if n.Maximum != nil {
			m := int64(*n.Maximum)
			probes = append(probes, probe{strconv.FormatInt(m, 10), strconv.FormatInt(m+1, 10), fmt.Sprintf("maximum %d", m)})
		}
		if n.Enum != nil {
			for _, e := range n.Enum {
				js, _ := json.Marshal(e)
				probes = append(probes, probe{inside: string(js), bound: "enum member"})
			}
			probes = append(probes, probe{outside: `"not-a-member"`, bound: "enum"})
		}
		for _, p := range probes {
			checked++
			if p.inside != "" {
				rerr, berr := binaryVerdict(t, dir, path, p.inside)
				switch {
				case rerr != nil:
					t.Errorf("%s=%s (schema %s): the chart refuses it: %v", path, p.inside, p.bound, rerr)
				case berr != nil:
					t.Errorf("%s=%s (schema %s): the chart accepts it, the binary does not: %v", path, p.inside, p.bound, berr)
				}
			}
			if p.outside == "" {
				continue
			}
			if rerr, _ := binaryVerdict(t, dir, path, p.outside); rerr == nil {
				t.Errorf("%s=%s (past the schema's %s): the chart renders it", path, p.outside, p.bound)
			}
			if why := boundNotTheBinary[path]; why != "" {
				t.Logf("%s=%s: not checked against the binary: %s", path, p.outside, why)
				continue
			}
			rerr, berr := binaryVerdict(t, noSchema, path, p.outside)
			switch {
			case rerr != nil:
				t.Errorf("%s=%s: the chart without its schema does not render: %v", path, p.outside, rerr)
			case berr == nil:
				t.Errorf("%s=%s: the schema's %s refuses it, but the binary accepts it (%v): the schema is stricter than the binary",
					path, p.outside, p.bound, options[path])
			}
		}
	}
	for path := range boundNotTheBinary {
		if _, ok := options[path]; !ok {
			t.Errorf("boundNotTheBinary lists %s, which renders no option", path)
		}
	}
	if checked == 0 {
		t.Fatal("no schema bound of an option value was checked")
	}
	t.Logf("checked %d schema bounds over the %d chart values that render options", checked, len(paths))
}

// TestBinaryBoundsNeedTheSchema: values the binary refuses, which the schema must refuse too (the
// cases of TestSchemaBoundsMatchBinary the other way round, named for the failure they prevent).
func TestBinaryBoundsNeedTheSchema(t *testing.T) {
	dir := chartDir(t)
	for _, c := range []struct{ path, value string }{
		{"compactor.maxFanIn", "1"}, // the parser takes it, the planner refuses it (a bin of one file)
		{"compactor.maxOverlapDepth", "0"},
		{"snapshotExpire.retain", "0"},
	} {
		if rerr, _ := binaryVerdict(t, dir, c.path, c.value); rerr == nil {
			t.Errorf("%s=%s renders, but the binary refuses it at start", c.path, c.value)
		} else if !strings.Contains(rerr.Error(), strings.Split(c.path, ".")[1]) {
			t.Errorf("%s=%s: the failure does not name the value:\n%v", c.path, c.value, rerr)
		}
	}
}
