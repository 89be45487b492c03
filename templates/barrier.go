package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitBarrier emits the client method of a barrier.
func emitBarrier(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a handle on the barrier %s, up while the node %s exists.", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Raise puts it up, Lower takes it down, and Wait blocks until it is down (ctx")
	f.Comment("cancellation stops waiting; Wait creates nothing).")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewBarrier", jen.Id("c").Dot("sess"), pathExpr(r)))
}

// emitDoubleBarrier emits the client method of a double barrier.
func emitDoubleBarrier(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a participant in the double barrier %s at %s, for %d %s.",
		r.GoName, r.Name, layout(r), r.Size, plural(r.Size, "participant", "participants")))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment(fmt.Sprintf("Enter blocks until %d %s entered; Leave blocks until all have left. Participants",
		r.Size, plural(r.Size, "participant has", "participants have")))
	f.Comment("are ephemeral: one whose session ends neither counts nor blocks the others.")
	f.Comment("ctx cancellation of Enter removes this participant's node.")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewDoubleBarrier", jen.Id("c").Dot("sess"), pathExpr(r), jen.Lit(r.Size)))
}
