// Package breaking compares two versions of a zkgen spec and reports every
// change that would split coordination between a process generated from the
// old version and one generated from the new version running side by side,
// as they do during a rolling deploy: two processes that believe they
// exclude each other, or agree on a protocol or an encoding, and no longer
// do, with no error anywhere.
//
// Resources are matched by name; a renamed resource is a removal plus an
// addition. A removed resource is a warning (it splits nothing: the old
// processes use it alone). The rules table (Rules) decides, field by field
// and kind by kind, which changes break; every other change is safe. The
// package is pure: it reads no files and runs no commands.
package breaking

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/zkgen/zkgen/spec"
)

// Severity says how much a finding matters.
type Severity string

// The severities of findings.
const (
	// Breaking is a change that splits coordination between old and new
	// processes.
	Breaking Severity = "breaking"
	// Warning is a change that splits nothing but may still be a mistake:
	// a removed resource.
	Warning Severity = "warning"
	// Error is a warning promoted by the caller (zkgen breaking --strict).
	// Compare never returns it.
	Error Severity = "error"
)

// Finding is one reported change.
type Finding struct {
	File     string   // the new spec's name, as given to Parse
	Pos      spec.Pos // where the change is in the new spec; zero for a removed resource
	Field    string   // dotted field path, e.g. resources.slots.leases
	Severity Severity
	Msg      string // what changed, with the old value's line, and why it matters
	Old, New string // the compared values as text; "" where there is none

	oldLine int // the old resource's line, to order removed resources
}

// String formats f as "file:line:col: field: severity: message", or
// "file: field: severity: message" when f has no position in the new spec.
func (f Finding) String() string {
	if f.Pos.Line == 0 {
		return fmt.Sprintf("%s: %s: %s: %s", f.File, f.Field, f.Severity, f.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s: %s", f.File, f.Pos.Line, f.Pos.Col, f.Field, f.Severity, f.Msg)
}

// MarshalJSON encodes f as {"file", "line", "col", "path", "severity",
// "message", "old", "new"}; line and col are 0 for a removed resource.
func (f Finding) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		File     string   `json:"file"`
		Line     int      `json:"line"`
		Col      int      `json:"col"`
		Path     string   `json:"path"`
		Severity Severity `json:"severity"`
		Message  string   `json:"message"`
		Old      string   `json:"old"`
		New      string   `json:"new"`
	}{f.File, f.Pos.Line, f.Pos.Col, f.Field, f.Severity, f.Msg, f.Old, f.New})
}

// Version is one version of a spec: the parsed model and where the values
// of its fields are written, which the model does not keep for every field.
type Version struct {
	Spec *spec.Spec
	pos  map[string]spec.Pos // by field path: "root", "resources.jobs.item"
}

// Parse parses and validates one version of a spec (see spec.Parse; its
// errors are returned as they are).
func Parse(name string, data []byte) (*Version, error) {
	s, err := spec.Parse(name, data)
	if err != nil {
		return nil, err
	}
	return &Version{Spec: s, pos: locate(data)}, nil
}

// valuePos is where field of resource r is written, and whether it is:
// when it is not (a default), the position of the resource's name.
func (v *Version) valuePos(r *spec.Resource, field string) (spec.Pos, bool) {
	if p, ok := v.pos["resources."+r.Name+"."+field]; ok {
		return p, true
	}
	return r.Pos, false
}

// comparison is the state of one Compare.
type comparison struct {
	old, new *Version
	findings []Finding
}

// Compare reports every change from old to new that would split
// coordination between their processes, and every removed resource, sorted
// by position in the new spec (removed resources, which have none, last).
// It returns nil when nothing changed that matters.
func Compare(old, new *Version) []Finding {
	c := &comparison{old: old, new: new}
	olds := byName(old.Spec.Resources)
	news := byName(new.Spec.Resources)
	var matched [][2]*spec.Resource
	for _, n := range new.Spec.Resources {
		if o, ok := olds[n.Name]; ok {
			matched = append(matched, [2]*spec.Resource{o, n})
		}
	}
	c.root(matched)
	for _, m := range matched {
		c.resource(m[0], m[1])
	}
	var added []*spec.Resource
	for _, n := range new.Spec.Resources {
		if _, ok := olds[n.Name]; !ok {
			added = append(added, n)
		}
	}
	for _, o := range old.Spec.Resources {
		if _, ok := news[o.Name]; !ok {
			c.removed(o, added)
		}
	}
	slices.SortStableFunc(c.findings, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(unplaced(a), unplaced(b)), cmp.Compare(a.Pos.Line, b.Pos.Line),
			cmp.Compare(a.Pos.Col, b.Pos.Col), cmp.Compare(a.oldLine, b.oldLine),
			strings.Compare(a.Field, b.Field), strings.Compare(a.Msg, b.Msg))
	})
	return c.findings
}

