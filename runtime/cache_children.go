package runtime

import (
	"context"
	"path"
	"slices"
	"strings"
)

// childCache mirrors a state per instance of a template derived from the
// nodes one level below it (a lock's contenders, a group's members), or a
// fixed number of levels (a queue's items, in their buckets): a Cache over
// those nodes, keyed by their instance's key and their path below it,
// whose entries of one instance derive gives a state from, in memory. The
// kinds' caches (LockCache, GroupCache, QueueCache) embed it.
type childCache[K comparable, D, V any] struct {
	nodes *Cache[childKey[K], D]
	// instOf returns the path of the instance a node it holds is of.
	instOf func(node string) string
	// derive returns the state of an instance from its nodes held, and
	// the paths of the nodes the state shows, in its order (none: the
	// instance is not there).
	derive func(es []*CacheEntry[childKey[K], D]) (v V, shown []string)
}

// childKey keys one node below an instance: the instance's key and the
// node's name (its path below the instance, for nodes deeper than one
// level).
type childKey[K comparable] struct {
	inst K
	name string
}

// newChildCache returns the cache of the nodes below the instances of
// tmpl, their data decoded with codec.
func newChildCache[K comparable, D, V any](tmpl Template, key func(Params) K, codec Codec[D],
	derive func([]*CacheEntry[childKey[K], D]) (V, []string), opts []CacheOption) (*childCache[K, D, V], error) {
	return newSubtreeCache(tmpl.Str("node"), tmpl.Len(), key, codec, derive, opts)
}

// newSubtreeCache returns the cache of the nodes nodes matches, whose
// instances are their first inst segments; nodes' later segments must
// all be parameters.
func newSubtreeCache[K comparable, D, V any](nodes Template, inst int, key func(Params) K, codec Codec[D],
	derive func([]*CacheEntry[childKey[K], D]) (V, []string), opts []CacheOption) (*childCache[K, D, V], error) {
	return newSiblingCache(nodes, inst, "", key, codec, derive, opts)
}

// newSiblingCache is newSubtreeCache where an instance's last segment
// may also carry suffix (Template.withSibling): the nodes of that sibling
// of an instance are the instance's, named siblingMark+"/"+name.
func newSiblingCache[K comparable, D, V any](nodes Template, inst int, suffix string, key func(Params) K, codec Codec[D],
	derive func([]*CacheEntry[childKey[K], D]) (V, []string), opts []CacheOption) (*childCache[K, D, V], error) {
	below := nodes.Len() - inst
	instOf := func(node string) string {
		ip := instancePath(node, below)
		if t, ok := strings.CutSuffix(ip, suffix); ok && suffix != "" {
			return t
		}
		return ip
	}
	nodeKey := func(p Params) childKey[K] {
		ip := instancePath(p.path, below)
		name := p.path[len(ip)+1:]
		if suffix != "" && strings.HasSuffix(ip, suffix) {
			ip, name = ip[:len(ip)-len(suffix)], siblingMark+"/"+name
		}
		ik := Params{path: ip, list: p.list[:len(p.list)-below]}
		return childKey[K]{inst: key(ik), name: name}
	}
	c, err := NewCache(nodes, nodeKey, codec, opts...)
	if err != nil {
		return nil, err
	}
	return &childCache[K, D, V]{nodes: c, instOf: instOf, derive: derive}, nil
}

// siblingMark starts the names of the nodes of an instance's sibling
// (newSiblingCache): no node below an instance has a "/" in its name.
const siblingMark = "sibling"

// instancePath returns the path below levels above node p.
func instancePath(p string, below int) string {
	for range below {
		p = path.Dir(p)
	}
	return p
}

// Run mirrors the instances on session s until ctx or the session ends
// (Cache.Run: across sessions, call it again with the next one).
func (c *childCache[K, D, V]) Run(ctx context.Context, s *Session) error { return c.nodes.Run(ctx, s) }

// Sync returns once the cache reflects every change ZooKeeper made before
// the call (Cache.Sync: it blocks until then, or ctx's end).
func (c *childCache[K, D, V]) Sync(ctx context.Context) error { return c.nodes.Sync(ctx) }

// Mode returns how the cache learns of changes now (Cache.Mode).
func (c *childCache[K, D, V]) Mode() CacheMode { return c.nodes.Mode() }

// Stats returns the counters of the cache of the nodes below the
// instances (Nodes counts those nodes, not instances).
func (c *childCache[K, D, V]) Stats() CacheStats { return c.nodes.Stats() }

