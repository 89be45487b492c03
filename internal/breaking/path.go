package breaking

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/zkgen/zkgen/spec"
)

// pathProblem says how two paths (their segments) name different nodes, or
// is "" when they name the same ones for the same arguments. Parameters
// are matched by position: renaming one, or changing its type between int
// and string (an int is written in decimal, as the same number passed as a
// string is), names the same nodes. A parameter that keeps its name but
// moves to another position is a reordering.
func pathProblem(o, n []spec.Segment) string {
	if len(o) != len(n) {
		return fmt.Sprintf("it has %d segments instead of %d", len(n), len(o))
	}
	oldPos, newPos := map[string]int{}, map[string]int{}
	for i := range o {
		a, b := o[i], n[i]
		switch {
		case a.Param == nil && b.Param == nil && a.Literal != b.Literal:
			return fmt.Sprintf("segment %d is %q instead of %q", i+1, b.Literal, a.Literal)
		case a.Param == nil && b.Param != nil:
			return fmt.Sprintf("segment %d is parameter %s instead of %q", i+1, b.Param.Name, a.Literal)
		case a.Param != nil && b.Param == nil:
			return fmt.Sprintf("segment %d is %q instead of parameter %s", i+1, b.Literal, a.Param.Name)
		case a.Param != nil:
			oldPos[a.Param.Name], newPos[b.Param.Name] = len(oldPos), len(newPos)
		}
	}
	for _, s := range o {
		if s.Param == nil {
			continue
		}
		if j, ok := newPos[s.Param.Name]; ok && j != oldPos[s.Param.Name] {
			return fmt.Sprintf("parameter %s moved from argument %d to %d", s.Param.Name, oldPos[s.Param.Name]+1, j+1)
		}
	}
	return ""
}

// rootSegments is the number of segments the root contributes to every
// resource's Segments.
func rootSegments(s *spec.Spec) int {
	return strings.Count(s.Root, "/")
}

// checkPath reports a resource path that names other nodes. A change of
// the full path that the root alone explains is reported once, at root.
func checkPath(c *comparison, o, n *spec.Resource) {
	oseg, nseg := o.Segments, n.Segments
	if o.Kind == spec.KindService { // the service's name, last, is checkServiceName's
		oseg, nseg = oseg[:len(oseg)-1], nseg[:len(nseg)-1]
	}
	if pathProblem(oseg, nseg) == "" {
		return
	}
	why := pathProblem(oseg[rootSegments(c.old.Spec):], nseg[rootSegments(c.new.Spec):])
	if why == "" {
		return // the root moved it
	}
	c.changed(o, n, "path", strconv.Quote(o.Path), strconv.Quote(n.Path),
		why+"; old and new processes would use different nodes")
	f := &c.findings[len(c.findings)-1]
	f.Old, f.New = o.Path, n.Path
}

// root reports a changed root when it moves the nodes of a resource both
// versions declare.
func (c *comparison) root(matched [][2]*spec.Resource) {
	oldSpec, newSpec := c.old.Spec, c.new.Spec
	if oldSpec.Root == newSpec.Root {
		return
	}
	var moved []string
	for _, m := range matched {
		if pathProblem(m[0].Segments, m[1].Segments) != "" {
			moved = append(moved, m[1].Name)
		}
	}
	if len(moved) == 0 {
		return
	}
	oldText, newText := strconv.Quote(rootText(oldSpec.Root)), strconv.Quote(rootText(newSpec.Root))
	if p, ok := c.old.pos["root"]; ok {
		oldText += fmt.Sprintf(" (old line %d)", p.Line)
	} else {
		oldText += " (old default)"
	}
	pos, ok := c.new.pos["root"]
	if !ok {
		pos, newText = spec.Pos{Line: 1, Col: 1}, newText+" (the default)"
	}
	c.add(Finding{Pos: pos, Field: "root", Severity: Breaking,
		Msg: fmt.Sprintf("root changed from %s to %s: the nodes of %s move, so old and new processes would use different nodes",
			oldText, newText, list(moved)),
		Old: rootText(oldSpec.Root), New: rootText(newSpec.Root)})
}

// rootText is the root as the spec writes it ("" is "/").
func rootText(root string) string {
	return cmp.Or(root, "/")
}

// list names up to three resources: "a", "a and b", "a, b and 3 more".
func list(names []string) string {
	switch {
	case len(names) == 1:
		return names[0]
	case len(names) <= 3:
		return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return strings.Join(names[:2], ", ") + fmt.Sprintf(" and %d more", len(names)-2)
}
