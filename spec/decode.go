package spec

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// parser holds the state of one Parse call: the problems found so far and
// what has been decoded. Every decoding step reports its own problems and
// carries on, so that one run finds every error.
type parser struct {
	file       string
	errs       Errors
	budget     int  // collection entries still allowed to be visited (bounds alias expansion)
	overBudget bool // the budget error has been reported
	spec       *Spec
	types      map[string]*Type  // declared types by name
	consts     []ident           // the Go constants of priorities and participants
	pathPos    map[*Resource]Pos // where each resource's path value is
	text       *text             // the spec text, nil when it is not UTF-8
}

// entry is one key/value pair of a mapping.
type entry struct {
	key, val *yaml.Node // val has aliases resolved
	name     string     // the key's text
}

func (p *parser) errorf(n *yaml.Node, field, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Pos: posOf(n), Field: field, Msg: fmt.Sprintf(format, args...)})
}

// posOf is the 1-based position of n, never less than 1:1.
func posOf(n *yaml.Node) Pos {
	pos := Pos{Line: 1, Col: 1}
	if n != nil {
		pos.Line, pos.Col = max(n.Line, 1), max(n.Column, 1)
	}
	return pos
}

// inScalar is the position of the byte at offset off of the value of the
// scalar n, when n is written on one line exactly as its value reads (plain,
// or quoted without escapes), so that columns in the value are columns in
// the file. Otherwise, or when off < 0, it is the position of n.
func (p *parser) inScalar(n *yaml.Node, off int) Pos {
	pos := posOf(n)
	if off < 0 || off > len(n.Value) || p.text == nil || n.Kind != yaml.ScalarNode {
		return pos
	}
	start, ok := p.text.offset(n.Line, n.Column)
	if !ok {
		return pos
	}
	written := n.Value
	switch n.Style {
	case 0:
	case yaml.DoubleQuotedStyle:
		written = `"` + n.Value + `"`
	case yaml.SingleQuotedStyle:
		written = "'" + n.Value + "'"
	default:
		return pos
	}
	if !bytes.HasPrefix(p.text.data[start:p.text.end(n.Line)], []byte(written)) {
		return pos
	}
	if written != n.Value {
		start++ // the opening quote
	}
	return p.text.pos(start + off)
}

// deref resolves an alias to a shallow copy of its anchored node that keeps
// the alias's position, so that a problem with the value as a whole is
// reported where it is used. A nil node becomes a null scalar.
func deref(n *yaml.Node) *yaml.Node {
	if n == nil {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	}
	if n.Kind != yaml.AliasNode {
		return n
	}
	target := n.Alias
	for i := 0; target != nil && target.Kind == yaml.AliasNode && i < 8; i++ {
		target = target.Alias
	}
	if target == nil || target.Kind == yaml.AliasNode {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Line: n.Line, Column: n.Column}
	}
	c := *target
	c.Line, c.Column = n.Line, n.Column
	return &c
}

// describe says what kind of value n is, for "got ..." in messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.DocumentNode:
		return "a document"
	case yaml.AliasNode:
		return "an alias"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return "string " + quote(n.Value)
	case "!!int":
		return "integer " + n.Value
	case "!!float":
		return "number " + n.Value
	case "!!bool":
		return "boolean " + n.Value
	case "!!null":
		return "nothing (null)"
	default:
		return "a value tagged " + tag
	}
}

// spend charges k visited entries against the budget and reports false
// (once, with an error) when it is exhausted.
func (p *parser) spend(k int) bool {
	if k <= p.budget {
		p.budget -= k
		return true
	}
	p.budget = 0
	if !p.overBudget {
		p.overBudget = true
		p.errs = append(p.errs, &Error{File: p.file, Pos: Pos{Line: 1, Col: 1},
			Msg: "spec too large: aliases expand to too many values"})
	}
	return false
}

// mapping returns the entries of the mapping n in source order. It reports a
// node that is not a mapping, keys that are not scalars, and duplicate keys.
// Merge keys (<<: *anchor) are expanded; explicit keys win over merged ones.
func (p *parser) mapping(n *yaml.Node, field string) ([]entry, bool) {
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, field, "must be a mapping, got %s", describe(n))
		return nil, false
	}
	var out []entry
	p.collect(n, field, map[string]*yaml.Node{}, &out, 0)
	return out, true
}

func (p *parser) collect(n *yaml.Node, field string, seen map[string]*yaml.Node, out *[]entry, depth int) {
	if !p.spend(len(n.Content)/2 + 1) {
		return
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, field, "keys must be plain names, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			if depth == 0 {
				p.errorf(k, field, "duplicate key %s (first defined at line %d)", quote(k.Value), posOf(first).Line)
			}
			continue
		}
		seen[k.Value] = k
		*out = append(*out, entry{key: k, val: v, name: k.Value})
	}
	for _, m := range merges {
		items := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			items = m.Content
		}
		for _, it := range items {
			it = deref(it)
			switch {
			case it.Kind != yaml.MappingNode:
				p.errorf(it, field, "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(it))
			case depth >= 8:
				p.errorf(it, field, "merge keys (<<) are nested too deeply")
			default:
				p.collect(it, field, seen, out, depth+1)
			}
		}
	}
}

