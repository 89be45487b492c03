package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitElection emits the client method of a leader election.
func emitElection(f *jen.File, s *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%s returns a candidate in the leader election %s at %s.", r.GoName, r.Name, layout(r)))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Campaign blocks until this candidate is the acknowledged leader (ctx cancellation")
	f.Comment("removes its node) and returns the leadership: Epoch grows with every new leader,")
	f.Comment("Lost and Context end when it is lost, Resign hands over. Leader reads the")
	f.Comment("acknowledged leader's payload; Observe streams leadership changes, including none.")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, "NewElection", jen.Id("c").Dot("sess"), pathExpr(r), codecExpr(r.Payload)))
}
