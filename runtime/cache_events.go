package runtime

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// CacheEventKind is what a cache event reports.
type CacheEventKind uint8

// The kinds of cache events.
const (
	// CacheAdded: an instance appeared (or, for a new reader, is there).
	CacheAdded CacheEventKind = iota + 1
	// CacheChanged: an instance's data or stat changed (a node deleted
	// and created again between two reads is a change: its Czxid tells).
	CacheChanged
	// CacheRemoved: an instance went.
	CacheRemoved
	// CacheGap: the cache may have missed changes (a new connection, a new
	// session, more changes than it could keep track of) and resyncs:
	// the events up to the next CacheSynced bring it to the server's
	// state, possibly with changes folded together or left out (a node
	// created and deleted during the gap).
	CacheGap
	// CacheSynced: the cache reflects the server's state at Zxid: after
	// the first load, after each gap, and at the end of a new reader's
	// initial Added events.
	CacheSynced
	// CacheFailed: the cache stopped (Err says why: ErrCacheFull); the
	// channel closes after it.
	CacheFailed
)

// String returns the kind's name: "added", "changed", ...
func (k CacheEventKind) String() string {
	if k >= CacheAdded && k <= CacheFailed {
		return [...]string{"added", "changed", "removed", "gap", "synced", "failed"}[k-CacheAdded]
	}
	return "unknown"
}

// CacheEvent is one event of a cache's stream (Cache.Events).
type CacheEvent[K comparable, T any] struct {
	Kind CacheEventKind
	// Key, Path, Value, Stat and Err are the instance's (Added, Changed:
	// as it is now; Removed: as it was last), as in CacheEntry.
	Key   K
	Path  string
	Value T
	Stat  zk.Stat
	Err   error // Added, Changed: the decoding error; Failed: why the cache stopped
	// Zxid is, for Added and Changed, the zxid of the write that made
	// the value (Stat.Mzxid); for Synced and Gap, the zxid the cache
	// reflected; for Removed, 0 (ZooKeeper's notifications carry no zxid).
	Zxid int64
	// Merged counts the changes folded into this event because the
	// reader had not taken the earlier ones yet (0: none): it tells the
	// net change since the last event of this key the reader took.
	Merged int
}

// Events returns a stream of the cache's events for one reader: first an
// Added event for every instance held (in path order) and, if the cache
// is synced, a Synced event; then every change as the cache applies it.
// It never blocks the cache: a reader slower than the changes gets, per
// key, the net change since the last event of that key it took (Merged
// says how many were folded; an instance added and removed before the
// reader took the Added event is dropped, counted in Stats().Coalesced);
// the pending events are bounded by the number of keys. A Gap is never
// dropped: gaps not taken yet are one Gap event (Merged counts the
// others), and a Synced not taken yet gives way to a later Gap, whose own
// Synced follows once the cache has resynced. The channel is closed when
// ctx ends (the events not taken are dropped) or after a Failed event.
func (c *Cache[K, T]) Events(ctx context.Context) <-chan CacheEvent[K, T] {
	sub := &cacheSub[K, T]{byPath: map[string]*subItem[K, T]{}, wake: make(chan struct{}, 1)}
	out := make(chan CacheEvent[K, T])
	c.mu.Lock()
	entries := make([]*CacheEntry[K, T], 0, len(c.nodes))
	for _, e := range c.nodes {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *CacheEntry[K, T]) int { return strings.Compare(a.Path, b.Path) })
	for _, e := range entries {
		sub.push(entryEvent(CacheAdded, e))
	}
	if c.err != nil {
		sub.push(CacheEvent[K, T]{Kind: CacheFailed, Err: c.err})
	} else {
		if c.loaded && !c.inGap {
			sub.push(CacheEvent[K, T]{Kind: CacheSynced, Zxid: c.zxid})
		}
		c.subs[sub] = struct{}{}
	}
	c.mu.Unlock()
	go func() {
		defer close(out)
		sub.pump(ctx, out)
		c.mu.Lock()
		delete(c.subs, sub)
		c.stats.Coalesced += sub.coalesced
		c.mu.Unlock()
	}()
	return out
}

