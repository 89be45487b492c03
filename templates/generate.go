// Package templates turns a validated spec model into Go source: one
// jennifer emitter per resource kind (lock.go, ...) plus the file-level
// emitter (file.go). Generate is pure: model in, file contents out.
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

// emitter adds the code of one resource to the file: a method on Client
// returning the resource's handle, and whatever types it needs.
type emitter func(f *jen.File, s *spec.Spec, r *spec.Resource)

// emitters is the registry of supported kinds. Kinds not listed here are
// parsed and validated but not generated yet.
var emitters = map[spec.Kind]emitter{
	spec.KindLock:           emitLock,
	spec.KindRWLock:         emitRWLock,
	spec.KindSemaphore:      emitSemaphore,
	spec.KindQueue:          emitQueue,
	spec.KindPriorityQueue:  emitPriorityQueue,
	spec.KindBarrier:        emitBarrier,
	spec.KindDoubleBarrier:  emitDoubleBarrier,
	spec.KindTwoPhaseCommit: emitTwoPhaseCommit,
	spec.KindElection:       emitElection,
	spec.KindGroup:          emitGroup,
	spec.KindConfig:         emitConfig,
	spec.KindCounter:        emitCounter,
}

// Supported reports the kinds this generator emits code for, in spec order.
func Supported() []spec.Kind {
	var out []spec.Kind
	for _, k := range spec.Kinds {
		if emitters[k] != nil {
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
		if emitters[r.Kind] == nil {
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
		emitters[r.Kind](f, s, r)
	}
	emitInterfaces(f, s)
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, fmt.Errorf("templates: rendering %s: %w", s.Output, err)
	}
	return map[string][]byte{s.Output: buf.Bytes()}, nil
}

func kindList(ks []spec.Kind) string {
	ss := make([]string, len(ks))
	for i, k := range ks {
		ss[i] = string(k)
	}
	slices.Sort(ss)
	return strings.Join(ss, ", ")
}
