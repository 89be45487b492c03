package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// handleType returns the runtime type of r's handle (without the pointer)
// and its type arguments; the runtime's interface for it is the same name
// with "Handle" appended.
func handleType(r *spec.Resource) (string, []jen.Code) {
	atLeastOnce := r.Delivery == "at_least_once"
	switch r.Kind {
	case spec.KindLock:
		return "Lock", nil
	case spec.KindRWLock:
		return "RWLock", nil
	case spec.KindSemaphore:
		return "Semaphore", nil
	case spec.KindQueue:
		if atLeastOnce {
			return "AckQueue", []jen.Code{goType(r.Item)}
		}
		return "Queue", []jen.Code{goType(r.Item)}
	case spec.KindPriorityQueue:
		if atLeastOnce {
			return "AckPriorityQueue", []jen.Code{goType(r.Item)}
		}
		return "PriorityQueue", []jen.Code{goType(r.Item)}
	case spec.KindBarrier:
		return "Barrier", nil
	case spec.KindDoubleBarrier:
		return "DoubleBarrier", nil
	case spec.KindElection:
		return "Election", []jen.Code{goType(r.Payload)}
	case spec.KindGroup:
		return "Group", []jen.Code{goType(r.Member)}
	case spec.KindConfig:
		return "Config", []jen.Code{goType(r.Value)}
	case spec.KindCounter:
		return "Counter", nil
	case spec.KindTwoPhaseCommit:
		return "TwoPhaseCommit", []jen.Code{goType(r.Payload)}
	}
	panic("templates: no handle type for kind " + string(r.Kind))
}

// returnType is what the Client method of r returns: the resource's handle
// interface when the spec emits interfaces, else the runtime's pointer type.
func returnType(s *spec.Spec, r *spec.Resource) jen.Code {
	if s.EmitInterfaces {
		return jen.Id(r.GoName + "Handle")
	}
	typ, args := handleType(r)
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
		typ, args := handleType(r)
		f.Comment(fmt.Sprintf("%sHandle is the interface of the handle %s returns (runtime.%sHandle), for fakes in tests.", r.GoName, r.GoName, typ))
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
