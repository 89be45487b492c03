package spec

// checkOverlaps reports each resource whose full path overlaps the path of
// an earlier one: equal to it, or a segment-wise ancestor or descendant of
// it, where a {x:string} parameter matches any segment and {x:int} matches
// an int parameter or an integer literal. Two recipes must never share
// znodes. The earliest overlapping resource is named.
func (p *parser) checkOverlaps() {
	root := newPathNode()
	for i, r := range p.spec.Resources {
		if r.Segments == nil {
			continue
		}
		if j := root.earliestOverlap(r.Segments); j >= 0 {
			prev := p.spec.Resources[j]
			p.errs = append(p.errs, &Error{File: p.file, Pos: p.pathPos[r], Field: join(join("resources", r.Name), "path"),
				Msg: "overlaps " + join("resources", prev.Name) + " (" + prev.FullPath + ")"})
		}
		root.insert(r.Segments, i)
	}
}

// pathNode is a trie of resource paths keyed by segment shape, so that
// finding overlaps does not compare every pair of resources.
type pathNode struct {
	exact   map[string]*pathNode // children by segmentKey
	params  []*pathNode          // children that are parameters
	intLits []*pathNode          // children that are integer literals
	all     []*pathNode          // every child
	owner   int                  // the first resource whose path ends here, or -1
	first   int                  // the smallest owner in this subtree, or -1
}

func newPathNode() *pathNode {
	return &pathNode{exact: map[string]*pathNode{}, owner: -1, first: -1}
}

// segmentKey identifies a segment's shape: parameters of one type are the
// same shape whatever their name. Literals never contain '{'.
func segmentKey(s Segment) string {
	if s.Param != nil {
		return "{" + s.Param.Type + "}"
	}
	return s.Literal
}

// insert adds the path of resource i (inserted in increasing order).
func (n *pathNode) insert(segs []Segment, i int) {
	if n.first < 0 {
		n.first = i
	}
	for _, s := range segs {
		child, ok := n.exact[segmentKey(s)]
		if !ok {
			child = newPathNode()
			n.exact[segmentKey(s)] = child
			n.all = append(n.all, child)
			switch {
			case s.Param != nil:
				n.params = append(n.params, child)
			case isIntLiteral(s.Literal):
				n.intLits = append(n.intLits, child)
			}
		}
		n = child
		if n.first < 0 {
			n.first = i
		}
	}
	if n.owner < 0 {
		n.owner = i
	}
}

// earliestOverlap returns the smallest resource index whose path overlaps
// segs, or -1.
func (n *pathNode) earliestOverlap(segs []Segment) int {
	best := -1
	keep := func(i int) {
		if i >= 0 && (best < 0 || i < best) {
			best = i
		}
	}
	frontier := []*pathNode{n}
	for d, s := range segs {
		var next []*pathNode
		for _, node := range frontier {
			if d > 0 {
				keep(node.owner) // a resource at a proper prefix of segs
			}
			next = append(next, node.matching(s)...)
		}
		frontier = next
	}
	for _, node := range frontier {
		keep(node.first) // a resource at segs or below it
	}
	return best
}

// matching returns the children of n whose segment overlaps s.
func (n *pathNode) matching(s Segment) []*pathNode {
	if s.Param != nil && s.Param.Type == "string" {
		return n.all
	}
	var out []*pathNode
	for _, c := range n.params {
		if c == n.exact["{string}"] || s.Param != nil || isIntLiteral(s.Literal) {
			out = append(out, c)
		}
	}
	if s.Param != nil {
		return append(out, n.intLits...)
	}
	if c, ok := n.exact[s.Literal]; ok {
		out = append(out, c)
	}
	return out
}
