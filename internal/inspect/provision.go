package inspect

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/spec"
)

// Plan is what provision does: the persistent nodes the spec needs and
// the nodes under the root that the spec does not know.
type Plan struct {
	Needed  []string // every node to provision, shallowest first, without duplicates
	Created []string // those that did not exist (and were created, unless a dry run)
	Unknown []string // nodes under the root that no declared resource explains (the topmost of each unknown subtree)
}

// Parents returns the persistent nodes a spec needs, shallowest first: the
// root, and for every resource what its kind's provisionRule says — its
// literal path up to the first parameter, its whole path when it has none,
// except for the kinds whose node's existence is state (barrier: up; config
// and counter: the value; a two-phase commit: proposed), for which it is
// the parent.
func Parents(s *spec.Spec) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		for i := 1; i <= len(p); i++ {
			if i < len(p) && p[i] != '/' {
				continue
			}
			if q := p[:i]; !seen[q] {
				seen[q] = true
				out = append(out, q)
			}
		}
	}
	if s.Root != "" {
		add(s.Root)
	}
	for _, r := range s.Resources {
		rule := kinds[r.Kind].provision
		if rule == provisionNothing {
			continue
		}
		var segs []string
		for _, seg := range r.Segments {
			if seg.Param != nil {
				break
			}
			segs = append(segs, seg.Literal)
		}
		if len(segs) == len(r.Segments) && rule == provisionParent {
			segs = segs[:len(segs)-1]
		}
		if len(segs) > 0 {
			add("/" + strings.Join(segs, "/"))
		}
	}
	return out
}

// Provision creates the spec's persistent parent nodes that are missing
// (none with dryRun) and lists the unknown nodes under the root. It is
// idempotent: a second run creates nothing, and existing nodes keep their
// ACL. New nodes get the declared ACL (see aclFor) built by bind.ZKACL, as
// generated handles build it; without one, the open ACL.
func Provision(ctx context.Context, sess *runtime.Session, s *spec.Spec, dryRun bool) (*Plan, error) {
	pl := &Plan{Needed: Parents(s)}
	for _, p := range pl.Needed {
		if dryRun {
			ok, err := sess.Exists(ctx, p)
			if err != nil {
				return pl, err
			}
			if !ok {
				pl.Created = append(pl.Created, p)
			}
			continue
		}
		created, err := sess.CreatePersistent(ctx, p, bind.ZKACL(aclFor(s, p))...)
		pl.Created = append(pl.Created, created...)
		if err != nil {
			return pl, err
		}
	}
	var err error
	pl.Unknown, err = Unknown(ctx, sess, s)
	return pl, err
}

// Unknown walks the tree under the spec's root and returns the nodes no
// declared resource explains, sorted: a node is known when it is a declared
// resource's node (whose inside belongs to its recipe and is not walked) or
// an ancestor of one. Of an unknown subtree only its top node is listed.
// Under the root "/", /zookeeper is ZooKeeper's own.
func Unknown(ctx context.Context, l Lister, s *spec.Spec) ([]string, error) {
	depth := rootDepth(s)
	var pats [][]spec.Segment
	for _, r := range s.Resources {
		pats = append(pats, r.Segments[depth:])
	}
	var unknown []string
	var walk func(path string, prefix []string) error
	walk = func(path string, prefix []string) error {
		kids, err := l.Children(ctx, path)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		slices.Sort(kids)
		for _, k := range kids {
			child := k
			if path != "/" {
				child = path + "/" + k
			} else {
				child = "/" + k
				if k == "zookeeper" {
					continue
				}
			}
			segs := append(slices.Clip(prefix), k)
			whole, partial := false, false
			for _, p := range pats {
				if !prefixMatches(p, segs) {
					continue
				}
				if len(p) == len(segs) {
					whole = true
				} else {
					partial = true
				}
			}
			switch {
			case whole:
			case partial:
				if err := walk(child, segs); err != nil {
					return err
				}
			default:
				unknown = append(unknown, child)
			}
		}
		return nil
	}
	err := walk(s.RootPath(), nil)
	return unknown, err
}

// prefixMatches reports whether names are the first len(names) segments of
// an instance of pat.
func prefixMatches(pat []spec.Segment, names []string) bool {
	if len(names) > len(pat) {
		return false
	}
	for i, n := range names {
		if p := pat[i].Param; p != nil {
			if !matches(p, n) {
				return false
			}
		} else if pat[i].Literal != n {
			return false
		}
	}
	return true
}

// aclFor returns the declared ACL of node p: the resource's own when p lies
// on the path of resources that all declare the same one, else the
// spec's top-level ACL (which may be nil: the open ACL).
func aclFor(s *spec.Spec, p string) *spec.ACL {
	var found *spec.ACL
	for _, r := range s.Resources {
		full := "/" + LiteralPrefix(r)
		if full != p && !strings.HasPrefix(full, p+"/") {
			continue
		}
		if found != nil && found != r.ACL {
			return s.ACL
		}
		found = r.ACL
	}
	if found == nil {
		return s.ACL
	}
	return found
}

// LiteralPrefix is r's path up to its first parameter, without the
// leading slash.
func LiteralPrefix(r *spec.Resource) string {
	var segs []string
	for _, seg := range r.Segments {
		if seg.Param != nil {
			break
		}
		segs = append(segs, seg.Literal)
	}
	return strings.Join(segs, "/")
}
