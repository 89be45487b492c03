package client

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJoinErrorsOneLine(t *testing.T) {
	a, b := errors.New("a: one"), errors.New("b: two")
	err := JoinErrors(nil, a, nil, b)
	if got := err.Error(); got != "a: one; b: two" {
		t.Errorf("text %q, want one line", got)
	}
	if !errors.Is(err, a) || !errors.Is(err, b) {
		t.Error("a joined error lost one of its errors")
	}
	if JoinErrors(nil, nil) != nil || JoinErrors(nil, a) != a {
		t.Error("JoinErrors of none or one error is not that error")
	}
}

// Error texts are one line (issue 46): errors.Join separates its texts
// with newlines, so neither the runtime nor the tools call it (the
// runtime calls JoinErrors). zktest's errors end in a test's failure
// message, where lines are welcome.
func TestNoMultiLineJoin(t *testing.T) {
	for _, dir := range []string{"../..", ".", "../../../internal", "../../../spec", "../../../cmd"} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			if dir == "../.." && strings.Count(filepath.ToSlash(strings.TrimPrefix(p, "../../")), "/") > 0 {
				return nil // runtime's own files only; its sub-packages are listed
			}
			checkNoJoin(t, p)
			return nil
		})
	}
}

func checkNoJoin(t *testing.T, file string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, isIdent := sel.X.(*ast.Ident); isIdent && x.Name == "errors" && sel.Sel.Name == "Join" {
			t.Errorf("%s: errors.Join makes a multi-line error text; use client.JoinErrors (or a one-line join)", fset.Position(sel.Pos()))
		}
		return true
	})
}
