package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxSessionMethods is the most methods Session may have, exported or not:
// the session is lifecycle and hooks; operations are Ops's, and what a
// recipe keeps per session goes through the hooks (issue 29's bound).
const maxSessionMethods = 20

// The client layer stays a layer: Session keeps a small method set, and
// nothing here imports, or names a file of, the recipes above it.
func TestSessionStaysSmall(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var methods []string
	for _, f := range pkgs["client"].Files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if ok && fd.Recv != nil && recvName(fd.Recv.List[0].Type) == "Session" {
				methods = append(methods, fd.Name.Name)
			}
		}
	}
	if len(methods) > maxSessionMethods {
		t.Errorf("Session has %d methods (at most %d): %v", len(methods), maxSessionMethods, methods)
	}
}

func TestClientImportsNoRecipe(t *testing.T) {
	recipes := recipeFiles(t)
	fset := token.NewFileSet()
	names, _ := filepath.Glob("*.go")
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, "github.com/zkgen/zkgen/") && p != "github.com/zkgen/zkgen/runtime/internal/wire" {
				t.Errorf("%s imports %s: the client layer may import only internal/wire of zkgen", name, p)
			}
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recipes {
			if regexp.MustCompile(`(^|[^\w])` + regexp.QuoteMeta(r)).Match(src) {
				t.Errorf("%s names the recipe file %s", name, r)
			}
		}
	}
}

// recipeFiles lists package runtime's source files.
func recipeFiles(t *testing.T) []string {
	names, err := filepath.Glob(filepath.Join("..", "..", "*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("package runtime's files: %v, %v", names, err)
	}
	var out []string
	for _, n := range names {
		if !strings.HasSuffix(n, "_test.go") {
			out = append(out, filepath.Base(n))
		}
	}
	return out
}

func recvName(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
