package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindGroup, descriptor{
		handle: func(r *spec.Resource) (string, []jen.Code) { return "Group", []jen.Code{goType(r.Member)} },
		args:   func(r *spec.Resource) []jen.Code { return append([]jen.Code{codecExpr(r.Member)}, layoutOption(r)...) },
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a member handle of the group %s at %s.", r.GoName, r.Name, layout(r))}
		},
		usage: func(r *spec.Resource) []string {
			var lines []string
			if r.Layout == spec.LayoutKazoo {
				lines = append(lines, "Member nodes are named as Python kazoo's Party names them.")
			}
			return lines
		},
		cache: &cacheDesc{
			ctor: "NewGroupCache",
			name: "GroupCache",
			typ: func(r *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "GroupCache").Types(key, goType(r.Member))
			},
			args: func(r *spec.Resource) []jen.Code { return append([]jen.Code{codecExpr(r.Member)}, layoutArg(r)) },
			mirrors: func(*spec.Resource) string {
				return "the members of each instance that has one, in join order (runtime.GroupState)"
			},
		},
	})
}
