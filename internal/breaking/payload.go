package breaking

import (
	"fmt"

	"github.com/zkgen/zkgen/spec"
)

// The payload type fields of the kinds that have one.
func itemOf(r *spec.Resource) *spec.TypeRef    { return r.Item }
func payloadOf(r *spec.Resource) *spec.TypeRef { return r.Payload }
func memberOf(r *spec.Resource) *spec.TypeRef  { return r.Member }
func valueOf(r *spec.Resource) *spec.TypeRef   { return r.Value }

// payload returns the check of a payload type field: old data must decode
// as the new type, and keep every value, and the other way round (old and
// new processes read each other's data).
//
// Payloads are stored raw for bytes, string and a payload left out (all
// interchangeable), as JSON for everything else. Declared types are
// compared by structure: every old field (by its JSON name) must still be
// there with a type compared the same way; new fields are safe (an old
// process ignores them). A go_type is opaque: only the same go_type is
// known to be safe.
func payload(name string, get func(*spec.Resource) *spec.TypeRef) func(c *comparison, o, n *spec.Resource) {
	return func(c *comparison, o, n *spec.Resource) {
		ot, nt := get(o), get(n)
		if isRaw(ot) && isRaw(nt) {
			return
		}
		if declared(ot) && declared(nt) && !ot.Slice && !nt.Slice {
			for _, d := range fieldChanges(ot.Decl, nt.Decl, "", map[[2]*spec.Type]bool{}) {
				c.fieldChanged(o, n, name, ot, d)
			}
			return
		}
		if !sameRef(ot, nt) {
			c.changed(o, n, name, refText(ot), refText(nt), "old data would no longer decode, or would decode to other values")
		}
	}
}

// isRaw reports whether a payload is stored as raw bytes: bytes, string, or
// left out.
func isRaw(t *spec.TypeRef) bool {
	return t == nil || t.Decl == nil && !t.Slice && (t.Name == "bytes" || t.Name == "string")
}

// declared reports whether t is a type declared with fields.
func declared(t *spec.TypeRef) bool { return t != nil && t.Decl != nil && t.Decl.GoType == "" }

// sameRef reports whether two references are the same type without
// looking into declared fields: the same builtin, or the same go_type, and
// both slices or neither.
func sameRef(a, b *spec.TypeRef) bool {
	switch {
	case a == nil || b == nil:
		return a == b
	case a.Slice != b.Slice || (a.Decl == nil) != (b.Decl == nil):
		return false
	case a.Decl == nil:
		return a.Name == b.Name
	}
	return a.Decl.GoType != "" && a.Decl.GoType == b.Decl.GoType
}

// refText describes a type reference for a message: the builtin or declared
// name, "go_type import/path.Name", []T of those; bytes when it is not set.
func refText(t *spec.TypeRef) string {
	if t == nil {
		return "bytes"
	}
	s := t.Name
	if t.Decl != nil && t.Decl.GoType != "" {
		s = "go_type " + t.Decl.GoType
	}
	if t.Slice {
		s = "[]" + s
	}
	return s
}

// fieldChange is one field of a declared type that old and new processes
// would not agree on.
type fieldChange struct {
	path string      // dotted JSON path of the field: attempt, meta.owner, kids[].name
	old  *spec.Field // the old field
	new  *spec.Field // the new field; nil when removed or renamed
}

// fieldChanges compares two declared types field by field. seen holds the
// pairs already being compared, so that recursive types end.
func fieldChanges(o, n *spec.Type, prefix string, seen map[[2]*spec.Type]bool) []fieldChange {
	if seen[[2]*spec.Type{o, n}] {
		return nil
	}
	seen[[2]*spec.Type{o, n}] = true
	var out []fieldChange
	for _, of := range o.Fields {
		path := prefix + of.Name
		nf := fieldNamed(n, of.Name)
		switch {
		case nf == nil:
			out = append(out, fieldChange{path: path, old: of})
		case declared(&of.Type) && declared(&nf.Type) && of.Type.Slice == nf.Type.Slice:
			if of.Type.Slice {
				path += "[]"
			}
			out = append(out, fieldChanges(of.Type.Decl, nf.Type.Decl, path+".", seen)...)
		case !sameRef(&of.Type, &nf.Type):
			out = append(out, fieldChange{path: path, old: of, new: nf})
		}
	}
	return out
}

func fieldNamed(t *spec.Type, name string) *spec.Field {
	for _, f := range t.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// fieldChanged reports one field change of the payload field name of a
// resource.
func (c *comparison) fieldChanged(o, n *spec.Resource, name string, ot *spec.TypeRef, d fieldChange) {
	pos, _ := c.new.valuePos(n, name)
	f := Finding{Pos: pos, Field: field(n, name), Severity: Breaking, Old: refText(&d.old.Type)}
	if d.new == nil {
		f.Msg = fmt.Sprintf("%s %s: field %q (old line %d) removed or renamed: new processes would drop the value old ones write, and old ones would read it as empty",
			name, ot.Name, d.path, d.old.Pos.Line)
	} else {
		f.New = refText(&d.new.Type)
		f.Msg = fmt.Sprintf("%s %s: field %q changed from %s (old line %d) to %s: old data would no longer decode, or would decode to other values",
			name, ot.Name, d.path, f.Old, d.old.Pos.Line, f.New)
	}
	c.add(f)
}
