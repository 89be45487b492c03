// Package funclen checks that no function is too long to read: every
// non-test function or method of every package spans at most maxLines
// lines, from its func line to its closing brace.
package funclen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxLines is the longest a function may be, counting its func line and
// its closing brace.
const maxLines = 60

// Every package's functions fit a screen.
func TestFunctionLength(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range goDirs(t, root) {
		for _, long := range longFuncs(t, filepath.Join(root, dir)) {
			t.Errorf("%s: %s is %d lines long (at most %d)", filepath.Join(dir, long.file), long.name, long.lines, maxLines)
		}
	}
}

// goDirs lists the directories under root that hold .go files, relative
// to root, skipping hidden ones and testdata.
func goDirs(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(p))
		if dir = filepath.ToSlash(dir); !seen[dir] {
			seen[dir] = true
			out = append(out, dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 10 {
		t.Fatalf("only %d directories with Go files under %s: %v", len(out), root, out)
	}
	return out
}

// long is a function over maxLines lines.
type long struct {
	file, name string
	lines      int
}

// longFuncs lists the non-test functions and methods of dir's .go files
// that are longer than maxLines.
func longFuncs(t *testing.T, dir string) []long {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	var out []long
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Type.Func).Line + 1
			if n > maxLines {
				out = append(out, long{file: name, name: funcName(fn), lines: n})
			}
		}
	}
	return out
}

// funcName is "F" for a function and "T.M" for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr: // generic receiver T[P]
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
