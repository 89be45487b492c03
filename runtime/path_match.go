package runtime

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Template is the shape of a resource's instance paths: a base path, then
// segments, each a literal or a typed parameter. The spec path
// /app/locks/{db}/tables/{shard:int} is
//
//	TemplateAt("/app/locks").Str("db").Lit("tables").Int("shard")
//
// Match is Path's reverse: it takes a concrete path apart into the
// template's parameters, accepting exactly the segments Path builds
// (CheckParam). A rejected base, literal or name makes the whole template
// invalid (Err), and an invalid template matches nothing. The zero
// Template is invalid. A Template is a value: the builder methods return
// a new one and leave their receiver as it was.
type Template struct {
	base string
	segs []templateSeg
	err  error
}

// templateSeg is one segment of a Template after its base.
type templateSeg struct {
	lit    string // a literal; "" for a parameter
	name   string // the parameter's name
	kind   ParamKind
	prefix string // a parameter's value starts with it (the kinds' caches)
	// sibling: the segment also matches its value with this suffix, a
	// sibling of the instance (a kazoo semaphore's lock directory).
	sibling string
}

// TemplateAt starts a template at base, an absolute path without a
// trailing "/" (but "/" itself), each of whose segments Path would build.
func TemplateAt(base string) Template {
	if base == "/" {
		return Template{base: base}
	}
	if base == "" || base[0] != '/' {
		return Template{err: fmt.Errorf("%w: template base %q is not absolute", ErrInvalidPath, base)}
	}
	for _, seg := range strings.Split(base[1:], "/") {
		if reason := checkSegment(seg); reason != "" {
			return Template{err: fmt.Errorf("%w: template base %q: segment %q: %s", ErrInvalidPath, base, seg, reason)}
		}
	}
	return Template{base: base}
}

// Lit appends a literal segment, which must be a segment Path.Str accepts.
func (t Template) Lit(seg string) Template {
	if reason := checkSegment(seg); reason != "" && t.err == nil {
		t.err = fmt.Errorf("%w: template %s: literal %q: %s", ErrInvalidPath, t, seg, reason)
	}
	return t.with(templateSeg{lit: seg})
}

// Str appends a string parameter segment named name.
func (t Template) Str(name string) Template {
	return t.with(templateSeg{name: name, kind: ParamString})
}

// strPrefixed appends a string parameter segment named name whose values
// start with prefix: the node names of a recipe (a queue's buckets and
// items), leaving its other children out.
func (t Template) strPrefixed(name, prefix string) Template {
	return t.with(templateSeg{name: name, kind: ParamString, prefix: prefix})
}

// withSibling returns t whose last segment also matches with suffix
// appended (the value without it is the parameter's): the instances'
// sibling directories, as kazoo's semaphore keeps its lock. A template
// without segments is rebased on its base's parent.
func (t Template) withSibling(suffix string) Template {
	if len(t.segs) == 0 {
		if t.base == "/" || t.Err() != nil {
			return Template{err: fmt.Errorf("%w: template %q has no sibling", ErrInvalidPath, t.base)}
		}
		last := strings.LastIndexByte(t.base, '/')
		parent := "/"
		if last > 0 {
			parent = t.base[:last]
		}
		t = Template{base: parent}.Lit(t.base[last+1:])
	}
	t.segs = slices.Clone(t.segs)
	t.segs[len(t.segs)-1].sibling = suffix
	return t
}

// Int appends an int parameter segment named name.
func (t Template) Int(name string) Template {
	return t.with(templateSeg{name: name, kind: ParamInt})
}

// with returns t with seg appended, sharing nothing t's later appends
// could change.
func (t Template) with(seg templateSeg) Template {
	if seg.lit == "" && seg.name == "" && t.err == nil {
		t.err = fmt.Errorf("%w: template %s: a parameter without a name", ErrInvalidPath, t)
	}
	t.segs = append(t.segs[:len(t.segs):len(t.segs)], seg)
	return t
}

// Err returns why the template is invalid, or nil.
func (t Template) Err() error {
	if t.err == nil && t.base == "" {
		return fmt.Errorf("%w: empty template", ErrInvalidPath)
	}
	return t.err
}

// Base returns the template's base path.
func (t Template) Base() string { return t.base }

// Len returns the number of segments after the base.
func (t Template) Len() int { return len(t.segs) }

// String returns the template as the spec writes it:
// "/app/locks/{db}/tables/{shard:int}".
func (t Template) String() string {
	var b strings.Builder
	b.WriteString(t.base)
	for _, s := range t.segs {
		if b.Len() > 1 {
			b.WriteByte('/')
		}
		switch {
		case s.lit != "":
			b.WriteString(s.lit)
		case s.kind == ParamInt:
			b.WriteString("{" + s.name + ":int}")
		default:
			b.WriteString("{" + s.name + "}")
		}
	}
	return b.String()
}

