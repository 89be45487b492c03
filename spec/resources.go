package spec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// commonFields are valid for every kind.
var commonFields = []string{"kind", "path", "doc", "acl"}

// allResourceFields is every field some kind takes, in documentation order.
var allResourceFields = func() []string {
	fs := slices.Clone(commonFields)
	for _, f := range kindFieldTable {
		fs = append(fs, f.name)
	}
	return fs
}()

// parseResources decodes resources: at least one, in source order.
func (p *parser) parseResources(e entry, rootOK bool) {
	es, ok := p.mapping(e.val, "resources")
	if !ok {
		return
	}
	if len(es) == 0 && len(e.val.Content) == 0 {
		p.errorf(e.val, "resources", "must declare at least one resource")
		return
	}
	for _, re := range es {
		if r := p.resource(re, rootOK); r != nil {
			p.spec.Resources = append(p.spec.Resources, r)
		}
	}
}

// resource decodes one resource. It returns nil when the name or the value
// is unusable; other problems are reported and the resource kept so that
// later checks (collisions, overlaps) still see it.
func (p *parser) resource(e entry, rootOK bool) *Resource {
	field := join("resources", e.name)
	r := &Resource{Pos: posOf(e.key), Name: e.name, GoName: CamelCase(e.name)}
	nameOK := isSnake(e.name)
	if !nameOK {
		p.errorf(e.key, field, "resource names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got %s", quote(e.name))
	}
	es, ok := p.mapping(e.val, field)
	if !ok {
		return nil
	}
	has := map[string]bool{}
	for _, x := range es {
		has[x.name] = true
		if x.name == "kind" {
			p.kind(r, x, join(field, "kind"))
		}
	}
	info, known := r.Kind.Info()
	allowed := allResourceFields
	if known {
		allowed = append(slices.Clone(commonFields), info.Fields...)
	}
	var unknown []entry // keys reported as unknown fields
	for _, x := range es {
		switch {
		case x.name == "kind":
		case slices.Contains(allowed, x.name):
			p.resourceField(r, x, join(field, x.name), rootOK)
		case r.Kind != "" && slices.Contains(allResourceFields, x.name):
			p.errorf(x.key, field, "field %q is not valid for kind %s (only for %s)", x.name, r.Kind, kindsTaking(x.name))
		default:
			p.unknownField(x, field, allowed)
			unknown = append(unknown, x)
		}
	}
	p.checkPartitionNames(r, es, field)
	p.serviceNode(r, field)
	miss := misspelled(unknown, allowed)
	if r.Kind == "" && !has["kind"] && !miss["kind"] {
		p.errorf(e.key, field, "missing required field %q (one of %s)", "kind", kindList())
	}
	if !has["path"] && !miss["path"] {
		p.errorf(e.key, field, "missing required field %q", "path")
	}
	for _, f := range info.Required {
		if !has[f] && !miss[f] {
			p.errorf(e.key, field, "missing required field %q for kind %s", f, r.Kind)
		}
	}
	p.defaults(r)
	p.checkDelivery(r, field)
	if !nameOK {
		return nil
	}
	return r
}

// checkDelivery reports the queue settings r's delivery does not allow.
func (p *parser) checkDelivery(r *Resource, field string) {
	if r.DeadLetterAfter > 0 && r.Delivery != AtLeastOnce {
		p.errs = append(p.errs, &Error{File: p.file, Pos: r.DeadLetterAfterPos, Field: join(field, "dead_letter_after"),
			Msg: fmt.Sprintf("needs delivery: at_least_once (delivery is %s: a take removes the item, which is never delivered again)", r.Delivery)})
	}
	if r.Prefetch > 0 && r.Delivery != AtMostOnce {
		p.errs = append(p.errs, &Error{File: p.file, Pos: r.PrefetchPos, Field: join(field, "prefetch"),
			Msg: fmt.Sprintf("needs delivery: at_most_once (delivery is %s: each item is claimed and acked on its own)", r.Delivery)})
	}
}

// kind decodes kind: one of Kinds.
func (p *parser) kind(r *Resource, x entry, field string) {
	r.KindPos = posOf(x.val)
	s, ok := p.str(x.val, field)
	if !ok {
		return
	}
	if _, ok := Kind(s).Info(); !ok {
		p.errorf(x.val, field, "unknown kind %s; known kinds are %s%s", quote(s), kindList(), didYouMean(s, stringsOf(Kinds)))
		return
	}
	r.Kind = Kind(s)
}

