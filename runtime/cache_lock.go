package runtime

import (
	"context"
	"path"
	"slices"
	"time"
)

// A LockCache mirrors who holds and who waits for every instance of a
// lock resource (an exclusive lock or a read/write lock, in either
// layout): a Cache over the contender nodes one level below each
// instance's directory, whose states it derives from them in memory. It
// reads each contender node once when it appears (its owner metadata);
// the order of the nodes (their sequence numbers) says who holds.
type LockCache[K comparable] struct {
	nodes *Cache[lockNodeKey[K], lockNodeData]
	fam   *family
}

// lockNodeKey keys one contender node: its instance's key and its name.
type lockNodeKey[K comparable] struct {
	inst K
	name string
}

// lockNodeData is a contender node's data as the cache decodes it.
type lockNodeData struct {
	owner Owner
	known bool
}

type lockNodeCodec struct{}

func (lockNodeCodec) Encode(lockNodeData) ([]byte, error) { return nil, nil }
func (lockNodeCodec) Decode(data []byte) (lockNodeData, error) {
	o, ok := parseOwner(data)
	return lockNodeData{owner: o, known: ok}, nil
}

// LockState is one lock instance as a LockCache mirrors it: its holders
// (one for an exclusive lock; the readers before the first writer, or one
// writer, for a read/write lock) and its waiters, each in queue order. A
// Holder's Holds says which; Token is its node's creation zxid.
type LockState struct {
	Holders []Holder
	Waiters []Holder
}

// Held reports whether the instance has a holder.
func (s LockState) Held() bool { return len(s.Holders) > 0 }

// NewLockCache returns a cache of the exclusive lock instances of tmpl
// (the lock directories, as NewLock's paths), keyed by key(parameters),
// with the node names of layout (LayoutCurator or LayoutKazoo). opts
// are the Cache's: WithMaxNodes bounds the contender nodes held. It
// holds nothing until Run runs it on a session; it fails only when tmpl
// is invalid.
func NewLockCache[K comparable](tmpl Template, key func(Params) K, layout Layout, opts ...CacheOption) (*LockCache[K], error) {
	fam := curatorMutex
	if layout == LayoutKazoo {
		fam = kazooMutex
	}
	return newLockCache(tmpl, key, fam, opts)
}

// NewRWLockCache is NewLockCache for read/write lock instances (as
// NewRWLock's paths): the holders are the readers before the first
// writer, or that writer (Holder.Read tells a reader).
func NewRWLockCache[K comparable](tmpl Template, key func(Params) K, layout Layout, opts ...CacheOption) (*LockCache[K], error) {
	fam := curatorRW
	if layout == LayoutKazoo {
		fam = kazooRW
	}
	return newLockCache(tmpl, key, fam, opts)
}

func newLockCache[K comparable](tmpl Template, key func(Params) K, fam *family, opts []CacheOption) (*LockCache[K], error) {
	nodeKey := func(p Params) lockNodeKey[K] {
		inst := Params{path: path.Dir(p.path), list: p.list[:len(p.list)-1]}
		return lockNodeKey[K]{inst: key(inst), name: path.Base(p.path)}
	}
	c, err := NewCache(tmpl.Str("contender"), nodeKey, Codec[lockNodeData](lockNodeCodec{}), opts...)
	if err != nil {
		return nil, err
	}
	return &LockCache[K]{nodes: c, fam: fam}, nil
}

// Run mirrors the instances on session s until ctx or the session ends
// (Cache.Run: across sessions, call it again with the next one).
func (l *LockCache[K]) Run(ctx context.Context, s *Session) error { return l.nodes.Run(ctx, s) }

// Sync returns once the cache reflects every change ZooKeeper made before
// the call (Cache.Sync: it blocks until then, or ctx's end).
func (l *LockCache[K]) Sync(ctx context.Context) error { return l.nodes.Sync(ctx) }

// Mode returns how the cache learns of changes now (Cache.Mode).
func (l *LockCache[K]) Mode() CacheMode { return l.nodes.Mode() }

// Stats returns the counters of the cache of contender nodes (Nodes
// counts contenders, not instances).
func (l *LockCache[K]) Stats() CacheStats { return l.nodes.Stats() }

// Err returns why the cache stopped (ErrCacheFull), or nil.
func (l *LockCache[K]) Err() error { return l.nodes.Err() }

// Get returns the state of instance k from memory; false when no
// contender of k is held (the lock is free, or the cache still loading:
// see Sync).
func (l *LockCache[K]) Get(k K) (LockState, bool) {
	c := l.nodes
	c.mu.Lock()
	var es []*CacheEntry[lockNodeKey[K], lockNodeData]
	for key, e := range c.byKey {
		if key.inst == k {
			es = append(es, e)
		}
	}
	c.mu.Unlock()
	st := l.derive(es)
	return st, st.Held() || len(st.Waiters) > 0
}

