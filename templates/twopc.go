package templates

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitTwoPhaseCommit emits the participant constants and the client method
// of a two-phase commit.
func emitTwoPhaseCommit(f *jen.File, s *spec.Spec, r *spec.Resource) {
	names := make([]string, len(r.Participants))
	consts := make([]jen.Code, len(r.Participants))
	list := make([]jen.Code, len(r.Participants))
	for i, p := range r.Participants {
		names[i] = p.Name
		consts[i] = jen.Id(p.GoName).Qual(runtimePkg, "Participant").Op("=").Lit(p.Name)
		list[i] = jen.Id(p.GoName)
	}
	f.Comment(fmt.Sprintf("The participants of the two-phase commit %s.", r.Name))
	f.Const().Defs(consts...)
	f.Line()

	f.Comment(fmt.Sprintf("%s returns a handle on the two-phase commit %s at %s,", r.GoName, r.Name, layout(r)))
	f.Comment(fmt.Sprintf("with participants %s.", strings.Join(names, ", ")))
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("The coordinator calls Propose (or ProposeWith a payload); each participant may Join")
	f.Comment("(its presence is ephemeral: if its session ends before it votes, the transaction")
	f.Comment("aborts) and Votes runtime.Commit or runtime.Abort once. Outcome blocks until the")
	f.Comment("decision, written once and the same for everyone: abort as soon as any aborts,")
	f.Comment("commit when all commit.")
	var opts []jen.Code
	if r.Notify == "coordinator" {
		f.Comment("Only the coordinator (the handle that proposed) watches the votes; it must call")
		f.Comment("Outcome to publish the decision the others wait for.")
		opts = append(opts, jen.Qual(runtimePkg, "WithCoordinatorNotify").Call())
	}
	stringParamDoc(f, r)
	args := append([]jen.Code{
		jen.Id("c").Dot("sess"), pathExpr(r), codecExpr(r.Payload),
		jen.Index().Qual(runtimePkg, "Participant").Values(list...),
	}, opts...)
	clientMethod(f, s, r, newHandle(r, "NewTwoPhaseCommit", args...))
}
