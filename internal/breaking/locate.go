package breaking

import (
	"gopkg.in/yaml.v3"

	"github.com/zkgen/zkgen/spec"
)

// maxMergeDepth bounds nested merge keys, as the spec package does.
const maxMergeDepth = 8

// locate finds where the values of root and of every field of every
// resource are written in a spec that spec.Parse accepted, by field path
// ("root", "resources.jobs.item"). It resolves aliases and merge keys the
// way the spec package does: an alias value is where the alias is, and
// explicit keys win over merged ones.
func locate(data []byte) map[string]spec.Pos {
	pos := map[string]spec.Pos{}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return pos
	}
	for _, top := range entries(doc.Content[0]) {
		switch top.name {
		case "root":
			pos["root"] = posOf(top.val)
		case "resources":
			for _, r := range entries(top.val) {
				for _, f := range entries(r.val) {
					pos["resources."+r.name+"."+f.name] = posOf(f.val)
				}
			}
		}
	}
	return pos
}

// entry is one key of a mapping and its value as written (an alias is not
// resolved, so that its position is the alias's).
type entry struct {
	name string
	val  *yaml.Node
}

// entries lists the keys of a mapping, merged ones included; nil when n is
// not a mapping.
func entries(n *yaml.Node) []entry {
	var out []entry
	collect(resolve(n), map[string]bool{}, &out, 0)
	return out
}

func collect(n *yaml.Node, seen map[string]bool, out *[]entry, depth int) {
	if n == nil || n.Kind != yaml.MappingNode || depth > maxMergeDepth {
		return
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		switch {
		case k == nil || k.Kind != yaml.ScalarNode:
		case k.ShortTag() == "!!merge":
			merges = append(merges, resolve(n.Content[i+1]))
		case !seen[k.Value]:
			seen[k.Value] = true
			*out = append(*out, entry{k.Value, n.Content[i+1]})
		}
	}
	for _, m := range merges {
		if m != nil && m.Kind == yaml.SequenceNode {
			for _, it := range m.Content {
				collect(resolve(it), seen, out, depth+1)
			}
			continue
		}
		collect(m, seen, out, depth+1)
	}
}

// resolve follows aliases to the anchored node; nil for a dangling one.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i <= maxMergeDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// posOf is the 1-based position of n, never less than 1:1.
func posOf(n *yaml.Node) spec.Pos {
	return spec.Pos{Line: max(n.Line, 1), Col: max(n.Column, 1)}
}
