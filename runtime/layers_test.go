package runtime_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// The package's files by layer and recipe family. A file belongs to one;
// references run one way: a family may use the shared files and the
// families listed as below it, the catalog may use everything, and the
// shared files use no family. (The client layer below all of them is its
// own package, internal/client, which imports none of these.)
var (
	sharedFiles = []string{"codec.go", "contenders.go", "doc.go", "duration.go", "errors.go",
		"handle_options.go", "holders.go", "longrun.go", "path.go", "path_match.go", "session.go", "specguard.go", "stream.go",
		"telemetry.go", "tenure.go", "guarded_ops.go", "version.go"}
	catalogFiles = []string{"handles.go", "layout.go"}
	families     = map[string][]string{
		"locks": {"lock.go", "rwlock.go", "semaphore.go", "semaphore_kazoo.go", "multilock.go"},
		"lease": {"ttllease.go"},
		"queues": {"queue.go", "queue_ack.go", "queue_claims.go", "queue_consume.go", "queue_core.go", "queue_dead.go", "queue_giveback.go",
			"queue_layout.go", "queue_peek.go", "queue_pool.go", "queue_prefetch.go", "queue_prio.go",
			"queue_put.go", "queue_spread.go", "queue_take.go", "delay_queue.go"},
		"barrier":     {"barrier.go"},
		"election":    {"election.go"},
		"group":       {"group.go"},
		"partitioner": {"partitioner.go", "partitioner_member.go", "partition_plan.go"},
		"twopc":       {"twopc.go"},
		"config":      {"config.go", "counter.go"},
		"cache":       {"cache.go", "cache_apply.go", "cache_events.go", "cache_feed.go", "cache_read.go", "cache_run.go", "cache_below.go"},
		"kindcache": {"cache_children.go", "cache_kinds.go", "cache_queue.go", "cache_election.go", "cache_semaphore.go", "cache_lease.go",
			"cache_partitioner.go", "cache_twopc.go"},
		"service": {"service.go", "service_find.go", "service_index.go", "service_json.go", "service_register.go", "service_run.go"},
	}
	// below lists, for a family built on another, the families it may use.
	below = map[string][]string{"partitioner": {"group"}, "kindcache": {"cache", "locks", "group", "barrier", "queues", "election", "lease", "partitioner", "twopc"}, "service": {"cache"}}
)

// TestLayersRunOneWay finds, for each file, the package-level names it uses
// that another file declares (by name: functions, types, variables and
// constants, not methods), and fails on a reference against the layers.
func TestLayersRunOneWay(t *testing.T) {
	layer := map[string]string{}
	for _, f := range sharedFiles {
		layer[f] = "shared"
	}
	for _, f := range catalogFiles {
		layer[f] = "catalog"
	}
	for fam, fs := range families {
		for _, f := range fs {
			layer[f] = fam
		}
	}
	fset := token.NewFileSet()
	names, _ := filepath.Glob("*.go")
	files := map[string]*ast.File{}
	declaredIn := map[string]string{}
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if _, ok := layer[n]; !ok {
			t.Errorf("%s has no layer or family: add it to layers_test.go", n)
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[n] = f
		for _, d := range f.Decls {
			for _, name := range topNames(d) {
				declaredIn[name] = n
			}
		}
	}
	bad := map[string]bool{}
	for n, f := range files {
		var visit func(x ast.Node) bool
		visit = func(x ast.Node) bool {
			switch y := x.(type) {
			case *ast.SelectorExpr:
				ast.Inspect(y.X, visit)
				return false // the selected name is a field, method or imported name
			case *ast.FuncDecl:
				if y.Recv != nil { // a method's name is not a package-level name
					for _, part := range []ast.Node{y.Recv, y.Type, y.Body} {
						if part != nil && !reflect.ValueOf(part).IsNil() {
							ast.Inspect(part, visit)
						}
					}
					return false
				}
			case *ast.KeyValueExpr:
				ast.Inspect(y.Value, visit)
				return false // a key names a field (keys of map literals are not checked)
			}
			return visitIdent(x, n, layer, declaredIn, bad)
		}
		ast.Inspect(f, visit)
	}
	var out []string
	for b := range bad {
		out = append(out, b)
	}
	sort.Strings(out)
	for _, b := range out {
		t.Error(b)
	}
}

func visitIdent(x ast.Node, file string, layer, declaredIn map[string]string, bad map[string]bool) bool {
	id, ok := x.(*ast.Ident)
	if !ok {
		return true
	}
	// The parser resolves a file's own names (locals and its package-level
	// ones); a name it leaves unresolved is another file's, or predeclared.
	to, ok := declaredIn[id.Name]
	if !ok || to == file || id.Obj != nil {
		return true
	}
	if from, into := layer[file], layer[to]; !allowed(from, into) {
		bad[file+" ("+from+") uses "+id.Name+" of "+to+" ("+into+")"] = true
	}
	return true
}

func allowed(from, to string) bool {
	switch {
	case from == to, to == "shared", from == "catalog":
		return true
	case from == "shared":
		return false
	}
	for _, b := range below[from] {
		if b == to {
			return true
		}
	}
	return false
}

// topNames are the package-level names a declaration declares (methods
// excluded: their names are not unique across types).
func topNames(d ast.Decl) []string {
	var out []string
	switch x := d.(type) {
	case *ast.FuncDecl:
		if x.Recv == nil {
			out = append(out, x.Name.Name)
		}
	case *ast.GenDecl:
		for _, s := range x.Specs {
			switch sp := s.(type) {
			case *ast.TypeSpec:
				out = append(out, sp.Name.Name)
			case *ast.ValueSpec:
				for _, n := range sp.Names {
					if n.Name != "_" {
						out = append(out, n.Name)
					}
				}
			}
		}
	}
	return out
}

// TestFileMapNamesEveryFile checks that doc.go's source layout names every
// file of the package, and no file that is gone: a reader finds each file's
// purpose there.
func TestFileMapNamesEveryFile(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	i := strings.Index(text, "// --- Source layout")
	if i < 0 {
		t.Fatal("doc.go has no source layout")
	}
	named := map[string]bool{}
	for _, w := range strings.Fields(text[i:]) {
		if strings.HasSuffix(w, ".go") && !strings.Contains(w, "/") {
			named[strings.Trim(w, "(),")] = true
		}
	}
	names, _ := filepath.Glob("*.go")
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if !named[n] {
			t.Errorf("%s is not in doc.go's source layout", n)
		}
		delete(named, n)
	}
	for n := range named {
		t.Errorf("doc.go's source layout names %s, which is not in the package", n)
	}
}