// Err returns why the cache stopped (ErrCacheFull), or nil.
func (c *childCache[K, D, V]) Err() error { return c.nodes.Err() }

// Get returns the state of instance k from memory; false when the
// instance is not there (no node of it held: see Sync while loading). It
// scans the nodes held.
func (c *childCache[K, D, V]) Get(k K) (V, bool) {
	v, shown := c.derive(c.entriesOf(k))
	return v, len(shown) > 0
}

// entriesOf returns copies of the entries of instance k's nodes.
func (c *childCache[K, D, V]) entriesOf(k K) []*CacheEntry[childKey[K], D] {
	c.nodes.mu.Lock()
	defer c.nodes.mu.Unlock()
	var es []*CacheEntry[childKey[K], D]
	for key, e := range c.nodes.byKey {
		if key.inst == k {
			cp := *e
			es = append(es, &cp)
		}
	}
	return es
}

// Snapshot returns every instance that is there, in path order, with the
// zxid the contents reflect (Cache.Snapshot). Each entry's Value is the
// state, Path the instance's; Stat is the zero value (an instance is not
// a node the cache reads).
func (c *childCache[K, D, V]) Snapshot() (CacheSnapshot[K, V], error) {
	snap, err := c.nodes.Snapshot()
	out := CacheSnapshot[K, V]{Zxid: snap.Zxid, Synced: snap.Synced}
	// An instance's nodes are consecutive in path order, but for a
	// sibling's (newSiblingCache): group them by key.
	groups := map[K][]*CacheEntry[childKey[K], D]{}
	var order []K
	for i := range snap.Entries {
		k := snap.Entries[i].Key.inst
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], &snap.Entries[i])
	}
	for _, k := range order {
		es := groups[k]
		if v, shown := c.derive(es); len(shown) > 0 {
			out.Entries = append(out.Entries, CacheEntry[K, V]{Key: k, Path: c.instOf(es[0].Path), Value: v})
		}
	}
	slices.SortStableFunc(out.Entries, func(a, b CacheEntry[K, V]) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

// Len returns the number of instances that are there.
func (c *childCache[K, D, V]) Len() int {
	snap, _ := c.Snapshot()
	return len(snap.Entries)
}

// Events returns a stream of the instances' states for one reader, as
// Cache.Events: Added when an instance appears (its first node), Changed
// when its state changes, Removed when it goes (its last node); Gap,
// Synced and Failed as the underlying cache's. Each event carries the
// instance's state when the reader is handed it (the newest, so a slow
// reader gets coalesced states; a state showing the same nodes as the
// last one it was handed, without a change of their data, is no event).
// The channel closes when ctx ends or after Failed.
func (c *childCache[K, D, V]) Events(ctx context.Context) <-chan CacheEvent[K, V] {
	in := c.nodes.Events(ctx)
	out := make(chan CacheEvent[K, V])
	go func() {
		defer close(out)
		last := map[K][]string{}
		for ev := range in {
			o, ok := c.translate(ev, last)
			if !ok {
				continue
			}
			select {
			case out <- o:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// translate turns an event of a node into one of its instance, given the
// nodes of the states last handed to the reader (updated); false when the
// instance's state did not change for the reader.
func (c *childCache[K, D, V]) translate(ev CacheEvent[childKey[K], D], last map[K][]string) (CacheEvent[K, V], bool) {
	o := CacheEvent[K, V]{Kind: ev.Kind, Err: ev.Err, Zxid: ev.Zxid, Merged: ev.Merged}
	switch ev.Kind {
	case CacheGap, CacheSynced, CacheFailed:
		return o, true
	}
	o.Key, o.Path = ev.Key.inst, c.instOf(ev.Path)
	v, shown := c.derive(c.entriesOf(o.Key))
	prev, seen := last[o.Key]
	switch {
	case len(shown) == 0 && !seen:
		return o, false
	case len(shown) == 0:
		delete(last, o.Key)
		o.Kind, o.Zxid = CacheRemoved, 0
	case !seen:
		o.Kind = CacheAdded
	case slices.Equal(prev, shown) && ev.Kind != CacheChanged:
		return o, false
	default:
		o.Kind = CacheChanged
	}
	if len(shown) > 0 {
		last[o.Key] = shown
	}
	o.Value, o.Err = v, nil
	return o, true
}
