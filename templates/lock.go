package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitLock emits the client method of an exclusive lock.
func emitLock(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a contender for the exclusive lock %s at %s.", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Lock blocks until this contender holds the lock (ctx cancellation removes its node);")
	f.Comment("Unlock releases it; Lost is closed if it is lost; Token is its fencing token.")
	stringParamDoc(f, r)
	f.Func().Params(jen.Id("c").Op("*").Id("Client")).Id(r.GoName).Params(params(r)...).Op("*").Qual(runtimePkg, "Lock").Block(
		jen.Return(jen.Qual(runtimePkg, "NewLock").Call(jen.Id("c").Dot("sess"), pathExpr(r))),
	)
}
