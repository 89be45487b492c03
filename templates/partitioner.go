package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindPartitioner, descriptor{
		handle: func(r *spec.Resource) (string, []jen.Code) { return "Partitioner", []jen.Code{goType(r.Member)} },
		args: func(r *spec.Resource) []jen.Code {
			args := []jen.Code{jen.Lit(r.Partitions), codecExpr(r.Member)}
			if len(r.PartitionNames) > 0 {
				names := make([]jen.Code, len(r.PartitionNames))
				for i, n := range r.PartitionNames {
					names[i] = jen.Lit(n.Name)
				}
				args = append(args, jen.Qual(runtimePkg, "WithPartitionNames").Call(names...))
			}
			return args
		},
		decls: partitionConsts,
		cache: &cacheDesc{
			ctor: "NewPartitionerCache",
			name: "PartitionerCache",
			typ: func(r *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "PartitionerCache").Types(key, goType(r.Member))
			},
			args: func(r *spec.Resource) []jen.Code { return []jen.Code{jen.Lit(r.Partitions), codecExpr(r.Member)} },
			mirrors: func(*spec.Resource) string {
				return "the members in join order and each partition's owner, of each instance that has a member or an owner (runtime.PartitionerState)"
			},
		},
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a member handle of the partitioner %s at %s, sharing %d partitions.",
				r.GoName, r.Name, layout(r), r.Partitions)}
		},
		usage: func(*spec.Resource) []string { return nil },
	})
}

// partitionConsts emits one constant per named partition of r: its index.
func partitionConsts(f *jen.File, r *spec.Resource) {
	if len(r.PartitionNames) == 0 {
		return
	}
	f.Comment(fmt.Sprintf("Partitions of the partitioner %s, by name.", r.Name))
	consts := make([]jen.Code, len(r.PartitionNames))
	for i, n := range r.PartitionNames {
		consts[i] = jen.Comment(fmt.Sprintf("%s is partition %s (%d) of %s.", n.GoName, n.Name, i, r.Name)).Line().
			Id(n.GoName).Op("=").Lit(i)
	}
	f.Const().Defs(consts...)
	f.Line()
}
