package runtime_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/zkgen/zkgen/runtime"
)

// sessionMethods are the exported methods of runtime.Session, what a user
// of a session needs (Session's doc lists them): its life, a few plain
// calls, the connection. What the recipes register on a session and the
// operations they are built on are the client layer's functions.
var sessionMethods = []string{"Children", "Close", "Conn", "CreatePersistent", "Delete", "Done", "Err", "Exists", "ID"}

// TestSessionMethodSet fails if runtime.Session gains an exported method
// that is not on the list, plumbing the recipes use (a stray Untrack
// panics a wait group, a stray Track makes Supervise wait for ever), or
// one the doc does not name.
func TestSessionMethodSet(t *testing.T) {
	typ := reflect.TypeFor[*runtime.Session]()
	var got []string
	for i := range typ.NumMethod() {
		got = append(got, typ.Method(i).Name)
	}
	if !slices.Equal(got, sessionMethods) {
		t.Errorf("runtime.Session's methods are %v, want %v", got, sessionMethods)
	}
	doc := sessionDoc(t)
	for _, m := range sessionMethods {
		if !strings.Contains(doc, "[Session."+m+"]") {
			t.Errorf("Session's doc does not name [Session.%s]", m)
		}
	}
}

// sessionDoc returns the doc comment of Session in session.go.
func sessionDoc(t *testing.T) string {
	f, err := parser.ParseFile(token.NewFileSet(), "session.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
			if s := g.Specs[0].(*ast.TypeSpec); s.Name.Name == "Session" {
				return g.Doc.Text()
			}
		}
	}
	t.Fatal("session.go declares no Session")
	return ""
}
