package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindConfig, descriptor{
		handle: func(r *spec.Resource) (string, []jen.Code) { return "Config", []jen.Code{goType(r.Value)} },
		args:   func(r *spec.Resource) []jen.Code { return []jen.Code{codecExpr(r.Value)} },
		summary: func(r *spec.Resource) []string {
			what := "config value"
			if len(r.Params) > 0 {
				what = "name-service entry" // a config node per parameter value: a name service
			}
			return []string{fmt.Sprintf("%s returns the %s %s at %s.", r.GoName, what, r.Name, layout(r))}
		},
		usage: func(*spec.Resource) []string { return nil },
		cache: valueCache(func(r *spec.Resource) *spec.TypeRef { return r.Value }, "the value of each instance that exists, with its stat"),
	})
	register(spec.KindCounter, descriptor{
		handle: func(*spec.Resource) (string, []jen.Code) { return "Counter", nil },
		args:   layoutOption,
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns the counter %s at %s (an int64, 0 until first added to).", r.GoName, r.Name, layout(r))}
		},
		usage: func(r *spec.Resource) []string {
			var lines []string
			if r.Layout == spec.LayoutKazoo {
				lines = append(lines, "Stored in 4 bytes (kazoo's Counter(support_curator=True), Curator's SharedCount):",
					"int32 values only; an Add leaving that range fails.")
			}
			return lines
		},
		cache: &cacheDesc{
			ctor: "NewCache",
			name: "Cache",
			typ: func(_ *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "Cache").Types(key, jen.Int64())
			},
			args: func(r *spec.Resource) []jen.Code {
				return []jen.Code{jen.Qual(runtimePkg, "CounterCodec").Call(layoutArg(r))}
			},
			mirrors: func(*spec.Resource) string { return "the value of each instance that exists (its node), with its stat" },
		},
	})
}
