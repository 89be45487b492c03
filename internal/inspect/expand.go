package inspect

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Lister lists a znode's children; *runtime.Session is one. A missing node
// is an error wrapping zk.ErrNoNode.
type Lister interface {
	Children(ctx context.Context, path string) ([]string, error)
}

// Instance is one concrete znode of a declared resource: its path with the
// parameters filled in from the tree.
type Instance struct {
	Path   string  // full znode path
	Params []Param // parameter values, in path order
}

// Param is one path parameter's value.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Expand lists the instances of r that exist in the tree: every parameter
// segment is matched against the children of the node before it (an int
// parameter only matches children an int formats to; a string parameter any
// name the generated code would accept). A resource without parameters has
// exactly one instance, whether its node exists or not. Instances come in
// order: int values numerically, string values bytewise.
func Expand(ctx context.Context, l Lister, r *spec.Resource) ([]Instance, error) {
	out := []Instance{{}}
	for _, seg := range r.Segments {
		if seg.Param == nil {
			for i := range out {
				out[i].Path += "/" + seg.Literal
			}
			continue
		}
		var next []Instance
		for _, in := range out {
			kids, err := l.Children(ctx, in.Path)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, k := range sortValues(matching(seg.Param, kids), seg.Param.Type) {
				next = append(next, Instance{
					Path:   in.Path + "/" + k,
					Params: append(slices.Clip(in.Params), Param{Name: seg.Param.Name, Value: k}),
				})
			}
		}
		out = next
	}
	return out, nil
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

func matching(p *spec.Param, kids []string) []string {
	var out []string
	for _, k := range kids {
		if matches(p, k) {
			out = append(out, k)
		}
	}
	return out
}

func sortValues(vs []string, typ string) []string {
	slices.SortFunc(vs, func(a, b string) int { return compareValues(typ, a, b) })
	return vs
}

// rootDepth is the number of path segments of the root.
func rootDepth(s *spec.Spec) int {
	if s.Root == "" {
		return 0
	}
	return strings.Count(s.Root, "/")
}
