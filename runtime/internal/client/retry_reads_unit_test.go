package client

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// writeCalls are the methods that write to ZooKeeper, of go-zookeeper's
// connection and of this layer.
var writeCalls = map[string]bool{
	"Create": true, "CreateContainer": true, "CreateProtectedEphemeralSequential": true, "CreateTTL": true,
	"CreateListed": true, "CreateProtected": true, "CreateByGUID": true, "CreateIfAbsent": true,
	"CreatePersistent": true, "Set": true, "SetVersion": true, "Multi": true, "ConnMulti": true,
	"MultiRetried": true, "Delete": true, "DeleteOwned": true, "DeleteNoted": true,
	"DeleteRetried": true, "DeleteAll": true, "EnsurePath": true, "EnsureContainer": true,
	"SetACL": true, "RetryUncertain": true,
}

// retrySafeWrites are the functions of this layer that send a write again
// after a lost reply, each stating once why it is safe for its kind of
// call (retry_writes.go): only they may write inside Retry.
var retrySafeWrites = map[string]bool{
	"CreateIfAbsent": true, "SetVersion": true, "DeleteAll": true, "DeleteNoted": true,
	"DeleteRetried": true, "MultiRetried": true, "CreateContainer": true,
}

// TestRetryWrapsOnlyReads holds Retry and RetryAlive to their contract:
// the function they send again after a connection loss only reads, in the
// recipes (package runtime) and in this layer, except in the retry-safe
// writes above. A write sent again blindly may apply twice.
func TestRetryWrapsOnlyReads(t *testing.T) {
	for _, dir := range []string{".", "../.."} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			checkRetriedReads(t, name)
		}
	}
}

// checkRetriedReads reports each write called in a function literal passed
// to Retry or RetryAlive in the file name.
func checkRetriedReads(t *testing.T, name string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil || (filepath.Dir(name) == "." && retrySafeWrites[fd.Name.Name]) {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || !isRetryCall(call) {
				return true
			}
			for _, arg := range call.Args {
				if lit, ok := arg.(*ast.FuncLit); ok {
					for _, w := range writesIn(lit) {
						t.Errorf("%s: %s sends %s again in Retry: use a retry-safe write (retry_writes.go) or RetryUncertain",
							fset.Position(w.Pos()), fd.Name.Name, w.Sel.Name)
					}
				}
			}
			return true
		})
	}
}

// isRetryCall reports whether call is x.Retry(...) or x.RetryAlive(...).
func isRetryCall(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Retry" || sel.Sel.Name == "RetryAlive")
}

// writesIn lists the write calls in lit.
func writesIn(lit *ast.FuncLit) (ws []*ast.SelectorExpr) {
	ast.Inspect(lit.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && writeCalls[sel.Sel.Name] {
				ws = append(ws, sel)
			}
		}
		return true
	})
	return ws
}
