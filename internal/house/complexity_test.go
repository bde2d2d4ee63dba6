package house

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxComplexity is the house's bound on a function's cyclomatic complexity, as gocyclo counts it
// (`gocyclo -over 25 -ignore '_test|node_modules' .`): a function past it does too many things
// for one reader to hold, and its tests cannot reach every path.
const maxComplexity = 25

// complexity is 1 plus each branch point of fn's body, closures included: if, for, range, each
// non-default case of a switch or select, and each && and ||.
func complexity(fn *ast.FuncDecl) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// funcName is fn as gocyclo names it: Name or (Recv).Name.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	var b strings.Builder
	if star, ok := typ.(*ast.StarExpr); ok {
		b.WriteString("*")
		typ = star.X
	}
	switch g := typ.(type) { // a generic receiver T[P] or T[P, Q]
	case *ast.IndexExpr:
		typ = g.X
	case *ast.IndexListExpr:
		typ = g.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		b.WriteString(id.Name)
	}
	return "(" + b.String() + ")." + fn.Name.Name
}

// overComplex lists the functions of the module's non-test Go files (node_modules aside) above
// maxComplexity, as "path:line name complexity".
func overComplex(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == "node_modules" || path != root && strings.HasPrefix(name, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.Contains(path, "_test") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return fmt.Errorf("parse %s: %w", path, err)
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Body != nil {
				if c := complexity(fn); c > maxComplexity {
					rel, _ := filepath.Rel(root, path)
					out = append(out, fmt.Sprintf("%s:%d %s %d", rel, fset.Position(fn.Pos()).Line, funcName(fn), c))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestFunctionsStayUnderComplexityBound: no function of the module's code is above the house's
// complexity bound (DESIGN.md, the repository's working rules); split one that grows past it by
// what it decides, as config.Options is split by area.
func TestFunctionsStayUnderComplexityBound(t *testing.T) {
	if over := overComplex(t, "../.."); len(over) > 0 {
		t.Errorf("functions above cyclomatic complexity %d (split them):\n%s", maxComplexity, strings.Join(over, "\n"))
	}
}

// TestComplexityCountsAsGocyclo: the count of a known function, closures and all.
func TestComplexityCountsAsGocyclo(t *testing.T) {
	const src = `package p
func (s *T[P]) f(a, b bool, c chan int) {
	if a && b || a {                // if, &&, ||: 3
	}
	for range 3 {                   // 1
	}
	switch {                        // two cases, default free: 2
	case a:
	case b:
	default:
	}
	select {                        // one comm case, default free: 1
	case <-c:
	default:
	}
	_ = func() { for { break } }    // a closure's loop counts: 1
}`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	fn := f.Decls[0].(*ast.FuncDecl)
	if c, name := complexity(fn), funcName(fn); c != 9 || name != "(*T).f" {
		t.Fatalf("%s: complexity %d, want (*T).f 9", name, c)
	}
}
