package templates

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

func init() {
	register(spec.KindQueue, descriptor{
		handle: queueHandle("Queue"),
		args: func(r *spec.Resource) []jen.Code {
			return append(append([]jen.Code{codecExpr(r.Item)}, deadLetterOpt(r)...), prefetchOpt(r)...)
		},
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a handle on the FIFO queue %s at %s, of %s items, %s.",
				r.GoName, r.Name, layout(r), itemDoc(r.Item), deliveryDoc(r))}
		},
		usage: fifoUsage,
		cache: queueCache("NewQueueCache"),
	})
	register(spec.KindPriorityQueue, descriptor{
		handle: queueHandle("PriorityQueue"),
		args: func(r *spec.Resource) []jen.Code {
			names := make([]jen.Code, len(r.Priorities))
			for i, p := range r.Priorities {
				names[i] = jen.Lit(p.Name)
			}
			return append([]jen.Code{codecExpr(r.Item), jen.Lit(len(r.Priorities)), jen.Qual(runtimePkg, "WithPriorityNames").Call(names...)},
				deadLetterOpt(r)...)
		},
		decls: priorityConsts,
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a handle on the priority queue %s at %s, of %s items, %s.",
				r.GoName, r.Name, layout(r), itemDoc(r.Item), deliveryDoc(r))}
		},
		usage: func(r *spec.Resource) []string {
			names := make([]string, len(r.Priorities))
			for i, p := range r.Priorities {
				names[i] = p.GoName
			}
			return append([]string{fmt.Sprintf("Priorities, most urgent first: %s; FIFO within one priority.", strings.Join(names, ", "))},
				queueMethodsDoc(r)...)
		},
		cache: queueCache("NewPriorityQueueCache"),
	})
	register(spec.KindDelayQueue, descriptor{
		handle: queueHandle("DelayQueue"),
		args:   func(r *spec.Resource) []jen.Code { return append([]jen.Code{codecExpr(r.Item)}, deadLetterOpt(r)...) },
		summary: func(r *spec.Resource) []string {
			return []string{fmt.Sprintf("%s returns a handle on the delay queue %s at %s, of %s items, %s.",
				r.GoName, r.Name, layout(r), itemDoc(r.Item), deliveryDoc(r))}
		},
		usage: delayUsage,
		cache: queueCache("NewQueueCache"),
	})
}

// queueCache is the cache of a queue kind: each instance's depth and next
// item (runtime.QueueState), from its items' stats.
func queueCache(ctor string) *cacheDesc {
	return &cacheDesc{
		ctor: ctor,
		name: "QueueCache",
		typ: func(_ *spec.Resource, key jen.Code) jen.Code {
			return jen.Op("*").Qual(runtimePkg, "QueueCache").Types(key)
		},
		args: func(r *spec.Resource) []jen.Code {
			if len(r.Priorities) > 0 {
				return []jen.Code{jen.Lit(len(r.Priorities))}
			}
			return nil
		},
		mirrors: func(*spec.Resource) string {
			return "the depth and the next item of each instance that has an item (runtime.QueueState), not the items' payloads"
		},
	}
}

// fifoUsage is the usage doc of a FIFO queue's accessor.
func fifoUsage(r *spec.Resource) []string {
	doc := queueMethodsDoc(r)
	if r.Prefetch > 1 {
		doc = append(doc, fmt.Sprintf("Takes prefetch up to %d items into the session's buffer ([runtime.WithPrefetch]).", r.Prefetch))
	}
	return doc
}

// delayUsage is the usage doc of a delay queue's accessor.
func delayUsage(r *spec.Resource) []string {
	return queueMethodsDoc(r)
}

// queueHandle returns the handle function of a queue kind whose
// at-most-once runtime type is typ; at least once, it is Ack<typ>.
func queueHandle(typ string) func(r *spec.Resource) (string, []jen.Code) {
	return func(r *spec.Resource) (string, []jen.Code) {
		if r.Delivery == spec.AtLeastOnce {
			return "Ack" + typ, []jen.Code{goType(r.Item)}
		}
		return typ, []jen.Code{goType(r.Item)}
	}
}

// deadLetterOpt is the queue option of r's dead_letter_after, if set.
func deadLetterOpt(r *spec.Resource) []jen.Code {
	if r.DeadLetterAfter == 0 {
		return nil
	}
	return []jen.Code{jen.Qual(runtimePkg, "WithDeadLetterAfter").Call(jen.Lit(r.DeadLetterAfter))}
}

// prefetchOpt is the queue option of r's prefetch, if above 1.
func prefetchOpt(r *spec.Resource) []jen.Code {
	if r.Prefetch <= 1 {
		return nil
	}
	return []jen.Code{jen.Qual(runtimePkg, "WithPrefetch").Call(jen.Lit(r.Prefetch))}
}

// priorityConsts emits one runtime.Priority constant per priority of r.
func priorityConsts(f *jen.File, r *spec.Resource) {
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
}

// queueMethodsDoc is what r's spec adds to a queue's contract: its dead
// letters.
func queueMethodsDoc(r *spec.Resource) []string {
	if r.DeadLetterAfter > 0 {
		return []string{fmt.Sprintf("An item delivered %d times without an ack moves to the dead letters ([runtime.WithDeadLetterAfter]).", r.DeadLetterAfter)}
	}
	return nil
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
	if r.Delivery == spec.AtLeastOnce {
		return "delivered at least once"
	}
	return "delivered at most once"
}