func kindList() string { return strings.Join(stringsOf(Kinds), ", ") }

// kindsTaking lists the kinds that take a kind-specific field.
func kindsTaking(name string) string {
	var ks []string
	for _, row := range kindTable {
		if slices.Contains(row.Fields, name) {
			ks = append(ks, string(row.Kind))
		}
	}
	return strings.Join(ks, ", ")
}

// resourceField decodes one field that is valid for r's kind: a common
// field, or a kind-specific one through its decoder in kindFieldTable.
func (p *parser) resourceField(r *Resource, x entry, field string, rootOK bool) {
	switch x.name {
	case "path":
		p.path(r, x.val, field, rootOK)
	case "doc":
		r.Doc, _ = p.str(x.val, field)
	case "acl":
		r.ACL = p.acl(x.val, field)
	default:
		for _, f := range kindFieldTable {
			if f.name == x.name {
				f.decode(p, r, x.val, field)
			}
		}
	}
}

// defaults fills in the defaults of the fields r's kind takes, and its
// effective ACL.
func (p *parser) defaults(r *Resource) {
	if info, ok := r.Kind.Info(); ok && info.Defaults != nil {
		info.Defaults(r)
	}
	if r.ACL == nil && p.spec != nil {
		r.ACL = p.spec.ACL
	}
}

// path decodes a resource path and derives FullPath, Segments and Params.
func (p *parser) path(r *Resource, n *yaml.Node, field string, rootOK bool) {
	s, ok := p.str(n, field)
	if !ok {
		return
	}
	segs, params, msg, at := parsePath(s)
	if msg != "" {
		p.errs = append(p.errs, &Error{File: p.file, Pos: p.inScalar(n, at), Field: field, Msg: msg})
		return
	}
	var full []Segment
	if p.spec.Root != "" {
		for _, lit := range strings.Split(p.spec.Root[1:], "/") {
			full = append(full, Segment{Literal: lit})
		}
	}
	full = append(full, segs...)
	if rootOK && full[0].Param == nil && full[0].Literal == "zookeeper" {
		p.errorf(n, field, "full path %s is /zookeeper or below it, which ZooKeeper reserves", quote(p.spec.Root+s))
		return
	}
	r.Path, r.FullPath, r.Segments, r.Params = s, p.spec.Root+s, full, params
	p.pathPos[r] = posOf(n)
}

// revocable decodes true, false or {force_after: <duration>}.
func (p *parser) revocable(r *Resource, n *yaml.Node, field string) {
	n = deref(n)
	switch {
	case n.Kind == yaml.MappingNode:
		m, miss, _ := p.object(n, field, "force_after")
		fe, has := m["force_after"]
		if !has {
			if !miss["force_after"] {
				p.errorf(n, field, `missing required field "force_after"; use revocable: true to allow revocation without forcing`)
			}
			return
		}
		r.Revocable = true
		r.ForceAfter, _ = p.duration(fe.val, join(field, "force_after"))
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		r.Revocable, _ = p.boolean(n, field)
	default:
		p.errorf(n, field, "must be true, false or {force_after: <duration>}, got %s", describe(n))
	}
}

// MaxTTL is the longest lease TTL ZooKeeper takes: 2^40-1 milliseconds.
const MaxTTL = (1<<40 - 1) * time.Millisecond

// ttl decodes a lease's TTL: a positive whole number of milliseconds, at
// most MaxTTL (ZooKeeper keeps TTLs in milliseconds).
func (p *parser) ttl(r *Resource, n *yaml.Node, field string) {
	d, ok := p.duration(n, field)
	switch {
	case !ok:
	case d%time.Millisecond != 0:
		p.errorf(n, field, "must be a whole number of milliseconds, got %s", quote(deref(n).Value))
	case d > MaxTTL:
		p.errorf(n, field, "must be at most %v (ZooKeeper's largest TTL), got %s", MaxTTL, quote(deref(n).Value))
	default:
		r.TTL = d
	}
}

// duration decodes a positive duration in time.ParseDuration syntax.
func (p *parser) duration(n *yaml.Node, field string) (time.Duration, bool) {
	const help = "a duration such as 5s, 500ms or 1m30s"
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		p.errorf(n, field, "must be %s, got %s", help, describe(n))
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil {
		p.errorf(n, field, "must be %s, got %s", help, quote(n.Value))
		return 0, false
	}
	if d <= 0 {
		p.errorf(n, field, "must be > 0, got %s", quote(n.Value))
		return 0, false
	}
	return d, true
}

