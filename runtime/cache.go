package runtime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
)

// A Cache mirrors the instances of a resource in memory: the nodes below
// a base path that match a Template, each decoded with a Codec and keyed
// by a value made from its path parameters.
//
// Protocol (cache_run.go). On ZooKeeper 3.6 and later it asks for one
// persistent recursive watch on the base (addWatch, sent by the session
// on its own connection), lists the tree once and then reads each node a
// notification names; on a server that refuses addWatch (3.5) it falls
// back to one-shot watches: a child watch on every node on the way to
// the instances and a data watch on each. Each new connection (the
// server drops watches with it) and each new session starts a resync,
// announced to readers as a gap. docs/caches.md states what is promised.

// Errors of caches.
var (
	// ErrCacheFull means a cache would hold more nodes than its bound
	// (WithMaxNodes). The cache has stopped: Run returns it, readers get
	// a CacheFailed event, Sync and Snapshot return it. What it held is
	// still readable with Get, as of when it stopped.
	ErrCacheFull = errors.New("cache: more nodes than its bound")
	// ErrCacheRunning means Run was called on a cache that is already
	// running on a session: a cache runs on one session at a time.
	ErrCacheRunning = errors.New("cache: already running")
)

// DefaultMaxNodes is a cache's bound on the nodes it holds unless
// WithMaxNodes says otherwise.
const DefaultMaxNodes = 100_000

// CacheOption configures a cache (NewCache).
type CacheOption func(*cacheConfig)

type cacheConfig struct {
	maxNodes int
	oneShot  bool
	subtree  func(instance, path string)
	statOnly bool // read an instance's stat, not its data (the kinds' caches)
}

// WithMaxNodes bounds the nodes a cache holds (default DefaultMaxNodes):
// one more and the cache stops with ErrCacheFull rather than grow. The
// bookkeeping of changes not yet read is bounded by the same number.
func WithMaxNodes(n int) CacheOption {
	return func(c *cacheConfig) {
		if n > 0 {
			c.maxNodes = n
		}
	}
}

// WithOneShotWatches makes a cache use one-shot watches from the start,
// without asking for a persistent watch: for ZooKeeper 3.5, which closes
// the connection on the request it does not know (the session reconnects
// at once, but its requests in flight fail with a connection loss).
func WithOneShotWatches() CacheOption { return func(c *cacheConfig) { c.oneShot = true } }

// WithSubtree makes a cache call fn with an instance's path and the
// notified path each time a notification names the instance or a node
// below it: in persistent mode every change of an instance's subtree (the
// cache itself reads only the instance), in one-shot mode only the
// instance's own changes (no watch stands below it). fn runs on the
// session's event delivery: it must not block. For readers that derive
// an instance's state from the nodes below it (zkgen serve).
func WithSubtree(fn func(instance, path string)) CacheOption {
	return func(c *cacheConfig) { c.subtree = fn }
}

// CacheMode is how a cache learns of changes.
type CacheMode uint8

// The modes of a cache.
const (
	// CacheStarting: the cache has not set its watch yet.
	CacheStarting CacheMode = iota
	// CachePersistent: one persistent recursive watch on the base
	// (ZooKeeper 3.6 and later).
	CachePersistent
	// CacheOneShot: one-shot watches, a child watch on each node on the
	// way to the instances and a data watch on each instance (ZooKeeper
	// 3.5, or WithOneShotWatches).
	CacheOneShot
)

// String returns "starting", "persistent" or "one-shot".
func (m CacheMode) String() string {
	switch m {
	case CachePersistent:
		return "persistent"
	case CacheOneShot:
		return "one-shot"
	}
	return "starting"
}

// CacheEntry is one instance a cache holds.
type CacheEntry[K comparable, T any] struct {
	Key   K
	Path  string
	Value T
	// Stat is the node's stat as read: Version is its data version,
	// Mzxid the zxid of the write that made this value, Czxid the one
	// that created the node (it changes when the node is deleted and
	// created again), EphemeralOwner its session if ephemeral.
	Stat zk.Stat
	// Err is why the data could not be decoded (it wraps ErrDecode and
	// names the path); Value is then T's zero value.
	Err error
}

// CacheSnapshot is a cache's contents at one moment.
type CacheSnapshot[K comparable, T any] struct {
	// Zxid is a zxid the contents reflect: every change with a zxid up
	// to it is in them (some later ones may be too).
	Zxid int64
	// Synced is false while the cache is loading or resyncing after a
	// gap: the contents may miss changes older than Zxid's successors.
	Synced bool
	// Entries are the instances, in path order.
	Entries []CacheEntry[K, T]
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Mode          CacheMode
	Nodes         int   // instances held
	Zxid          int64 // see CacheSnapshot.Zxid
	Synced        bool  // see CacheSnapshot.Synced
	Runs          int   // sessions the cache has run on
	Gaps          int   // gaps announced (a resync after a reconnection, a new session, an overflow)
	Notifications int64 // notifications that named one of its nodes
	Reads         int64 // reads of a node's data
	Lists         int64 // listings of a node's children
	Watches       int64 // one-shot watches set (one-shot mode; a persistent watch is not counted)
	WatchesBelow  int   // one-shot watches WatchBelow holds now, set and not yet fired
	DecodeErrors  int   // instances whose data does not decode now
	Pending       int   // nodes marked to read again
	Coalesced     int64 // events folded into later ones for slow readers
}

