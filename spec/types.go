package spec

import (
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// valueBuiltins are the builtin types a resource payload (item, payload,
// member, value) may use.
var valueBuiltins = []string{"bytes", "string", "int", "bool", "float"}

// fieldBuiltins are the builtin types a declared field may use.
var fieldBuiltins = []string{"bytes", "string", "int", "bool", "float", "duration", "time"}

// parseTypes decodes types: in two passes, so that fields can refer to
// types declared further down.
func (p *parser) parseTypes(e entry) {
	es, ok := p.mapping(e.val, "types")
	if !ok {
		return
	}
	bodies := make(map[*Type]*yaml.Node, len(es))
	for _, te := range es {
		t := &Type{Pos: posOf(te.key), Name: te.name, GoName: CamelCase(te.name)}
		field := join("types", te.name)
		switch {
		case !typeNameRE.MatchString(te.name):
			p.errorf(te.key, field, "type names must be identifiers ([A-Za-z][A-Za-z0-9_]*), got %s", quote(te.name))
			continue
		case slices.Contains(fieldBuiltins, te.name):
			p.errorf(te.key, field, "type name %s is a builtin type; pick another name", quote(te.name))
			continue
		}
		p.types[t.Name] = t
		p.spec.Types = append(p.spec.Types, t)
		bodies[t] = te.val
	}
	for _, t := range p.spec.Types {
		p.typeBody(t, bodies[t], join("types", t.Name))
	}
}

// typeBody decodes {fields: {...}} or {go_type: "import/path.Name"}.
func (p *parser) typeBody(t *Type, n *yaml.Node, field string) {
	m, miss, ok := p.object(n, field, "fields", "go_type")
	if !ok {
		return
	}
	fe, hasFields := m["fields"]
	ge, hasGoType := m["go_type"]
	if hasFields == hasGoType {
		if hasFields || !miss["fields"] && !miss["go_type"] {
			p.errorf(n, field, "must have exactly one of fields (declared fields) or go_type (an existing Go type)")
		}
		return
	}
	if hasGoType {
		s, ok := p.str(ge.val, join(field, "go_type"))
		if ok {
			if msg := goTypeProblem(s); msg != "" {
				p.errorf(ge.val, join(field, "go_type"), "%s", msg)
			}
			t.GoType = s
		}
		return
	}
	ffield := join(field, "fields")
	es, ok := p.mapping(fe.val, ffield)
	if !ok {
		return
	}
	byGoName := map[string]*Field{}
	for _, e := range es {
		f := &Field{Pos: posOf(e.key), Name: e.name, GoName: CamelCase(e.name)}
		fpath := join(ffield, e.name)
		if !isSnake(e.name) {
			p.errorf(e.key, fpath, "field names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got %s", quote(e.name))
			continue
		}
		if other, dup := byGoName[f.GoName]; dup {
			p.errorf(e.key, fpath, "fields %s and %s both become Go field %s", quote(other.Name), quote(f.Name), f.GoName)
			continue
		}
		byGoName[f.GoName] = f
		s, ok := p.str(e.val, fpath)
		if !ok {
			continue
		}
		ref, msg := p.resolveRef(s, fieldBuiltins, true)
		if msg != "" {
			p.errorf(e.val, fpath, "%s", msg)
			continue
		}
		f.Type = ref
		t.Fields = append(t.Fields, f)
	}
}

// goTypeProblem checks "import/path.Name": a plausible import path and an
// exported identifier.
func goTypeProblem(s string) string {
	const help = `; use "import/path.Name", e.g. "github.com/acme/app/model.Order"`
	i := strings.LastIndex(s, ".")
	if i < 0 || strings.LastIndex(s, "/") > i {
		return "must be an import path and a type name" + help + ", got " + quote(s)
	}
	path, name := s[:i], s[i+1:]
	switch {
	case path == "" || strings.HasPrefix(path, "/") || strings.HasSuffix(path, "/") || strings.Contains(path, "//"):
		return "import path " + quote(path) + " is not valid" + help
	case strings.IndexFunc(path, func(r rune) bool { return !importPathChar(r) }) >= 0:
		return "import path " + quote(path) + " may contain only letters, digits and -._~+/" + help
	case !exportedRE.MatchString(name):
		return "type name " + quote(name) + " must be an exported Go identifier" + help
	}
	return ""
}

func importPathChar(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~+/", r)
}

// resolveRef resolves a type reference: one of builtins, a declared type,
// or (when allowSlice is true) "[]T" of one of those. msg says what is wrong.
func (p *parser) resolveRef(s string, builtins []string, allowSlice bool) (TypeRef, string) {
	ref := TypeRef{Name: s}
	if allowSlice && strings.HasPrefix(s, "[]") {
		ref = TypeRef{Name: s[2:], Slice: true}
	}
	if slices.Contains(builtins, ref.Name) {
		return ref, ""
	}
	if t, ok := p.types[ref.Name]; ok {
		ref.Decl = t
		return ref, ""
	}
	allowed := strings.Join(builtins, ", ") + " or a name under types:"
	if allowSlice {
		allowed = strings.Join(builtins, ", ") + ", a name under types:, or []T of those"
	}
	if !allowSlice && (slices.Contains(fieldBuiltins, s) || strings.HasPrefix(s, "[]")) {
		return ref, "type " + quote(s) + " cannot be used here; use " + allowed
	}
	names := append([]string(nil), builtins...)
	for _, t := range p.spec.Types {
		names = append(names, t.Name)
	}
	return ref, "unknown type " + quote(ref.Name) + "; use " + allowed + didYouMean(ref.Name, names)
}
