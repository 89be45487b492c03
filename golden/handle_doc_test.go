package golden

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// linkRe matches a Go doc link to the runtime package: [runtime.Name]
// or [runtime.Type.Method].
var linkRe = regexp.MustCompile(`\[runtime\.([A-Za-z0-9_.]+)\]`)

// restatedRe matches the phrases of the runtime's contracts (what blocks,
// what ctx cancellation does, what is left behind) that generated doc
// comments copied before they linked to the runtime instead.
var restatedRe = regexp.MustCompile(`blocks until|cancellation (removes|stops|leaves)|leaves nothing|ctx cancellation\)`)

// TestHandleDocsLinkTheRuntime holds the generated code to stating each
// runtime contract once, in the runtime (issue 46, item 9): every Client
// method that returns runtime.New<T>'s handle links to [runtime.T], no
// generated comment copies a contract's wording, and every link names
// something package runtime declares.
func TestHandleDocsLinkTheRuntime(t *testing.T) {
	names := runtimeNames(t)
	files := generatedFiles(t)
	if len(files) == 0 {
		t.Fatal("no generated files found")
	}
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, cg := range f.Comments {
			text := cg.Text()
			if m := restatedRe.FindString(text); m != "" {
				t.Errorf("%s: a comment restates a runtime contract (%q): link to it instead:\n%s", name, m, text)
			}
			for _, l := range linkRe.FindAllStringSubmatch(text, -1) {
				if !names[l[1]] {
					t.Errorf("%s: [runtime.%s] names nothing in package runtime", name, l[1])
				}
			}
		}
		checkHandleLinks(t, name, f)
	}
}

// checkHandleLinks checks that each method of f returning runtime.New<T>(...)
// has a doc comment linking to [runtime.T].
func checkHandleLinks(t *testing.T, name string, f *ast.File) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Recv == nil || fd.Body == nil || len(fd.Body.List) != 1 {
			continue
		}
		ret, ok := fd.Body.List[0].(*ast.ReturnStmt)
		if !ok || len(ret.Results) != 1 {
			continue
		}
		typ := constructed(ret.Results[0])
		if typ == "" {
			continue
		}
		if !strings.Contains(fd.Doc.Text(), "[runtime."+typ+"]") {
			t.Errorf("%s: %s returns a runtime.%s and its doc does not link [runtime.%s]", name, fd.Name.Name, typ, typ)
		}
	}
}

// constructed returns T when e is a call of runtime.New<T>, else "".
func constructed(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	fun := call.Fun
	if ix, ok := fun.(*ast.IndexExpr); ok {
		fun = ix.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "runtime" || !strings.HasPrefix(sel.Sel.Name, "New") {
		return ""
	}
	return strings.TrimPrefix(sel.Sel.Name, "New")
}

// generatedFiles lists the committed generated files: the golden cases'
// and generated_example's.
func generatedFiles(t *testing.T) []string {
	var out []string
	for _, root := range []string{".", "../generated_example"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, "_zkgen.go") {
				out = append(out, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// runtimeNames returns the exported names package runtime declares, and
// its exported methods as Type.Method.
func runtimeNames(t *testing.T) map[string]bool {
	pkgs, err := parser.ParseDir(token.NewFileSet(), "../runtime", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range pkgs["runtime"].Files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
				} else if r := recvType(d.Recv.List[0].Type); r != "" {
					names[r+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	return names
}

// recvType is the name of a method's receiver type, without pointer and
// type parameters.
func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
