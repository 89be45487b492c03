package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// apply applies the read of instance path: it adds, changes or removes
// its entry and tells the readers. A read older than the entry (a lower
// Czxid, or the same Czxid and a lower Mzxid) changes nothing: the cache
// never goes back. Only the run's goroutine calls it, so it reads the
// nodes without the lock.
func (c *Cache[K, T]) apply(path string, rd cacheRead) error {
	p, ok := c.tmpl.Match(path)
	if !ok {
		return nil
	}
	old := c.nodes[path]
	if !rd.found {
		if old != nil {
			c.mu.Lock()
			c.removeLocked(old)
			c.appliedLocked(old, nil)
			c.emitLocked(entryEvent(CacheRemoved, old))
			c.mu.Unlock()
		}
		return nil
	}
	if old != nil && (rd.stat.Czxid < old.Stat.Czxid || rd.stat.Czxid == old.Stat.Czxid && rd.stat.Mzxid <= old.Stat.Mzxid) {
		return nil
	}
	if old == nil && len(c.nodes) >= c.cfg.maxNodes {
		return c.fail(fmt.Errorf("%w: %s would be node %d, over the bound of %d (WithMaxNodes)", ErrCacheFull, path, len(c.nodes)+1, c.cfg.maxNodes))
	}
	e := &CacheEntry[K, T]{Key: c.key(p), Path: path, Stat: *rd.stat}
	keyIsPath := false
	if c.keyedByPath() {
		if ks, _ := any(e.Key).(string); ks == path {
			e.Key, keyIsPath = any(path).(K), true // one copy of the string, not two
		}
	}
	if v, err := c.codec.Decode(rd.data); err != nil {
		e.Err = decodeError(path, err)
	} else {
		e.Value = v
	}
	kind := CacheAdded
	c.mu.Lock()
	defer c.mu.Unlock()
	if old != nil {
		c.removeLocked(old)
		kind = CacheChanged
	}
	if c.keyedByPath() && !keyIsPath {
		c.keyByMapLocked()
	}
	c.nodes[path] = e
	if !c.keyedByPath() {
		c.byKey[e.Key] = e
	}
	if e.Err != nil {
		c.stats.DecodeErrors++
	}
	c.appliedLocked(old, e)
	c.emitLocked(entryEvent(kind, e))
	return nil
}

// appliedLocked tells onApply, if set, that old became cur; c.mu is held.
func (c *Cache[K, T]) appliedLocked(old, cur *CacheEntry[K, T]) {
	if c.onApply != nil {
		c.onApply(old, cur)
	}
}

// keyByMapLocked builds byKey: a key differs from its path, so Get
// needs a map by key; c.mu is held.
func (c *Cache[K, T]) keyByMapLocked() {
	c.byKey = make(map[K]*CacheEntry[K, T], len(c.nodes))
	for _, e := range c.nodes {
		c.byKey[e.Key] = e
	}
}

// removeLocked removes entry e; c.mu is held.
func (c *Cache[K, T]) removeLocked(e *CacheEntry[K, T]) {
	delete(c.nodes, e.Path)
	if !c.keyedByPath() && c.byKey[e.Key] == e {
		delete(c.byKey, e.Key)
	}
	if e.Err != nil {
		c.stats.DecodeErrors--
	}
}

// decodeError is the error of path's data that codec could not decode: it
// wraps ErrDecode and the codec's error, and names the path.
func decodeError(path string, err error) error {
	if errors.Is(err, ErrDecode) {
		return fmt.Errorf("cache: %s: %w", path, err)
	}
	return fmt.Errorf("%w: %s: %w", ErrDecode, path, err)
}

// knownPaths returns the paths of the entries (the run's goroutine only).
func (c *Cache[K, T]) knownPaths() []string {
	out := make([]string, 0, len(c.nodes)+1)
	for p := range c.nodes {
		out = append(out, p)
	}
	slices.Sort(out) // read in one order, not the map's: a simulated run replays
	return out
}

// setMode records how the run learns of changes; refused: the server
// refused persistent watches (for good: later runs start in one-shot mode).
func (c *Cache[K, T]) setMode(m CacheMode, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mode = m
	c.refused = c.refused || refused
}

// openGap tells the readers that the cache may miss changes from now on,
// unless it has not loaded yet or a gap is open already.
func (c *Cache[K, T]) openGap() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.loaded && !c.inGap && c.err == nil {
		c.inGap = true
		c.stats.Gaps++
		c.emitLocked(CacheEvent[K, T]{Kind: CacheGap, Zxid: c.zxid})
	}
}

// closeGap tells the readers that the cache reflects the server at zxid z
// (or later).
func (c *Cache[K, T]) closeGap(z int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.zxid = max(c.zxid, z)
	c.loaded, c.inGap = true, false
	c.emitLocked(CacheEvent[K, T]{Kind: CacheSynced, Zxid: c.zxid})
}

// raiseZxid raises the zxid the cache reflects to z: every change up to
// z is in it. (A gap opened since does not lower it: what the cache holds
// never goes back.)
func (c *Cache[K, T]) raiseZxid(z int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.zxid = max(c.zxid, z)
}

// fail stops the cache with err and returns it.
func (c *Cache[K, T]) fail(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
		c.emitLocked(CacheEvent[K, T]{Kind: CacheFailed, Err: err})
		clear(c.subs)
	}
	return c.err
}

// Sync waits until the cache reflects every change ZooKeeper made before
// the call, by this process or any other: read-your-writes, and more.
// It asks the server of the cache's session to catch up with the leader
// (ZooKeeper's sync) and waits until the cache has read every change
// notified before the sync's reply (a resync under way included); the
// cache's zxid is then at least the sync's. It blocks while the cache is
// not running (between two sessions under Supervise it waits for the
// next Run) and goes on through connection losses. It returns ctx's
// error if ctx ends first, and the cache's error (ErrCacheFull) if it
// stops. It sends one request, and leaves nothing in ZooKeeper.
func (c *Cache[K, T]) Sync(ctx context.Context) error {
	for n := 1; ; n++ {
		r, err := c.awaitRun(ctx)
		if err != nil {
			return err
		}
		if done, err := r.sync(ctx); done || err != nil {
			return err
		}
		if r.s.Err() != nil {
			// The run's session is over, its goroutine not yet back: wait
			// for the run's end, then for the next run. A pause would end
			// at once with the session, and Sync would spin until then.
			select {
			case <-r.done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := opsOf(r.s).Sleep(ctx, r.backoff(min(n, 10))); ctx.Err() != nil {
			return err
		}
	}
}

// awaitRun returns the cache's run, waiting for one while there is none.
func (c *Cache[K, T]) awaitRun(ctx context.Context) (*cacheRun[K, T], error) {
	for {
		c.mu.Lock()
		r, err, ch := c.run, c.err, c.runSet
		c.mu.Unlock()
		switch {
		case err != nil:
			return nil, err
		case r != nil:
			return r, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// sync is one attempt of Sync on run r; done is false when it must be
// tried again (the connection was lost, or the run ended).
func (r *cacheRun[K, T]) sync(ctx context.Context) (done bool, err error) {
	z, err := opsOf(r.s).SyncZxid(ctx, r.c.tmpl.base)
	if err != nil {
		return ctx.Err() != nil, ctx.Err()
	}
	ok, err := r.feed.await(ctx, r.feed.now(), r.done)
	if err != nil || !ok {
		return err != nil, err
	}
	if err := r.c.Err(); err != nil {
		return true, err
	}
	r.c.raiseZxid(z)
	return true, nil
}