// Snapshot returns every instance with a contender, in path order, with
// the zxid the contents reflect (Cache.Snapshot). Each entry's Value is
// the state, Path the instance's directory; Stat is the zero value (an
// instance is not a node the cache reads).
func (l *LockCache[K]) Snapshot() (CacheSnapshot[K, LockState], error) {
	snap, err := l.nodes.Snapshot()
	out := CacheSnapshot[K, LockState]{Zxid: snap.Zxid, Synced: snap.Synced}
	for i := 0; i < len(snap.Entries); {
		j := i + 1
		for j < len(snap.Entries) && snap.Entries[j].Key.inst == snap.Entries[i].Key.inst {
			j++
		}
		es := make([]*CacheEntry[lockNodeKey[K], lockNodeData], 0, j-i)
		for x := i; x < j; x++ {
			es = append(es, &snap.Entries[x])
		}
		if st := l.derive(es); st.Held() || len(st.Waiters) > 0 {
			out.Entries = append(out.Entries, CacheEntry[K, LockState]{Key: snap.Entries[i].Key.inst,
				Path: path.Dir(snap.Entries[i].Path), Value: st})
		}
		i = j
	}
	return out, err
}

// Len returns the number of instances with a contender.
func (l *LockCache[K]) Len() int {
	snap, _ := l.Snapshot()
	return len(snap.Entries)
}

// derive orders the contender nodes of one instance and tells holders
// from waiters; children that are not contenders of the lock's family
// are left out.
func (l *LockCache[K]) derive(es []*CacheEntry[lockNodeKey[K], lockNodeData]) LockState {
	byName := make(map[string]*CacheEntry[lockNodeKey[K], lockNodeData], len(es))
	names := make([]string, 0, len(es))
	for _, e := range es {
		byName[e.Key.name] = e
		names = append(names, e.Key.name)
	}
	cs := l.fam.sortContenders(names)
	var st LockState
	for i, c := range cs {
		e := byName[c.name]
		h := Holder{Node: e.Path, Seq: c.seq, Token: e.Stat.Czxid, Created: time.UnixMilli(e.Stat.Ctime).UTC(),
			Owner: e.Value.owner, Known: e.Value.known, Holds: l.fam.blocker(cs, i) < 0,
			Read: len(l.fam.markers) == 2 && c.kind == kindRead}
		if h.Holds {
			st.Holders = append(st.Holders, h)
		} else {
			st.Waiters = append(st.Waiters, h)
		}
	}
	return st
}

// Events returns a stream of the instances' states for one reader, as
// Cache.Events: Added when an instance gets its first contender, Changed
// when its holders or waiters change, Removed when its last contender
// goes; Gap, Synced and Failed as the underlying cache's. Each event
// carries the instance's state when the reader is handed it (the newest,
// so a slow reader gets coalesced states; a state equal to the last one
// it was handed is no event). The channel closes when ctx ends or after
// Failed.
func (l *LockCache[K]) Events(ctx context.Context) <-chan CacheEvent[K, LockState] {
	in := l.nodes.Events(ctx)
	out := make(chan CacheEvent[K, LockState])
	go func() {
		defer close(out)
		last := map[K][]string{}
		for ev := range in {
			o, ok := l.translate(ev, last)
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

// translate turns an event of a contender node into one of its instance,
// given the node names of the states last handed to the reader (updated);
// false when the instance's state did not change for the reader.
func (l *LockCache[K]) translate(ev CacheEvent[lockNodeKey[K], lockNodeData], last map[K][]string) (CacheEvent[K, LockState], bool) {
	o := CacheEvent[K, LockState]{Kind: ev.Kind, Err: ev.Err, Zxid: ev.Zxid, Merged: ev.Merged}
	switch ev.Kind {
	case CacheGap, CacheSynced, CacheFailed:
		return o, true
	}
	o.Key, o.Path = ev.Key.inst, path.Dir(ev.Path)
	st, _ := l.Get(o.Key)
	names := make([]string, 0, len(st.Holders)+len(st.Waiters))
	for _, h := range append(slices.Clip(st.Holders), st.Waiters...) {
		names = append(names, h.Node)
	}
	prev, seen := last[o.Key]
	switch {
	case len(names) == 0 && !seen:
		return o, false
	case len(names) == 0:
		delete(last, o.Key)
		o.Kind, o.Zxid = CacheRemoved, 0
	case !seen:
		o.Kind = CacheAdded
	case slices.Equal(prev, names) && ev.Kind != CacheChanged:
		return o, false
	default:
		o.Kind = CacheChanged
	}
	if len(names) > 0 {
		last[o.Key] = names
	}
	o.Value = st
	return o, true
}
