package tableprops

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// root is the module's directory.
func root(t *testing.T) string {
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
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// docKey is a key as docs/format/table-properties.md spells it: `siglake.mark.<stream>` is the
// prefix siglake.mark., `siglake.fold` the key.
var docKey = regexp.MustCompile("`(siglake\\.[a-z0-9_.-]*[a-z0-9_-])(\\.<[^>`]+>)?`")

// TestDocMatchesRegister: every registered key or prefix is specified in
// docs/format/table-properties.md, and every key the page names is registered, as a key or as a
// prefix as the page spells it.
func TestDocMatchesRegister(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root(t), "docs", "format", "table-properties.md"))
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{} // name -> prefix
	for _, k := range Keys {
		if _, dup := registered[k.Name]; dup {
			t.Errorf("%s registered twice", k.Name)
		}
		registered[k.Name] = k.Prefix
	}
	documented := map[string]bool{}
	for _, m := range docKey.FindAllStringSubmatch(string(b), -1) {
		name, prefix := m[1], m[2] != ""
		if prefix {
			name += "."
		}
		documented[name] = true
		if p, ok := registered[name]; !ok || p != prefix {
			t.Errorf("docs/format/table-properties.md names %s (prefix %v), which tableprops.Keys does not register as such", m[0], prefix)
		}
	}
	for _, k := range Keys {
		if !documented[k.Name] {
			t.Errorf("tableprops.Keys registers %s (%s), which docs/format/table-properties.md does not specify", k.Name, k.Place)
		}
	}
}

// otherFormats hold siglake.* keys of other formats, each with its own spec: the WAL header
// (docs/wal-format.md), Parquet footers and search metadata (docs/file-format.md), the WAL
// buffer's answer metadata (docs/wal-buffer.md) and Puffin blob properties.
var otherFormats = []string{"localwal/", "merge/", "sidecar/buffer/", "sidecar/puffinidx/rebuild.go", "sidecar/lake/tableprops/"}

// TestNoKeyOutsideTheRegister: no Go file (tests aside) spells a siglake.* catalog key: each uses
// the register's constant, so the register and this page are the whole list.
func TestNoKeyOutsideTheRegister(t *testing.T) {
	dir := root(t)
	var bad []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		for _, o := range otherFormats {
			if strings.HasPrefix(rel, o) {
				return nil
			}
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "siglake.") {
					bad = append(bad, rel+": "+lit.Value)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a siglake.* key outside sidecar/lake/tableprops (register it in Keys, specify it in docs/format/table-properties.md, use the constant)", b)
	}
}
