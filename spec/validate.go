package spec

import (
	"cmp"
	"slices"
	"strings"
)

// checkCycles reports declared types that contain themselves by value
// (A has a field of type B and B one of type A, with no slice between),
// which no Go struct can do. Each back edge of a depth-first walk in source
// order is one error, at the field that closes the cycle.
func (p *parser) checkCycles() {
	const (
		unseen = iota
		active
		done
	)
	state := map[*Type]int{}
	var stack []*Type
	var visit func(t *Type)
	visit = func(t *Type) {
		state[t] = active
		stack = append(stack, t)
		for _, f := range t.Fields {
			next := f.Type.Decl
			if next == nil || f.Type.Slice {
				continue
			}
			switch state[next] {
			case unseen:
				visit(next)
			case active:
				var names []string
				for _, s := range stack[slices.Index(stack, next):] {
					names = append(names, s.Name)
				}
				names = append(names, next.Name)
				if len(names) > 8 {
					names = append(append(names[:4:4], "..."), names[len(names)-3:]...)
				}
				p.errs = append(p.errs, &Error{File: p.file, Pos: f.Pos,
					Field: join(join(join("types", t.Name), "fields"), f.Name),
					Msg: "recursive type " + strings.Join(names, " -> ") +
						"; a value cannot contain itself, use a slice ([]" + next.Name + ") to break the cycle"})
			}
		}
		stack = stack[:len(stack)-1]
		state[t] = done
	}
	for _, t := range p.spec.Types {
		if state[t] == unseen {
			visit(t)
		}
	}
}

// ident is a generated Go identifier and where it comes from.
type ident struct {
	goName string
	pos    Pos
	field  string // field path of its source, e.g. types.Job
	what   string // what it is, for messages: type "Job", priority "urgent"
	// derived marks a name made from a resource's (its Handle interface):
	// two of them collide only when their resources do, which is reported
	// already.
	derived bool
}

// checkNames reports Go identifiers that collide after case conversion.
// Package level: Client, New, API, every type, every priority/participant
// constant, every resource's <GoName>Handle interface and <GoName>Key
// cache key type, and a service's New<GoName> and <GoName>Name. Client methods: every resource, its <GoName>Cache, and
// the generated Session.
func (p *parser) checkNames() {
	var pkg []ident
	for _, t := range p.spec.Types {
		pkg = append(pkg, ident{t.GoName, t.Pos, join("types", t.Name), "type " + quote(t.Name), false})
	}
	pkg = append(pkg, p.consts...)
	var methods []ident
	for _, r := range p.spec.Resources {
		methods = append(methods, ident{r.GoName, r.Pos, join("resources", r.Name), "resource " + quote(r.Name), false})
		pkg = append(pkg, ident{r.GoName + "Handle", r.Pos, join("resources", r.Name), "the handle interface of resource " + quote(r.Name), true},
			ident{r.GoName + "Key", r.Pos, join("resources", r.Name), "the cache key type of resource " + quote(r.Name), true})
		methods = append(methods, ident{r.GoName + "Cache", r.Pos, join("resources", r.Name), "the cache method of resource " + quote(r.Name), true})
		if r.Kind == KindService {
			pkg = append(pkg, ident{"New" + r.GoName, r.Pos, join("resources", r.Name), "the constructor of service " + quote(r.Name), true},
				ident{r.GoName + "Name", r.Pos, join("resources", r.Name), "the name constant of service " + quote(r.Name), true})
		}
	}
	p.collisions(pkg, map[string]string{
		"Client": "the generated Client type",
		"New":    "the generated New function",
		"Run":    "the generated Run function",
		"API":    "the generated API interface",
	})
	p.collisions(methods, map[string]string{"Session": "the generated Client.Session method"})
}

// collisions reports each identifier whose Go name an earlier one (in
// source order) or a generated name already has.
func (p *parser) collisions(ids []ident, generated map[string]string) {
	slices.SortStableFunc(ids, func(a, b ident) int {
		return cmp.Or(cmp.Compare(a.pos.Line, b.pos.Line), cmp.Compare(a.pos.Col, b.pos.Col))
	})
	first := map[string]ident{}
	for _, id := range ids {
		if g, ok := generated[id.goName]; ok {
			p.errs = append(p.errs, &Error{File: p.file, Pos: id.pos, Field: id.field,
				Msg: id.what + " becomes Go name " + id.goName + ", which is taken by " + g})
			continue
		}
		if prev, ok := first[id.goName]; ok {
			if id.derived && prev.derived {
				continue
			}
			p.errs = append(p.errs, &Error{File: p.file, Pos: id.pos, Field: id.field,
				Msg: id.what + " and " + prev.what + " (" + prev.field + ") both become Go name " + id.goName})
			continue
		}
		first[id.goName] = id
	}
}