// unplaced is 1 for a finding without a position in the new spec, which
// sorts after the others, else 0.
func unplaced(f Finding) int {
	if f.Pos.Line == 0 {
		return 1
	}
	return 0
}

func byName(rs []*spec.Resource) map[string]*spec.Resource {
	m := make(map[string]*spec.Resource, len(rs))
	for _, r := range rs {
		m[r.Name] = r
	}
	return m
}

// resource compares a resource present in both versions: a changed kind
// makes every other comparison meaningless; otherwise every rule of the
// kind runs.
func (c *comparison) resource(o, n *spec.Resource) {
	if o.Kind != n.Kind {
		c.changed(o, n, "kind", string(o.Kind), string(n.Kind),
			"the recipes name and use their nodes differently")
		return
	}
	for _, r := range rules {
		if r.check != nil && r.appliesTo(n.Kind) {
			r.check(c, o, n)
		}
	}
}

// removed reports a resource that the new version no longer declares. A
// new resource of another kind on the same nodes would misread the old
// processes' nodes: that breaks.
func (c *comparison) removed(o *spec.Resource, added []*spec.Resource) {
	msg := fmt.Sprintf("removed (old line %d)", o.Pos.Line)
	for _, n := range added {
		if pathProblem(o.Segments, n.Segments) != "" {
			continue
		}
		if n.Kind != o.Kind {
			c.add(Finding{Pos: n.KindPos, Field: field(n, "kind"), Severity: Breaking,
				Msg: fmt.Sprintf("new resource %s uses the nodes of removed resource %s (old line %d) as a %s; old processes use them as a %s",
					n.Name, o.Name, o.Pos.Line, n.Kind, o.Kind),
				Old: string(o.Kind), New: string(n.Kind)})
			continue
		}
		msg += fmt.Sprintf("; new resource %s (line %d) has its kind and path: if it is a rename, nothing else may change", n.Name, n.Pos.Line)
	}
	c.add(Finding{Field: "resources." + o.Name, Severity: Warning, Msg: msg,
		Old: string(o.Kind) + " " + o.Path, oldLine: o.Pos.Line})
}

// add records a finding in the new spec's file.
func (c *comparison) add(f Finding) {
	f.File = c.new.Spec.File
	c.findings = append(c.findings, f)
}

// field is the field path of a resource's field.
func field(r *spec.Resource, name string) string {
	return "resources." + r.Name + "." + name
}

// changed reports field of a resource changed from oldText to newText, at
// the field in the new spec: "<field> changed from <old> (old line N) to
// <new>: <why>".
func (c *comparison) changed(o, n *spec.Resource, name, oldText, newText, why string) {
	c.changedAt(o, n, name, name, oldText, newText, why)
}

// changedAt is changed for a finding about field name whose message calls
// it label.
func (c *comparison) changedAt(o, n *spec.Resource, name, label, oldText, newText, why string) {
	pos, _ := c.new.valuePos(n, name)
	c.add(Finding{Pos: pos, Field: field(n, name), Severity: Breaking,
		Msg: fmt.Sprintf("%s changed from %s to %s: %s", label, c.oldValue(o, name, oldText), c.newValue(n, name, newText), why),
		Old: oldText, New: newText})
}

// oldValue describes an old value for a message: "3 (old line 9)", or
// "curator (old default)" when the old spec did not write the field.
func (c *comparison) oldValue(o *spec.Resource, name, text string) string {
	pos, written := c.old.valuePos(o, name)
	if !written {
		return text + " (old default)"
	}
	return fmt.Sprintf("%s (old line %d)", text, pos.Line)
}

// newValue describes a new value for a message: the value, marked as the
// default when the new spec does not write the field.
func (c *comparison) newValue(n *spec.Resource, name, text string) string {
	if _, written := c.new.valuePos(n, name); !written {
		return text + " (the default)"
	}
	return text
}
