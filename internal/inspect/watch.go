package inspect

import (
	"context"
	"strings"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Watch is one node a live model (zkgen serve) watches to learn that an
// instance's state may have changed: a change to its children, or to its
// data or existence. Path may hold "*" segments, which stand for every
// child of the node before them that exists when the watches are set.
type Watch struct {
	Path     string
	Children bool // a children watch (creation, through an exists watch, while absent)
	Data     bool // a data watch (creation and deletion too)
}

// watchRule is a Watch relative to an instance's path: "" is the instance
// itself, "a/b" a node below it, and a rule starting with "+" a sibling
// whose name is the instance's with the rest appended.
type watchRule struct {
	rel            string
	children, data bool
}

func kids(rel string) watchRule { return watchRule{rel: rel, children: true} }
func data(rel string) watchRule { return watchRule{rel: rel, data: true} }

// Watches lists what a live model watches for the instance of r at path:
// the nodes whose changes are what Read shows. Nodes the kind's state does
// not depend on (a lock contender's data, a queue item's bytes) are not
// watched, so the number of watches grows with directories, not items.
func Watches(r *spec.Resource, path string) []Watch {
	ops := kinds[r.Kind]
	out := make([]Watch, 0, len(ops.watch))
	for _, w := range ops.watch {
		p := path
		switch {
		case strings.HasPrefix(w.rel, "+"):
			p += w.rel[1:]
		case w.rel != "":
			p = strings.TrimSuffix(path, "/") + "/" + w.rel
		}
		out = append(out, Watch{Path: p, Children: w.children, Data: w.data})
	}
	return out
}

// Read reads the live state of the instance in of r. A problem with the
// instance itself (an undecodable node) is set in the Resource's Error; the
// error returned is one Fatal may judge, for which the Resource is unset.
func Read(ctx context.Context, sess *runtime.Session, r *spec.Resource, in Instance) (Resource, error) {
	res := Resource{Name: r.Name, Kind: string(r.Kind), Path: in.Path, Params: in.Params}
	if err := read(ctx, sess, r, in.Path, &res); err != nil {
		if fatal(ctx, sess, err) || runtime.IsRecoverable(err) {
			return Resource{}, err
		}
		res.Error = err.Error()
	}
	return res, nil
}

// Placeholder is the entry of a resource with path parameters none of
// whose instances exists (Gather's NoInstances entry).
func Placeholder(r *spec.Resource) Resource {
	return Resource{Name: r.Name, Kind: string(r.Kind), Path: r.FullPath, NoInstances: true}
}

// Failed is the entry of a resource whose instances could not be listed.
func Failed(r *spec.Resource, err error) Resource {
	return Resource{Name: r.Name, Kind: string(r.Kind), Path: r.FullPath, Error: err.Error()}
}

// SetAges fills the snapshot's age fields for Taken = now.
func (s *Snapshot) SetAges(now time.Time) {
	s.Taken = now
	setAges(s)
}

// Watched reports whether zkgen serve knows what to watch for kind k.
func Watched(k spec.Kind) bool { return len(kinds[k].watch) > 0 }
