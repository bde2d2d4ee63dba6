package tableprops

import (
	"cmp"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// exempt are the siglake.* strings of Go files that are not catalog keys, each named exactly: a
// constant's name, or the literal itself when it is not a constant's value. They are keys of other
// formats, each with its own spec: the WAL header (docs/wal-format.md), Parquet footers and search
// metadata (docs/file-format.md), the WAL buffer's answer metadata (docs/wal-buffer.md) and Puffin
// blob properties. The register's own table (register) is the one file where catalog keys are
// spelled. Test files and testdata are not checked.
var exempt = map[string][]string{
	"localwal/header.go":            {"KeyVersion", "KeyTable", "KeyStream", "KeyIncarnation", "KeySeq", "KeyCreated"},
	"localwal/walwriter/writer.go":  {"siglake."}, // the header keys' prefix, checked on write
	"merge/index/doc.go":            {"KeyGroups", "KeyTimeBuckets", "KeyRowGroups", "KeyRowGroupsV1", "KeyFileTrigrams", "KeyInvertedPrefix"},
	"merge/chunksum/chunkcrc.go":    {"Key"},
	"merge/writer/writer.go":        {"FooterGenerationKey"},
	"sidecar/buffer/reader/wire.go": {"MetaTable", "MetaAfter", "MetaMarks", "MetaThrough", "MetaComplete", "MetaSegments", "MetaVerified"},
	"sidecar/puffinidx/rebuild.go":  {"PropDataFile", "PropColumn", "PropRows", "PropTerms"},
}

// register is the file whose constants are the catalog keys.
const register = "sidecar/lake/tableprops/keys.go"

// TestNoKeyOutsideTheRegister: no Go file (tests aside) spells a siglake.* catalog key: each uses
// the register's constant, so the register and this page are the whole list. An exemption that
// no longer matches anything fails too, so the list stays exact.
func TestNoKeyOutsideTheRegister(t *testing.T) {
	bad, unused := unregisteredKeys(t, root(t))
	for _, b := range bad {
		t.Errorf("%s: a siglake.* key outside the register %s (register it in Keys, specify it in docs/format/table-properties.md, use the constant)", b, register)
	}
	for _, u := range unused {
		t.Errorf("exempt lists %s, which no longer spells a siglake.* string: remove it", u)
	}
}

// unregisteredKeys walks the Go files (tests and testdata aside) under dir and returns each
// siglake.* string literal neither the register nor exempt allows (file: literal), and each
// exemption that matched nothing (file: name).
func unregisteredKeys(t *testing.T, dir string) (bad, unused []string) {
	t.Helper()
	used := map[string]bool{}
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
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		for _, k := range siglakeStrings(f) {
			switch {
			case rel == register && k.constant != "":
			case slices.Contains(exempt[rel], k.constant) || k.constant == "" && slices.Contains(exempt[rel], k.value):
				used[rel+": "+cmp.Or(k.constant, k.value)] = true
			default:
				bad = append(bad, rel+": "+strconv.Quote(k.value))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for file, names := range exempt {
		for _, n := range names {
			if !used[file+": "+n] {
				unused = append(unused, file+": "+n)
			}
		}
	}
	sort.Strings(bad)
	sort.Strings(unused)
	return bad, unused
}

// siglakeString is a siglake.* string literal and the constant it is the value of ("" for none).
type siglakeString struct{ value, constant string }

// siglakeStrings are f's siglake.* string literals.
func siglakeStrings(f *ast.File) []siglakeString {
	consts := map[*ast.BasicLit]string{}
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && i < len(vs.Names) {
						consts[lit] = vs.Names[i].Name
					}
				}
			}
		}
	}
	var out []siglakeString
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "siglake.") {
				out = append(out, siglakeString{value: v, constant: consts[lit]})
			}
		}
		return true
	})
	return out
}

// TestUnregisteredKeysAreFound: a siglake.* string is found in any package, in the register's own
// package outside its table, and in an exempt file under a name exempt does not list.
func TestUnregisteredKeysAreFound(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"sidecar/fold/new.go":              "package fold\n\nconst NewKey = \"siglake.new\"\n",
		"sidecar/lake/tableprops/codec.go": "package tableprops\n\nvar prefix = \"siglake.codec.\"\n",
		register:                           "package tableprops\n\nconst Fold = \"siglake.fold\"\n\nfunc f() string { return \"siglake.inline\" }\n",
		"localwal/header.go":               "package localwal\n\nconst KeyVersion, KeyOther = \"siglake.wal.version\", \"siglake.other\"\n",
		"localwal/header_test.go":          "package localwal\n\nconst inTest = \"siglake.test\"\n",
		"localwal/testdata/data.go":        "package data\n\nconst inData = \"siglake.data\"\n",
	}
	for name, src := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bad, unused := unregisteredKeys(t, dir)
	want := []string{`localwal/header.go: "siglake.other"`, `sidecar/fold/new.go: "siglake.new"`,
		`sidecar/lake/tableprops/codec.go: "siglake.codec."`, `sidecar/lake/tableprops/keys.go: "siglake.inline"`}
	if !slices.Equal(bad, want) {
		t.Errorf("found %q, want %q", bad, want)
	}
	if slices.Contains(unused, "localwal/header.go: KeyVersion") || !slices.Contains(unused, "merge/writer/writer.go: FooterGenerationKey") {
		t.Errorf("unused exemptions %q: want every one but localwal/header.go's KeyVersion", unused)
	}
}
