package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindBarrier, descriptor{
		handle: func(*spec.Resource) (string, []jen.Code) { return "Barrier", nil },
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a handle on the barrier %s, up while the node %s exists.", r.GoName, r.Name, layout(r))}
		},
		usage: func(*spec.Resource) []string { return nil },
		cache: valueCache(func(*spec.Resource) *spec.TypeRef { return nil }, "each instance that is up (its node exists)"),
	})
	register(spec.KindDoubleBarrier, descriptor{
		handle: func(*spec.Resource) (string, []jen.Code) { return "DoubleBarrier", nil },
		args:   func(r *spec.Resource) []jen.Code { return []jen.Code{jen.Lit(r.Size)} },
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a participant in the double barrier %s at %s, for %d %s.",
				r.GoName, r.Name, layout(r), r.Size, plural(r.Size, "participant", "participants"))}
		},
		usage: func(*spec.Resource) []string { return nil },
		cache: &cacheDesc{
			ctor: "NewDoubleBarrierCache",
			name: "DoubleBarrierCache",
			typ: func(_ *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "DoubleBarrierCache").Types(key)
			},
			args: func(*spec.Resource) []jen.Code { return nil },
			mirrors: func(*spec.Resource) string {
				return "the participants entered and whether it is ready, of each instance that has either (runtime.DoubleBarrierState)"
			},
		},
	})
}
