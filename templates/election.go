package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindElection, descriptor{
		handle: func(r *spec.Resource) (string, []jen.Code) { return "Election", []jen.Code{goType(r.Payload)} },
		args:   func(r *spec.Resource) []jen.Code { return append([]jen.Code{codecExpr(r.Payload)}, layoutOption(r)...) },
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a candidate in the leader election %s at %s.", r.GoName, r.Name, layout(r))}
		},
		usage: func(r *spec.Resource) []string {
			var lines []string
			if r.Layout == spec.LayoutKazoo {
				lines = append(lines, "Candidate nodes are named as Python kazoo's Election names them.")
			}
			return lines
		},
		cache: &cacheDesc{
			ctor: "NewElectionCache",
			name: "ElectionCache",
			typ: func(r *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "ElectionCache").Types(key, goType(r.Payload))
			},
			args: func(r *spec.Resource) []jen.Code { return []jen.Code{codecExpr(r.Payload), layoutArg(r)} },
			mirrors: func(*spec.Resource) string {
				return "the acknowledged leader and the candidates of each instance that has either (runtime.ElectionState)"
			},
		},
	})
}
