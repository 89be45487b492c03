package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// A service's registrations are the process's: they outlive a session, so
// its handle is not a Client method (a Client is one session's, and under
// Run a new one comes with each session) but made once per process by
// New<GoName> and run on each session.
func init() {
	register(spec.KindService, descriptor{
		handle: func(r *spec.Resource) (string, []jen.Code) { return "Services", []jen.Code{goType(r.Instance)} },
		summary: func(r *spec.Resource) []string {
			return []string{
				fmt.Sprintf("New%s returns the registrations and finder of the services under %s", r.GoName, r.Base),
				fmt.Sprintf("(Curator's service discovery layout), among them %s (%sName): its instances", r.Name, r.GoName),
				fmt.Sprintf("are the nodes %s/<id>, with payload %s.", r.FullPath, payloadName(r.Instance)),
			}
		},
		process: emitService,
	})
}

// emitService emits the name constant and constructor of service r.
func emitService(f *jen.File, _ *spec.Spec, r *spec.Resource) {
	f.Comment(fmt.Sprintf("%sName is the name of the service %s in Curator's service discovery.", r.GoName, r.Name))
	f.Const().Id(r.GoName + "Name").Op("=").Lit(r.ServiceName)
	f.Line()
	for _, line := range descriptors[spec.KindService].summary(r) {
		f.Comment(line)
	}
	docLines(f, r.Doc)
	f.Comment("")
	f.Comment("Make one per process and keep it: registrations are the process's, not a")
	f.Comment("session's. It does no I/O; Run holds the registrations and mirrors the base on")
	f.Comment("a session (under Run, in fn: go d.Run(ctx, c.Session())), and registers them")
	f.Comment(fmt.Sprintf("again, with their current data, on each new session. Register with Name %sName;", r.GoName))
	f.Comment(fmt.Sprintf("Instances(ctx, %sName) and Provider(%sName, ...) find the instances, Curator's", r.GoName, r.GoName))
	f.Comment("too. opts are runtime.NewServices's (runtime.WithJavaClass for Curator readers")
	f.Comment("typed with a payload class). See docs/service.md.")
	aclDoc(f, r)
	t := goType(r.Instance)
	opts := jen.Id("opts").Op("...")
	if r.ACL != nil {
		opts = jen.Append(jen.Index().Qual(runtimePkg, "ServicesOption").Values(
			jen.Qual(runtimePkg, "WithServiceACL").Call(jen.Add(aclExpr(r.ACL)).Op("..."))), jen.Id("opts").Op("...")).Op("...")
	}
	f.Func().Id("New"+r.GoName).Params(jen.Id("opts").Op("...").Qual(runtimePkg, "ServicesOption")).
		Op("*").Qual(runtimePkg, "Services").Types(t).Block(
		jen.Return(jen.Qual(runtimePkg, "NewServices").Types(t).Call(jen.Qual(runtimePkg, "At").Call(jen.Lit(r.Base)), opts)),
	)
}

// payloadName is a payload type as the spec names it, for doc comments.
func payloadName(t *spec.TypeRef) string {
	if t.Slice {
		return "[]" + t.Name
	}
	return t.Name
}
