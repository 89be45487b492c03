package templates

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitQueue emits the client method of a FIFO queue.
func emitQueue(f *jen.File, s *spec.Spec, r *spec.Resource) {
	typ, _ := handleType(r)
	ctor := "New" + typ
	f.Comment(fmt.Sprintf("%s returns a handle on the FIFO queue %s at %s, of %s items, %s.",
		r.GoName, r.Name, layout(r), itemDoc(r.Item), deliveryDoc(r)))
	docLines(f, r.Doc)
	f.Comment("")
	queueMethodsDoc(f, r, "Put appends an item")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, ctor, jen.Id("c").Dot("sess"), pathExpr(r), codecExpr(r.Item)))
}

// emitPriorityQueue emits the priority constants and the client method of a
// priority queue.
func emitPriorityQueue(f *jen.File, s *spec.Spec, r *spec.Resource) {
	typ, _ := handleType(r)
	ctor := "New" + typ
	f.Comment(fmt.Sprintf("Priorities of the priority queue %s, most urgent first.", r.Name))
	consts := make([]jen.Code, len(r.Priorities))
	for i, p := range r.Priorities {
		what := "served first"
		if i > 0 {
			what = "served after " + r.Priorities[i-1].GoName
		}
		consts[i] = jen.Comment(fmt.Sprintf("%s is priority %s (%d) of %s: %s.", p.GoName, p.Name, i, r.Name, what)).Line().
			Id(p.GoName).Qual(runtimePkg, "Priority").Op("=").Lit(i)
	}
	f.Const().Defs(consts...)
	f.Line()
	f.Comment(fmt.Sprintf("%s returns a handle on the priority queue %s at %s, of %s items, %s.",
		r.GoName, r.Name, layout(r), itemDoc(r.Item), deliveryDoc(r)))
	docLines(f, r.Doc)
	f.Comment("")
	names := ""
	for i, p := range r.Priorities {
		if i > 0 {
			names += ", "
		}
		names += p.GoName
	}
	f.Comment(fmt.Sprintf("Priorities, most urgent first: %s; FIFO within one priority.", names))
	queueMethodsDoc(f, r, "Put adds an item at a priority")
	stringParamDoc(f, r)
	clientMethod(f, s, r, newHandle(r, ctor, jen.Id("c").Dot("sess"), pathExpr(r), codecExpr(r.Item), jen.Lit(len(r.Priorities))))
}

func queueMethodsDoc(f *jen.File, r *spec.Resource, put string) {
	f.Comment(put + " (once, even across a connection loss); PutAll puts many in multis;")
	if r.Delivery == "at_least_once" {
		f.Comment("Take blocks until it claims an item and returns it as a delivery: Ack consumes it,")
		f.Comment("Release gives it back, and a consumer whose session ends before Ack releases it;")
		f.Comment("TakeN claims several; Len counts the items, claimed ones included.")
		return
	}
	f.Comment("Take blocks until it removes an item and returns it (ctx cancellation leaves")
	f.Comment("nothing behind); TakeN removes several at once; Len counts the items.")
}

// itemDoc describes a payload type for doc comments.
func itemDoc(t *spec.TypeRef) string {
	var name string
	switch {
	case t == nil:
		return "raw bytes"
	case t.Slice:
		name = "[]" + t.Name
	case t.Decl != nil:
		name = t.Decl.GoName
	default:
		name = t.Name
	}
	switch {
	case t.Decl == nil && !t.Slice && t.Name == "bytes":
		return "raw bytes"
	case t.Decl == nil && !t.Slice && t.Name == "string":
		return "string (raw UTF-8)"
	}
	return name + " (JSON)"
}

func deliveryDoc(r *spec.Resource) string {
	if r.Delivery == "at_least_once" {
		return "delivered at least once"
	}
	return "delivered at most once"
}