// known splits entries into a map by key, reporting every key not in
// allowed as unknown (with a suggestion when one is close).
func (p *parser) known(es []entry, field string, allowed ...string) map[string]entry {
	m := make(map[string]entry, len(es))
	for _, e := range es {
		if !slices.Contains(allowed, e.name) {
			p.unknownField(e, field, allowed)
			continue
		}
		m[e.name] = e
	}
	return m
}

// misspelled returns the fields of allowed that a key of es outside allowed
// is taken for ("unknown field ...; did you mean ...?"): a missing-field
// error for them would only repeat that.
func misspelled(es []entry, allowed []string) map[string]bool {
	m := map[string]bool{}
	for _, e := range es {
		if !slices.Contains(allowed, e.name) {
			if s := suggest(e.name, allowed); s != "" {
				m[s] = true
			}
		}
	}
	return m
}

func (p *parser) unknownField(e entry, field string, allowed []string) {
	if s := didYouMean(e.name, allowed); s != "" {
		p.errorf(e.key, field, "unknown field %s%s", quote(e.name), s)
		return
	}
	p.errorf(e.key, field, "unknown field %s; valid fields are %s", quote(e.name), strings.Join(allowed, ", "))
}

// object decodes a mapping with a fixed set of keys. miss holds the
// missing keys that an unknown key was taken for (see misspelled).
func (p *parser) object(n *yaml.Node, field string, allowed ...string) (m map[string]entry, miss map[string]bool, ok bool) {
	es, ok := p.mapping(n, field)
	if !ok {
		return nil, nil, false
	}
	return p.known(es, field, allowed...), misspelled(es, allowed), true
}

// list returns the items of the sequence n, aliases resolved.
func (p *parser) list(n *yaml.Node, field string) ([]*yaml.Node, bool) {
	n = deref(n)
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, field, "must be a list, got %s", describe(n))
		return nil, false
	}
	if !p.spend(len(n.Content) + 1) {
		return nil, false
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		items[i] = deref(c)
	}
	return items, true
}

// str decodes a string scalar.
func (p *parser) str(n *yaml.Node, field string) (string, bool) {
	n = deref(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		p.errorf(n, field, "must be a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

// enum decodes a string that must be one of allowed.
func enum[T ~string](p *parser, n *yaml.Node, field string, allowed []T) (T, bool) {
	s, ok := p.str(n, field)
	if !ok {
		return "", false
	}
	names := stringsOf(allowed)
	if !slices.Contains(names, s) {
		p.errorf(n, field, "must be one of %s, got %s%s", strings.Join(names, ", "), quote(s), didYouMean(s, names))
		return "", false
	}
	return T(s), true
}

// stringsOf converts a list of string-typed values (kinds, enums) to strings.
func stringsOf[T ~string](ts []T) []string {
	ss := make([]string, len(ts))
	for i, t := range ts {
		ss[i] = string(t)
	}
	return ss
}

// bigIntegerRE matches decimal integers written without a fraction or an
// exponent, as YAML writes them (1_000 included).
var bigIntegerRE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

// count decodes an integer in [1, MaxInt32] (sizes and leases).
// maxCount is the largest count a spec may give (leases, size, ...): an
// int32, what every ZooKeeper-side use of it fits.
const maxCount = 1<<31 - 1

func (p *parser) count(n *yaml.Node, field string) (int, bool) {

	n = deref(n)
	var v int64
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && bigIntegerRE.MatchString(n.Value) {
		// An integer too large for int64, which YAML reads as a float:
		// the same message as any other integer out of range.
		if strings.HasPrefix(n.Value, "-") {
			p.errorf(n, field, "must be >= 1, got %s", n.Value)
		} else {
			p.errorf(n, field, "must be <= %d, got %s", maxCount, n.Value)
		}
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		p.errorf(n, field, "must be an integer >= 1, got %s", describe(n))
		return 0, false
	}
	if err := decodeScalar(n, &v); err != nil || v > maxCount {
		p.errorf(n, field, "must be <= %d, got %s", maxCount, n.Value)
		return 0, false
	}
	if v < 1 {
		p.errorf(n, field, "must be >= 1, got %d", v)
		return 0, false
	}
	return int(v), true
}

// boolean decodes a true/false scalar.
func (p *parser) boolean(n *yaml.Node, field string) (bool, bool) {
	n = deref(n)
	var v bool
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || decodeScalar(n, &v) != nil {
		p.errorf(n, field, "must be true or false, got %s", describe(n))
		return false, false
	}
	return v, true
}

// decodeScalar decodes a scalar with yaml.v3's own rules (0x10, 1_000, +3,
// True), turning any panic in the library into an error.
func decodeScalar(n *yaml.Node, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode %q", n.Value)
		}
	}()
	return n.Decode(v)
}
