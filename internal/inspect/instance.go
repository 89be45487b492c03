package inspect

import (
	"context"
	"strings"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Lister lists a znode's children, for Unknown; *runtime.Session is one.
// A missing node is an error wrapping zk.ErrNoNode.
type Lister interface {
	Children(ctx context.Context, path string) ([]string, error)
}

// Instance is one concrete znode of a declared resource: its path with the
// parameters filled in from the tree, as a Mirror finds it.
type Instance struct {
	Path   string  // full znode path
	Params []Param // parameter values, in path order
}

// Param is one path parameter's value.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// matches reports whether a child name can be the value of a parameter:
// the runtime's rule (runtime.CheckParam), by which generated code builds
// paths and a runtime.Template matches them.
func matches(p *spec.Param, name string) bool {
	return runtime.CheckParam(paramKind(p), name) == nil
}

// paramKind is the runtime's kind of a spec parameter.
func paramKind(p *spec.Param) runtime.ParamKind {
	if p.Type == "int" {
		return runtime.ParamInt
	}
	return runtime.ParamString
}

// rootDepth is the number of path segments of the root.
func rootDepth(s *spec.Spec) int {
	if s.Root == "" {
		return 0
	}
	return strings.Count(s.Root, "/")
}
