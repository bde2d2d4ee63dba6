package fold

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"

	"github.com/siglake/siglake/sidecar/walgen"
)

// TestBuiltinIsWalgens: the built-in specification names walgen's rollup table.
func TestBuiltinIsWalgens(t *testing.T) {
	if BuiltinTable != walgen.RollupTable {
		t.Fatalf("BuiltinTable %q, walgen writes %q", BuiltinTable, walgen.RollupTable)
	}
}

// TestNoLoadGeneratorDependency: production folding (and what it imports) does not depend on
// the load generator.
func TestNoLoadGeneratorDependency(t *testing.T) {
	const module = "github.com/siglake/siglake/"
	seen := map[string]bool{}
	var walk func(pkg string, path []string)
	walk = func(pkg string, path []string) {
		if seen[pkg] {
			return
		}
		seen[pkg] = true
		if pkg == module+"sidecar/walgen" {
			t.Fatalf("sidecar/fold imports the load generator: %s", strings.Join(append(path, pkg), " -> "))
		}
		p, err := build.ImportDir(filepath.Join("..", "..", strings.TrimPrefix(pkg, module)), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				walk(imp, append(path, pkg))
			}
		}
	}
	walk(module+"sidecar/fold", nil)
}
