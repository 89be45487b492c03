// Package spec reads a zkgen spec (YAML) into a validated model.
//
// Parse decodes strictly (unknown keys, wrong value kinds and duplicate keys
// are errors), validates names, paths, types and kinds, and returns either a
// complete *Spec or every problem found as Errors, each with the position of
// the offending key or value. It generates no code.
package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// knownVersion is the only spec format version this package knows.
const knownVersion = 1

// topFields are the keys of the spec document, in documentation order.
var topFields = []string{"version", "package", "output", "root", "acl", "emit_interfaces", "durations", "types", "resources"}

// Parse parses and validates a spec. name is used in messages (e.g.
// "zkgen.yaml" or the path given by the user). On failure the error is an
// Errors holding every problem found, sorted by position, and the *Spec is
// nil.
func Parse(name string, data []byte) (*Spec, error) {
	p := &parser{file: name, types: map[string]*Type{}, pathPos: map[*Resource]Pos{}}
	if root := p.load(data); root != nil {
		p.parseSpec(root)
	}
	if len(p.errs) > 0 {
		return nil, sortErrors(p.errs)
	}
	return p.spec, nil
}

// ParseFile reads and parses a spec file; the name in messages is the path
// as given. An unreadable file gives the error from os.ReadFile.
func ParseFile(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// load decodes the single YAML document of data and returns its root node,
// or nil after reporting why there is none.
func (p *parser) load(data []byte) *yaml.Node {
	if pos, msg := checkText(data); msg != "" {
		p.errs = append(p.errs, &Error{File: p.file, Pos: pos, Msg: msg})
		return nil
	}
	if !wideEncoding(data) {
		p.text = newText(data)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := decodeDoc(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			p.errs = append(p.errs, &Error{File: p.file, Pos: Pos{Line: 1, Col: 1}, Msg: `empty spec; it must start with "version: 1"`})
		} else {
			p.syntaxError(data, err)
		}
		return nil
	}
	for {
		var extra yaml.Node
		err := decodeDoc(dec, &extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			p.syntaxError(data, err)
			return nil
		}
		if n := docRoot(&extra); !isNull(n) {
			p.errorf(n, "", "a spec is a single YAML document; found a second one")
			return nil
		}
	}
	root := docRoot(&doc)
	if isNull(root) {
		p.errs = append(p.errs, &Error{File: p.file, Pos: Pos{Line: 1, Col: 1}, Msg: `empty spec; it must start with "version: 1"`})
		return nil
	}
	p.budget = 10*countNodes(&doc) + 100000
	return root
}

// decodeDoc decodes the next document, turning a panic inside the YAML
// library into an error rather than crashing the caller.
func decodeDoc(dec *yaml.Decoder, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: invalid YAML (%v)", r)
		}
	}()
	return dec.Decode(n)
}

func docRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return deref(doc.Content[0])
	}
	return deref(nil)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// countNodes counts the nodes of a tree without following aliases.
func countNodes(root *yaml.Node) int {
	count, stack := 0, []*yaml.Node{root}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		count++
		stack = append(stack, n.Content...)
	}
	return count
}

// checkText finds bytes YAML does not allow (invalid UTF-8, control
// characters) and says where, which the YAML library does not. Input with
// a UTF-16 or UTF-32 byte order mark is left to the library.
func checkText(data []byte) (Pos, string) {
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) || bytes.HasPrefix(data, []byte{0, 0}) {
		return Pos{}, ""
	}
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		pos := Pos{Line: line, Col: col}
		switch {
		case r == utf8.RuneError && size == 1:
			return pos, fmt.Sprintf("invalid YAML: invalid UTF-8 byte 0x%02x", data[i])
		case r == '\n':
			line, col = line+1, 0
		case r == '\t' || r == '\r':
		case r < 0x20 || r == 0x7F || r >= 0x80 && r <= 0x9F || r == 0xFFFE || r == 0xFFFF || r == 0xFEFF && i > 0:
			return pos, fmt.Sprintf("invalid YAML: control character %U is not allowed", r)
		}
		i += size
		col++
	}
	return Pos{}, ""
}

// parseSpec decodes the top-level mapping into p.spec.
func (p *parser) parseSpec(root *yaml.Node) {
	es, ok := p.mapping(root, "")
	if !ok {
		return
	}
	miss := misspelled(es, topFields)
	if !p.version(root, es, miss["version"]) {
		return
	}
	m := p.known(es, "", topFields...)
	s := &Spec{File: p.file, Version: knownVersion}
	p.spec = s

	if e, ok := m["package"]; ok {
		s.Package = p.packageName(e)
	} else if !miss["package"] {
		p.errorf(root, "", `missing required field "package"`)
	}
	s.Output = s.Package + "_zkgen.go"
	if e, ok := m["output"]; ok {
		s.Output = p.output(e)
		s.OutputPos = posOf(e.val)
	}
	rootOK := true
	if e, ok := m["root"]; ok {
		s.Root, rootOK = p.root(e)
	}
	if e, ok := m["acl"]; ok {
		s.ACL = p.acl(e.val, "acl")
	}
	s.EmitInterfaces = true
	if e, ok := m["emit_interfaces"]; ok {
		if v, ok := p.boolean(e.val, "emit_interfaces"); ok {
			s.EmitInterfaces = v
		}
	}
	s.Durations = Durations[0]
	if e, ok := m["durations"]; ok {
		if v, ok := enum(p, e.val, "durations", Durations); ok {
			s.Durations = v
		}
	}
	if e, ok := m["types"]; ok {
		p.parseTypes(e)
	}
	if e, ok := m["resources"]; ok {
		p.parseResources(e, rootOK)
	} else if !miss["resources"] {
		p.errorf(root, "", `missing required field "resources"`)
	}
	p.checkCycles()
	p.checkNames()
	p.checkOverlaps()
}

// version checks that "version: 1" is present and first. It returns false
// when the version is unknown: the rest of the file is then not checked,
// since its format is not known. A missing version is not reported when
// misspelled, as the unknown key says so.
func (p *parser) version(root *yaml.Node, es []entry, misspelled bool) bool {
	i := indexOf(es, "version")
	if i < 0 {
		if misspelled {
			return true
		}
		at := root
		if len(es) > 0 {
			at = es[0].key
		}
		p.errorf(at, "", `missing required field "version"; a spec starts with "version: 1"`)
		return true
	}
	e := es[i]
	if i > 0 {
		p.errorf(e.key, "version", "must be the first key of the spec")
	}
	if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!int" {
		p.errorf(e.val, "version", "must be the integer %d, got %s", knownVersion, describe(e.val))
		return false
	}
	var v int64
	if err := decodeScalar(e.val, &v); err != nil || v != knownVersion {
		p.errorf(e.val, "version", "unknown version %s; this zkgen knows version %d", e.val.Value, knownVersion)
		return false
	}
	return true
}

func indexOf(es []entry, name string) int {
	for i, e := range es {
		if e.name == name {
			return i
		}
	}
	return -1
}