// Match takes path apart: when it is one of the template's instances (the
// base, then one segment per template segment: each literal as written,
// each parameter a value CheckParam accepts for its kind), it returns the
// parameters and true. Otherwise, or when the template is invalid, it
// returns false.
func (t Template) Match(path string) (Params, bool) {
	segs, ok := t.split(path)
	if !ok || len(segs) != len(t.segs) {
		return Params{}, false
	}
	return t.params(path, segs), true
}

// depth reports how many of the template's segments path spans when path
// is the base or a node on the way from it to an instance (each segment
// matching its template segment); ok is false otherwise.
func (t Template) depth(path string) (n int, ok bool) {
	segs, ok := t.split(path)
	if !ok {
		return 0, false
	}
	return len(segs), true
}

// instanceOf returns the instance path is, or is below: the first
// Len() segments after the base, each matching its template segment. ok
// is false when path is neither an instance nor below one.
func (t Template) instanceOf(path string) (string, bool) {
	n := len(t.segs)
	var rest string
	switch {
	case t.Err() != nil:
		return "", false
	case path == t.base && n == 0:
		return path, true
	case path == t.base:
		return "", false
	case t.base == "/" && len(path) > 1 && path[0] == '/':
		rest = path[1:]
	case strings.HasPrefix(path, t.base) && len(path) > len(t.base)+1 && path[len(t.base)] == '/':
		rest = path[len(t.base)+1:]
	default:
		return "", false
	}
	segs := strings.SplitN(rest, "/", n+1)
	if len(segs) < n {
		return "", false
	}
	for i, s := range t.segs {
		if !s.matches(segs[i]) {
			return "", false
		}
	}
	if len(segs) == n {
		return path, true
	}
	if inst := path[:len(path)-len(segs[n])-1]; inst != "" {
		return inst, true
	}
	return "/", true
}

// split returns the segments of path after the base when path is the base
// or below it and each of them matches the template's segment at its
// place; ok is false otherwise (and for an invalid template).
func (t Template) split(path string) (segs []string, ok bool) {
	if t.Err() != nil {
		return nil, false
	}
	var rest string
	switch {
	case path == t.base:
		return nil, true
	case t.base == "/" && len(path) > 1 && path[0] == '/':
		rest = path[1:]
	case strings.HasPrefix(path, t.base) && len(path) > len(t.base)+1 && path[len(t.base)] == '/':
		rest = path[len(t.base)+1:]
	default:
		return nil, false
	}
	segs = strings.Split(rest, "/")
	if len(segs) > len(t.segs) {
		return nil, false
	}
	for i, seg := range segs {
		if !t.segs[i].matches(seg) {
			return nil, false
		}
	}
	return segs, true
}

// matches reports whether v can stand at this segment's place.
func (s templateSeg) matches(v string) bool {
	v = s.own(v)
	if s.lit != "" {
		return v == s.lit
	}
	return strings.HasPrefix(v, s.prefix) && CheckParam(s.kind, v) == nil
}

// own returns the segment value v stands for: v without the sibling
// suffix the segment may carry.
func (s templateSeg) own(v string) string {
	if t, ok := strings.CutSuffix(v, s.sibling); ok && s.sibling != "" {
		return t
	}
	return v
}

// params returns the parameters of path, whose segments after the base are
// segs (all matching).
func (t Template) params(path string, segs []string) Params {
	p := Params{path: path}
	for i, s := range t.segs {
		if s.lit != "" {
			continue
		}
		v := Param{Name: s.name, Kind: s.kind, Value: s.own(segs[i])}
		if s.kind == ParamInt {
			v.Int, _ = strconv.Atoi(v.Value)
		}
		p.list = append(p.list, v)
	}
	return p
}

// Params are the parameters of a path a Template matched, in path order.
type Params struct {
	path string
	list []Param
}

// Param is one path parameter's value.
type Param struct {
	Name  string    // the parameter's name in the template
	Kind  ParamKind // its kind
	Value string    // the path segment
	Int   int       // the segment as an int, for a ParamInt (0 otherwise)
}

// Path returns the matched path.
func (p Params) Path() string { return p.path }

// Len returns the number of parameters.
func (p Params) Len() int { return len(p.list) }

// At returns the i-th parameter (0-based, in path order); it panics when
// i is out of range, as indexing a slice does.
func (p Params) At(i int) Param { return p.list[i] }

// Str returns the i-th parameter's segment: the value of a string
// parameter.
func (p Params) Str(i int) string { return p.list[i].Value }

// Int returns the i-th parameter as an int: the value of an int
// parameter (0 for a string parameter).
func (p Params) Int(i int) int { return p.list[i].Int }

// String returns the parameters as "{db=a shard=7}".
func (p Params) String() string {
	parts := make([]string, len(p.list))
	for i, v := range p.list {
		parts[i] = v.Name + "=" + v.Value
	}
	return "{" + strings.Join(parts, " ") + "}"
}
