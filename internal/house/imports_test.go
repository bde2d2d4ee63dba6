package house

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/siglake/siglake/"

// protocolPackages return outcomes and leave metrics and logs to the observers in the loops
// (DESIGN.md section 2), so they import neither prometheus nor zap, not even through a
// dependency. A sub-package of one of them is held to the same rule.
var protocolPackages = []string{"merge", "merge/index", "sidecar/lake", "sidecar/plan", "sidecar/plan/level", "localwal", "sidecar/claim", "sidecar/rows", "sidecar/commit", "sidecar/peermsg", "sidecar/peermsg/jsonmsg", "sidecar/peerhttp", "sidecar/work"}

// forbidden are import path prefixes of the metrics and logging libraries.
var forbidden = []string{"github.com/prometheus/", "go.uber.org/zap"}

type listed struct {
	ImportPath string
	Deps       []string
}

// list runs `go list -json` over patterns and returns each package with its transitive
// dependencies (of its non-test files: a test may use anything).
func list(t *testing.T, patterns ...string) []listed {
	t.Helper()
	args := append([]string{"list", "-json"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestProtocolPackagesImportNeitherPrometheusNorZap(t *testing.T) {
	var patterns []string
	for _, p := range protocolPackages {
		patterns = append(patterns, "./"+p+"/...")
	}
	pkgs := list(t, patterns...)
	if len(pkgs) < len(protocolPackages) {
		t.Fatalf("go list found %d packages for %d protocol packages", len(pkgs), len(protocolPackages))
	}
	for _, p := range pkgs {
		var bad []string
		for _, d := range p.Deps {
			for _, f := range forbidden {
				if strings.HasPrefix(d, f) {
					bad = append(bad, d)
				}
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s imports %s (directly or through a dependency): protocol code returns outcomes; "+
				"an observer in sidecar/drain, sidecar/maintain, sidecar/rewrite or sidecar/instrument records them",
				strings.TrimPrefix(p.ImportPath, module), strings.Join(bad, ", "))
		}
	}
}
