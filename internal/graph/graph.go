// Package graph draws a spec's coordination topology: resources grouped by
// the first segment of their path, each labelled with its name, kind, path
// layout and the settings that shape it (leases, size, priorities,
// participants, payload types, revocation, layout). What each kind shows is
// its row of the spec's kinds table (spec.KindInfo.Settings): nothing here
// is per kind.
package graph

import (
	"fmt"
	"strings"

	"github.com/zkgen/zkgen/spec"
)

// Group is the resources under one first path segment, in spec order: a
// box of the drawing.
type Group struct {
	Name      string // "/locks"
	Resources []*spec.Resource
}

// Groups returns the boxes of the drawing, in spec order.
func Groups(s *spec.Spec) []Group { return groups(s) }

func groups(s *spec.Spec) []Group {
	var out []Group
	index := map[string]int{}
	for _, r := range s.Resources {
		g := "/"
		if segs := strings.Split(strings.TrimPrefix(layout(r), "/"), "/"); len(segs) > 1 {
			g = "/" + segs[0]
		}
		i, ok := index[g]
		if !ok {
			i = len(out)
			index[g] = i
			out = append(out, Group{Name: g})
		}
		out[i].Resources = append(out[i].Resources, r)
	}
	return out
}

// layout renders a resource path relative to the root with typed
// parameters; a service's is its own node, below its base.
func layout(r *spec.Resource) string {
	if r.Kind == spec.KindService {
		return r.Path + "/" + r.ServiceName
	}
	return r.Path
}

// Mermaid renders the topology as a Mermaid flowchart.
func Mermaid(s *spec.Spec) string {
	var b strings.Builder
	esc := func(t string) string {
		return strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;").Replace(t)
	}
	b.WriteString("flowchart LR\n")
	fmt.Fprintf(&b, "  subgraph root[\"%s\"]\n", esc(s.RootPath()))
	for i, g := range groups(s) {
		fmt.Fprintf(&b, "    subgraph g%d[\"%s\"]\n", i, esc(g.Name))
		for _, r := range g.Resources {
			lines := append([]string{"<b>" + esc(r.Name) + "</b> · " + string(r.Kind), esc(layout(r))}, mapEsc(r.Settings(), esc)...)
			fmt.Fprintf(&b, "      %s[\"%s\"]\n", r.Name, strings.Join(lines, "<br/>"))
		}
		b.WriteString("    end\n")
	}
	b.WriteString("  end\n")
	return b.String()
}

// DOT renders the topology as a Graphviz digraph.
func DOT(s *spec.Spec) string {
	var b strings.Builder
	q := func(t string) string {
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(t) + `"`
	}
	b.WriteString("digraph zkgen {\n  rankdir=LR;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n")
	fmt.Fprintf(&b, "  subgraph cluster_root {\n    label=%s;\n", q(s.RootPath()))
	for i, g := range groups(s) {
		fmt.Fprintf(&b, "    subgraph cluster_%d {\n      label=%s;\n", i, q(g.Name))
		for _, r := range g.Resources {
			lines := append([]string{r.Name + " (" + string(r.Kind) + ")", layout(r)}, r.Settings()...)
			fmt.Fprintf(&b, "      %s [label=%s];\n", r.Name, q(strings.Join(lines, "\n")))
		}
		b.WriteString("    }\n")
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

func mapEsc(ss []string, esc func(string) string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = esc(s)
	}
	return out
}
