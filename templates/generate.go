// Package templates turns a validated spec model into Go source: one
// descriptor per resource kind, registered by the kind's own file (lock.go,
// ...), plus the file-level emitter (file.go). Generate is pure: model in,
// file contents out.
package templates

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// runtimePkg is the import path of the runtime generated code calls.
const runtimePkg = "github.com/zkgen/zkgen/runtime"

// descriptor is what the generator knows of one kind; the kind's own file
// (lock.go, queue.go, ...) fills it in and registers it. emit turns it into
// the resource's code: declarations, then the doc comment (summary, the
// spec's doc, usage) and the Client method returning the handle.
type descriptor struct {
	// handle is the runtime type of r's handle (without the pointer) and its
	// type arguments. Its constructor is runtime.New<type>, and the
	// runtime's interface for it is <type>Handle.
	handle func(r *spec.Resource) (typ string, typeArgs []jen.Code)
	// args are the constructor's arguments after the session and the path.
	args func(r *spec.Resource) []jen.Code
	// summary is the first lines of the method's doc comment.
	summary func(r *spec.Resource) []string
	// usage is the doc comment lines after the spec's doc and the link
	// to the handle's runtime type: what the spec adds to the runtime's
	// contract for r (layout, revocation, prefetch, ...), with links to
	// the options that hold it, never a copy of the runtime's contract.
	usage func(r *spec.Resource) []string
	// decls emits declarations the method needs before it (constants);
	// nil for none.
	decls func(f *jen.File, r *spec.Resource)
	// cache describes the kind's cache (the Client method <GoName>Cache);
	// nil for a kind without one yet.
	cache *cacheDesc
	// process, when set, emits the resource's code instead of a Client
	// method: for a kind whose handle belongs to the process, not to one
	// session's Client (a service's registrations). Only summary is used
	// besides it; the resource has no handle interface in API.
	process func(f *jen.File, s *spec.Spec, r *spec.Resource)
}

// descriptors holds the kinds the generator emits code for. Kinds not
// registered are parsed and validated but not generated.
var descriptors = map[spec.Kind]descriptor{}

// register adds the descriptor of kind k; each kind's file calls it once.
func register(k spec.Kind, d descriptor) {
	if _, dup := descriptors[k]; dup {
		panic("templates: kind " + string(k) + " registered twice")
	}
	descriptors[k] = d
}

// Supported reports the kinds this generator emits code for, in spec order.
func Supported() []spec.Kind {
	var out []spec.Kind
	for _, k := range spec.Kinds {
		if _, ok := descriptors[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

// Generate renders the Go files for s. Keys are slash-separated paths
// relative to the directory of the spec file; values are gofmt'd sources.
// It does no I/O and is deterministic: the same spec gives the same bytes.
// A resource of a kind this generator does not emit yet is an error
// (spec.Errors, positioned at the resource).
func Generate(s *spec.Spec) (map[string][]byte, error) {
	var errs spec.Errors
	for _, r := range s.Resources {
		if _, ok := descriptors[r.Kind]; !ok {
			errs = append(errs, &spec.Error{
				File:  s.File,
				Pos:   r.KindPos,
				Field: "resources." + r.Name + ".kind",
				Msg:   fmt.Sprintf("code generation for kind %s is not available in this version of zkgen (supported: %s)", r.Kind, kindList(Supported())),
			})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	f := newFile(s)
	emitTypes(f, s)
	for _, r := range s.Resources {
		emit(f, s, r, descriptors[r.Kind])
	}
	emitInterfaces(f, s)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("templates: rendering %s: %w", s.Output, err)
	}
	return map[string][]byte{s.Output: buf.Bytes()}, nil
}

// emit adds the code of resource r, whose kind d describes, to the file:
// its declarations, then the Client method returning its handle.
func emit(f *jen.File, s *spec.Spec, r *spec.Resource, d descriptor) {
	if d.process != nil {
		d.process(f, s, r)
		return
	}
	if d.decls != nil {
		d.decls(f, r)
	}
	for _, line := range d.summary(r) {
		f.Comment(line)
	}
	docLines(f, r.Doc)
	f.Comment("")
	typ, _ := d.handle(r)
	f.Comment(fmt.Sprintf("Its methods are [runtime.%s]'s, documented there: what each blocks on, what", typ))
	f.Comment("ctx cancellation does, what is left in ZooKeeper.")
	for _, line := range d.usage(r) {
		f.Comment(line)
	}
	stringParamDoc(f, r)
	var args []jen.Code
	if d.args != nil {
		args = d.args(r)
	}
	clientMethod(f, s, r, newHandle(r, "New"+typ, append([]jen.Code{jen.Id("c").Dot("sess"), pathExpr(r)}, args...)...))
	if d.cache != nil {
		emitCache(f, r, d.cache)
	}
}

func kindList(ks []spec.Kind) string {
	ss := make([]string, len(ks))
	for i, k := range ks {
		ss[i] = string(k)
	}
	slices.Sort(ss)
	return strings.Join(ss, ", ")
}
