package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// returnType is what the Client method of r returns: the resource's handle
// interface when the spec emits interfaces, else the runtime's pointer type.
func returnType(s *spec.Spec, r *spec.Resource) jen.Code {
	if s.EmitInterfaces {
		return jen.Id(r.GoName + "Handle")
	}
	typ, args := descriptors[r.Kind].handle(r)
	t := jen.Op("*").Qual(runtimePkg, typ)
	if len(args) > 0 {
		t = t.Types(args...)
	}
	return t
}

// clientMethod emits the Client method of r, returning handle.
func clientMethod(f *jen.File, s *spec.Spec, r *spec.Resource, handle jen.Code) {
	aclDoc(f, r)
	f.Func().Params(jen.Id("c").Op("*").Id("Client")).Id(r.GoName).Params(params(r)...).Add(returnType(s, r)).Block(
		jen.Return(handle),
	)
}

// emitInterfaces emits one interface per handle (an alias of the runtime's
// interface for its kind) and API, the interface of Client, so application
// code can depend on interfaces and tests can pass fakes.
func emitInterfaces(f *jen.File, s *spec.Spec) {
	if !s.EmitInterfaces {
		return
	}
	var methods []jen.Code
	for _, r := range s.Resources {
		if descriptors[r.Kind].process != nil {
			continue
		}
		typ, args := descriptors[r.Kind].handle(r)
		f.Comment(fmt.Sprintf("%sHandle is the interface of the handle %s returns ([runtime.%sHandle]), for fakes in tests.", r.GoName, r.GoName, typ))
		t := jen.Qual(runtimePkg, typ+"Handle")
		if len(args) > 0 {
			t = t.Types(args...)
		}
		f.Type().Id(r.GoName + "Handle").Op("=").Add(t)
		methods = append(methods, jen.Id(r.GoName).Params(params(r)...).Id(r.GoName+"Handle"))
	}
	f.Comment("API is the interface of Client: depend on it where a test should be able")
	f.Comment("to fake the coordination (emit_interfaces: false in the spec turns it off).")
	f.Type().Id("API").Interface(methods...)
	f.Line()
	f.Var().Id("_").Id("API").Op("=").Parens(jen.Op("*").Id("Client")).Parens(jen.Nil())
}