// entryEvent is the event of kind k for e.
func entryEvent[K comparable, T any](k CacheEventKind, e *CacheEntry[K, T]) CacheEvent[K, T] {
	ev := CacheEvent[K, T]{Kind: k, Key: e.Key, Path: e.Path, Value: e.Value, Stat: e.Stat, Err: e.Err}
	if k != CacheRemoved {
		ev.Zxid = e.Stat.Mzxid
	}
	return ev
}

// emitLocked hands ev to every reader; c.mu is held.
func (c *Cache[K, T]) emitLocked(ev CacheEvent[K, T]) {
	for sub := range c.subs {
		sub.push(ev)
	}
}

// subItem is one pending event of a reader.
type subItem[K comparable, T any] struct {
	ev   CacheEvent[K, T]
	dead bool // folded away
}

// cacheSub is one reader's pending events, folded per key.
type cacheSub[K comparable, T any] struct {
	mu        sync.Mutex
	items     []*subItem[K, T] // in order; dead ones skipped
	dead      int              // dead items in items
	byPath    map[string]*subItem[K, T]
	gap       *subItem[K, T] // the pending Gap, if any
	synced    *subItem[K, T] // the pending Synced, if any
	coalesced int64
	wake      chan struct{}
}

// push adds ev to the pending events, folding it into the pending event
// of its key or kind.
func (s *cacheSub[K, T]) push(ev CacheEvent[K, T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Kind {
	case CacheGap:
		s.kill(s.synced) // the resync ends with a later Synced
		s.synced = nil
		if s.gap != nil {
			s.gap.ev.Merged++
			break
		}
		s.gap = s.append(ev)
	case CacheSynced:
		s.kill(s.synced)
		s.synced = s.append(ev)
	case CacheFailed:
		s.append(ev)
	default:
		if it := s.byPath[ev.Path]; it != nil {
			s.fold(it, ev)
		} else {
			s.byPath[ev.Path] = s.append(ev)
		}
	}
	s.compact()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// fold folds ev into it, the pending event of the same key: the net
// change from what the reader took last.
func (s *cacheSub[K, T]) fold(it *subItem[K, T], ev CacheEvent[K, T]) {
	s.coalesced++
	kind := ev.Kind
	switch {
	case it.ev.Kind == CacheAdded && ev.Kind == CacheRemoved:
		delete(s.byPath, ev.Path) // the reader never saw it
		s.kill(it)
		return
	case it.ev.Kind == CacheAdded:
		kind = CacheAdded
	case it.ev.Kind == CacheRemoved && ev.Kind == CacheAdded:
		kind = CacheChanged
	}
	merged := it.ev.Merged + ev.Merged + 1
	it.ev = ev
	it.ev.Kind, it.ev.Merged = kind, merged
}

func (s *cacheSub[K, T]) append(ev CacheEvent[K, T]) *subItem[K, T] {
	it := &subItem[K, T]{ev: ev}
	s.items = append(s.items, it)
	return it
}

func (s *cacheSub[K, T]) kill(it *subItem[K, T]) {
	if it != nil && !it.dead {
		it.dead = true
		s.dead++
	}
}

// compact drops the dead items once they are half of the pending ones.
func (s *cacheSub[K, T]) compact() {
	if s.dead*2 < len(s.items) || s.dead < 16 {
		return
	}
	s.items = slices.DeleteFunc(s.items, func(it *subItem[K, T]) bool { return it.dead })
	s.dead = 0
}

// next takes the first pending event; false when there is none.
func (s *cacheSub[K, T]) next() (CacheEvent[K, T], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.items) > 0 {
		it := s.items[0]
		s.items[0] = nil
		s.items = s.items[1:]
		if it.dead {
			s.dead--
			continue
		}
		switch it {
		case s.gap:
			s.gap = nil
		case s.synced:
			s.synced = nil
		case s.byPath[it.ev.Path]:
			delete(s.byPath, it.ev.Path)
		}
		return it.ev, true
	}
	s.items = nil
	return CacheEvent[K, T]{}, false
}

// pump delivers the pending events to out until ctx ends or a Failed
// event is delivered.
func (s *cacheSub[K, T]) pump(ctx context.Context, out chan<- CacheEvent[K, T]) {
	for {
		ev, ok := s.next()
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case out <- ev:
		case <-ctx.Done():
			return
		}
		if ev.Kind == CacheFailed {
			return
		}
	}
}
