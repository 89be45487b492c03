package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitConfig emits the client method of a config node (a name service when
// its path has parameters).
func emitConfig(f *jen.File, s *spec.Spec, r *spec.Resource) {
	what := "config value"
	if len(r.Params) > 0 {
		what = "name-service entry"
	}
	f.Comment(fmt.Sprintf("%s returns the %s %s at %s.", r.GoName, what, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Get reads the value and its version; Set writes it; CompareAndSet writes only")
	f.Comment("at the given version (else runtime.ErrVersionConflict); Delete removes it;")
	f.Comment("Watch follows creation, changes and deletion (Exists false).")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewConfig", jen.Id("c").Dot("sess"), pathExpr(r), codecExpr(r.Value)))
}

// emitCounter emits the client method of a shared int64 counter.
func emitCounter(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns the counter %s at %s (an int64, 0 until first added to).", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Get reads it; Add adds by compare-and-set, retried until it wins.")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewCounter", jen.Id("c").Dot("sess"), pathExpr(r)))
}
