package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitGroup emits the client method of a group membership.
func emitGroup(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a member handle of the group %s at %s.", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Join adds an ephemeral member node (it leaves with Leave or the session);")
	f.Comment("Members lists the members in join order; Watch delivers the full list after")
	f.Comment("every change.")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewGroup", jen.Id("c").Dot("sess"), pathExpr(r), codecExpr(r.Member)))
}