// valueRef decodes a payload type: a value builtin or a declared type.
func (p *parser) valueRef(n *yaml.Node, field string) *TypeRef {
	s, ok := p.str(n, field)
	if !ok {
		return nil
	}
	ref, msg := p.resolveRef(s, valueBuiltins, false)
	if msg != "" {
		p.errorf(n, field, "%s", msg)
		return nil
	}
	return &ref
}

// names decodes a list of distinct snake_case names (priorities,
// participants); at most maxN when maxN > 0. Each becomes a Go constant
// named after the resource: urgent of tasks -> TasksUrgent.
func (p *parser) names(r *Resource, n *yaml.Node, field, what string, maxN int) []Name {
	items, ok := p.list(n, field)
	if !ok {
		return nil
	}
	switch {
	case len(items) == 0:
		p.errorf(n, field, "must list at least one %s", what)
	case maxN > 0 && len(items) > maxN:
		p.errorf(n, field, "at most %d %s names are allowed, got %d", maxN, what, len(items))
	}
	var out []Name
	seen := map[string]int{}
	for i, it := range items {
		f := index(field, i)
		s, ok := p.str(it, f)
		switch {
		case !ok:
		case !isSnake(s):
			p.errorf(it, f, "%s names must be snake_case ([a-z][a-z0-9]*(_[a-z0-9]+)*), got %s", what, quote(s))
		default:
			if j, dup := seen[s]; dup {
				p.errorf(it, f, "duplicate %s %s (also %s)", what, quote(s), index(field, j))
				continue
			}
			seen[s] = i
			name := Name{Name: s, GoName: r.GoName + CamelCase(s)}
			out = append(out, name)
			p.consts = append(p.consts, ident{name.GoName, posOf(it), f, what + " " + quote(s), false})
		}
	}
	return out
}

// checkPartitionNames reports a partitioner whose names list does not
// have one entry per partition (entries that are bad in themselves are
// reported by the names decoder).
func (p *parser) checkPartitionNames(r *Resource, es []entry, field string) {
	if r.Kind != KindPartitioner || r.Partitions == 0 {
		return
	}
	for _, x := range es {
		n := deref(x.val)
		if x.name == "names" && n.Kind == yaml.SequenceNode && len(n.Content) > 0 && len(n.Content) != r.Partitions {
			p.errorf(x.val, join(field, "names"), "must name each of the %d partitions, got %d names", r.Partitions, len(n.Content))
		}
	}
}

// serviceName decodes a service's name: one literal path segment, the
// name Curator's ServiceDiscovery knows the service by.
func (p *parser) serviceName(r *Resource, n *yaml.Node, field string) {
	s, ok := p.str(n, field)
	if !ok {
		return
	}
	msg := literalProblem(s)
	switch {
	case s == "" || s == "." || s == "..":
		msg = fmt.Sprintf(`must be a node name (not empty, "." or ".."), got %s`, quote(s))
	case strings.Contains(s, "/"):
		msg = fmt.Sprintf(`must be one node name, without "/", got %s`, quote(s))
	}
	if msg != "" {
		p.errorf(n, field, "%s", msg)
		return
	}
	r.ServiceName = s
}

// serviceNode makes a service's path its base and FullPath and Segments
// its own node, <base>/<name>, where its instances are: so two services
// share a base, as Curator's do, without overlapping. The base takes no
// parameters: one handle finds every service under it.
func (p *parser) serviceNode(r *Resource, field string) {
	if r.Kind != KindService || r.Segments == nil {
		return
	}
	if len(r.Params) > 0 {
		p.errs = append(p.errs, &Error{File: p.file, Pos: p.pathPos[r], Field: join(field, "path"),
			Msg: fmt.Sprintf("a service's path is the base of its instances and takes no parameters, got %s", quote(r.Path))})
		r.Segments, r.Params = nil, nil
		return
	}
	if r.ServiceName == "" {
		r.ServiceName = r.Name
	}
	r.Base = r.FullPath
	r.FullPath += "/" + r.ServiceName
	r.Segments = append(r.Segments, Segment{Literal: r.ServiceName})
}