// Cache is a mirror of a resource's instances (see NewCache). Its methods
// are safe for concurrent use.
type Cache[K comparable, T any] struct {
	tmpl  Template
	key   func(Params) K
	codec Codec[T]
	cfg   cacheConfig

	mu    sync.Mutex
	nodes map[string]*CacheEntry[K, T]
	// byKey finds entries by key; nil while every entry's key is its
	// path (a string key, PathKey's or equal to it): nodes serves Get
	// then, as a second map of every entry was most of the memory per
	// node zkgen spent over Curator (BENCHMARKS.md). The first key that
	// differs from its path builds byKey for good (keyByMapLocked).
	byKey   map[K]*CacheEntry[K, T]
	zxid    int64
	loaded  bool // a first load completed
	inGap   bool // a gap announced and its resync not done
	mode    CacheMode
	refused bool  // the server refused addWatch: one-shot for good
	err     error // why the cache stopped (ErrCacheFull)
	run     *cacheRun[K, T]
	runSet  chan struct{} // closed and replaced when run changes
	subs    map[*cacheSub[K, T]]struct{}
	stats   CacheStats
	// onApply, if set, is told of each change of the entries, under mu
	// (an added entry: old nil; a removed one: cur nil). It must not
	// block nor call the cache. Set before Run (observe).
	onApply func(old, cur *CacheEntry[K, T])
}

// NewCache returns a cache of the instances of tmpl: the nodes whose
// paths tmpl matches, keyed by key(parameters), their data decoded with
// codec. It holds nothing until Run runs it on a session. It fails only
// when tmpl is invalid.
func NewCache[K comparable, T any](tmpl Template, key func(Params) K, codec Codec[T], opts ...CacheOption) (*Cache[K, T], error) {
	if err := tmpl.Err(); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	cfg := cacheConfig{maxNodes: DefaultMaxNodes}
	for _, o := range opts {
		o(&cfg)
	}
	c := &Cache[K, T]{tmpl: tmpl, key: key, codec: codec, cfg: cfg,
		nodes:  map[string]*CacheEntry[K, T]{},
		runSet: make(chan struct{}), subs: map[*cacheSub[K, T]]struct{}{}}
	if _, ok := any(*new(K)).(string); !ok {
		c.byKey = map[K]*CacheEntry[K, T]{}
	}
	if cfg.oneShot {
		c.mode, c.refused = CacheOneShot, true
	}
	return c, nil
}

// PathKey keys a cache by its nodes' paths: NewCache(t, PathKey, codec).
func PathKey(p Params) string { return p.Path() }

// Template returns the template the cache mirrors.
func (c *Cache[K, T]) Template() Template { return c.tmpl }

// Get returns the instance with key k from memory; false when the cache
// holds none (it may still be loading: see Sync).
func (c *Cache[K, T]) Get(k K) (CacheEntry[K, T], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.byKeyLocked(k); e != nil {
		return *e, true
	}
	return CacheEntry[K, T]{}, false
}

// keyedByPath reports whether every entry's key is its path (see byKey).
func (c *Cache[K, T]) keyedByPath() bool { return c.byKey == nil }

// byKeyLocked returns the entry with key k, or nil; c.mu is held.
func (c *Cache[K, T]) byKeyLocked(k K) *CacheEntry[K, T] {
	if c.keyedByPath() {
		return c.nodes[any(k).(string)]
	}
	return c.byKey[k]
}

// Len returns the number of instances held.
func (c *Cache[K, T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.nodes)
}

// Snapshot returns the instances held, in path order, with the zxid they
// reflect. After the cache stopped (ErrCacheFull) it returns that error
// with what the cache held then.
func (c *Cache[K, T]) Snapshot() (CacheSnapshot[K, T], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	snap := CacheSnapshot[K, T]{Zxid: c.zxid, Synced: c.loaded && !c.inGap, Entries: make([]CacheEntry[K, T], 0, len(c.nodes))}
	for _, e := range c.nodes {
		snap.Entries = append(snap.Entries, *e)
	}
	slices.SortFunc(snap.Entries, func(a, b CacheEntry[K, T]) int { return strings.Compare(a.Path, b.Path) })
	return snap, c.err
}

// observe makes fn the cache's onApply; call it before the first Run.
func (c *Cache[K, T]) observe(fn func(old, cur *CacheEntry[K, T])) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onApply = fn
}

// Mode returns how the cache learns of changes now.
func (c *Cache[K, T]) Mode() CacheMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mode
}

// Stats returns the cache's counters.
func (c *Cache[K, T]) Stats() CacheStats {
	c.mu.Lock()
	st := c.stats
	st.Mode, st.Nodes, st.Zxid, st.Synced = c.mode, len(c.nodes), c.zxid, c.loaded && !c.inGap
	for sub := range c.subs {
		sub.mu.Lock()
		st.Coalesced += sub.coalesced
		sub.mu.Unlock()
	}
	r := c.run
	c.mu.Unlock()
	if r != nil {
		n, pending := r.feed.counts()
		st.Notifications += n
		st.Pending = pending
		st.WatchesBelow = r.below.held()
	}
	return st
}

// Err returns why the cache stopped (ErrCacheFull), or nil.
func (c *Cache[K, T]) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
