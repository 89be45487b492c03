package templates

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindTwoPhaseCommit, descriptor{
		handle: func(r *spec.Resource) (string, []jen.Code) { return "TwoPhaseCommit", []jen.Code{goType(r.Payload)} },
		args:   twoPhaseCommitArgs,
		decls:  participantConsts,
		cache: &cacheDesc{
			ctor: "NewTwoPCCache",
			name: "TwoPCCache",
			typ: func(_ *spec.Resource, key jen.Code) jen.Code {
				return jen.Op("*").Qual(runtimePkg, "TwoPCCache").Types(key)
			},
			args: func(r *spec.Resource) []jen.Code { return []jen.Code{participantList(r)} },
			mirrors: func(*spec.Resource) string {
				return "the votes and the decision of each transaction proposed (runtime.TxStatus)"
			},
		},
		summary: func(r *spec.Resource) []string {
			names := make([]string, len(r.Participants))
			for i, p := range r.Participants {
				names[i] = p.Name
			}
			return []string{
				fmt.Sprintf("%s returns a handle on the two-phase commit %s at %s,", r.GoName, r.Name, layout(r)),
				fmt.Sprintf("with participants %s.", strings.Join(names, ", ")),
			}
		},
		usage: func(r *spec.Resource) []string {
			if r.Notify == spec.NotifyCoordinator {
				return []string{"Only the coordinator watches the votes; it must call Outcome to publish the",
					"decision ([runtime.WithCoordinatorNotify])."}
			}
			return nil
		},
	})
}

// participantConsts emits one runtime.Participant constant per participant.
func participantConsts(f *jen.File, r *spec.Resource) {
	consts := make([]jen.Code, len(r.Participants))
	for i, p := range r.Participants {
		consts[i] = jen.Id(p.GoName).Qual(runtimePkg, "Participant").Op("=").Lit(p.Name)
	}
	f.Comment(fmt.Sprintf("The participants of the two-phase commit %s.", r.Name))
	f.Const().Defs(consts...)
	f.Line()
}

// twoPhaseCommitArgs are the codec, the participants and the notify option.
func twoPhaseCommitArgs(r *spec.Resource) []jen.Code {
	args := []jen.Code{codecExpr(r.Payload), participantList(r)}
	if r.Notify == spec.NotifyCoordinator {
		args = append(args, jen.Qual(runtimePkg, "WithCoordinatorNotify").Call())
	}
	return args
}

// participantList is the []runtime.Participant of r's participants, in
// the spec's order.
func participantList(r *spec.Resource) jen.Code {
	list := make([]jen.Code, len(r.Participants))
	for i, p := range r.Participants {
		list[i] = jen.Id(p.GoName)
	}
	return jen.Index().Qual(runtimePkg, "Participant").Values(list...)
}
