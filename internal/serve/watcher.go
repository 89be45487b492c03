package serve

import (
	"context"
	"path"
	"strings"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/spec"
)

// owner is what a watch stands for: a resource's instance (path set), or
// the discovery of a resource's instances (path empty).
type owner struct {
	res  string
	path string
}

// arm sets the watches of wt for the instance in of r, in one-shot mode
// (ZooKeeper 3.5), where no persistent watch reports what changes below
// the instances: through the mirror's cache of r (runtime.Cache.WatchBelow),
// which sets each watch once however many instances ask for it, and tells
// t when it fires. wt's "*" segments are expanded against the children of
// the node before them, whose children watch it sets too, so that a new
// match is noticed. listed caches the listings of this pass.
func arm(ctx context.Context, mir *inspect.Mirror, r *spec.Resource, in inspect.Instance, wt inspect.Watch, t *touches, listed map[string][]string) error {
	notify := func() { t.add(r, in.Path) }
	targets := []string{""}
	for _, seg := range strings.Split(strings.TrimPrefix(wt.Path, "/"), "/") {
		var next []string
		for _, at := range targets {
			if !strings.Contains(seg, "*") {
				next = append(next, at+"/"+seg)
				continue
			}
			parent := at
			if parent == "" {
				parent = "/"
			}
			kids, ok := listed[parent]
			if !ok {
				var err error
				if kids, err = mir.WatchBelow(ctx, r, parent, false, true, in.Path, notify); err != nil {
					return err
				}
				listed[parent] = kids
			}
			for _, kid := range kids {
				if m, _ := path.Match(seg, kid); m {
					next = append(next, at+"/"+kid)
				}
			}
		}
		targets = next
	}
	for _, at := range targets {
		if wt.Children {
			if _, err := mir.WatchBelow(ctx, r, at, false, false, in.Path, notify); err != nil {
				return err
			}
		}
		if wt.Data {
			if _, err := mir.WatchBelow(ctx, r, at, true, false, in.Path, notify); err != nil {
				return err
			}
		}
	}
	return nil
}
