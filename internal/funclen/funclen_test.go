// Package funclen holds a check that keeps functions short: every function
// and method of the listed directories' non-test Go files must fit in
// maxLines lines, counted from its func line to its closing brace.
package funclen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// maxLines is the longest a function may be.
const maxLines = 60

// dirs are the checked directories, relative to this package's directory.
var dirs = []string{
	"../../runtime",
}

func TestFunctionLength(t *testing.T) {
	var long []string
	for _, dir := range dirs {
		found, err := longFuncs(dir)
		if err != nil {
			t.Fatal(err)
		}
		long = append(long, found...)
	}
	if len(long) > 0 {
		t.Errorf("%d functions are over %d lines; split them into named steps:\n%s",
			len(long), maxLines, strings.Join(long, "\n"))
	}
}

// longFuncs lists the functions of dir's non-test Go files (not its
// subdirectories) that are over maxLines lines, as "file:line: name (n
// lines)", sorted.
func longFuncs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var out []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		path := filepath.Join(dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > maxLines {
				out = append(out, fmt.Sprintf("%s:%d: %s (%d lines)", path, start.Line, funcName(fn), n))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// funcName returns fn's name, with its receiver type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
