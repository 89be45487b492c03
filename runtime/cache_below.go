package runtime

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Watches below the instances (WatchBelow). A persistent watch on the
// base (ZooKeeper 3.6 and later) reports every change below the instances
// to WithSubtree's function. In one-shot mode (ZooKeeper 3.5) nothing of
// the cache's stands below them, so a reader that follows what is there
// (zkgen serve: a lock's contenders, a queue's items) asks for the
// one-shot watches it needs. The run keeps the watches it set and has not
// seen fire, each with the callbacks to tell when it does, so that many
// readers of one node cost one watch and a watch standing costs no
// request; ZooKeeper itself keeps one watch of a kind per node and
// session however often it is asked for one.

// belowKey is one watch below the instances: a children watch, or a data
// watch (an exists watch while the node is missing).
type belowKey struct {
	path string
	data bool
}

// belowWatches are a run's watches below the instances.
type belowWatches struct {
	mu    sync.Mutex
	armed map[belowKey]*belowArm // set and not seen fire
}

// belowArm is one setting of a watch: whom to tell when it fires, by who.
// Two callers that set one watch at once share it (the server keeps one
// watch); whichever of their requests' watches fires first tells them.
type belowArm struct {
	fns   map[string]func()
	fired bool
}

// join adds who's notify to k's setting and reports whether k is set
// already.
func (w *belowWatches) join(k belowKey, who string, notify func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	a, ok := w.armed[k]
	if ok {
		a.fns[who] = notify
	}
	return ok
}

// held is how many watches w holds.
func (w *belowWatches) held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.armed)
}

// WatchBelow makes sure a one-shot watch stands on path, a node the
// cache's own one-shot watches do not cover (below its instances, say), on
// the session the cache runs on (it waits for a run, as Sync does): a
// children watch, or with data a data watch; either is an
// exists watch while path is missing, which fires when it is created. When
// the watch fires, the notify of each who that asked for it since it was
// set (the latest given) is called once, from a goroutine of the run's (it
// must not block), after the watch is known gone: a notify that leads to
// WatchBelow again sets it again, and misses nothing. A watch set and not
// yet fired costs no request. The watches last as long as the run: a new
// session starts with none, and the cache's resync reports what changed
// meanwhile. Their requests count in Stats' Lists and Reads, and the
// watches standing in WatchesBelow.
//
// With list (and data false) it returns path's children (nil when it is
// missing), read afresh even when the watch stood already. It is meant
// for one-shot mode (Mode); in persistent mode the cache's own watch
// covers path and WatchBelow sets no watch: it lists when asked, and
// never calls notify (WithSubtree's function hears of the changes).
func (c *Cache[K, T]) WatchBelow(ctx context.Context, path string, data, list bool, who string, notify func()) ([]string, error) {
	r, err := c.awaitRun(ctx)
	if err != nil {
		return nil, err
	}
	k := belowKey{path: path, data: data}
	if !r.feed.oneShot.Load() || r.below.join(k, who, notify) {
		if data || !list {
			return nil, nil
		}
		c.countRead(true, false)
		res, err := opsOf(r.s).ChildrenStat(ctx, path)
		if client.IsNoNode(err) {
			return nil, nil
		}
		return res.Kids, err
	}
	if !data {
		res, exists, err := opsOf(r.s).ChildrenOrExistsW(ctx, path)
		c.countRead(true, false)
		if err != nil {
			return nil, err
		}
		if !exists {
			c.countRead(false, false) // the exists request
		}
		r.waitBelow(k, who, notify, res.Watch)
		return res.Kids, nil
	}
	_, _, w, err := opsOf(r.s).ExistsW(ctx, path)
	c.countRead(false, false)
	if err != nil {
		return nil, err
	}
	r.waitBelow(k, who, notify, w)
	return nil, nil
}

// waitBelow records k as set for who's notify and, when ch delivers,
// forgets it and calls its callbacks; it stops when the run ends.
func (r *cacheRun[K, T]) waitBelow(k belowKey, who string, notify func(), ch <-chan zk.Event) {
	w := &r.below
	w.mu.Lock()
	if w.armed == nil {
		w.armed = map[belowKey]*belowArm{}
	}
	a := w.armed[k]
	if a == nil {
		a = &belowArm{fns: map[string]func(){}}
		w.armed[k] = a
	}
	a.fns[who] = notify
	w.mu.Unlock()
	go func() {
		select {
		case <-ch:
		case <-r.done:
			return
		}
		w.mu.Lock()
		if a.fired {
			w.mu.Unlock()
			return
		}
		a.fired = true
		if w.armed[k] == a {
			delete(w.armed, k)
		}
		fns := maps.Clone(a.fns)
		w.mu.Unlock()
		for _, who := range slices.Sorted(maps.Keys(fns)) {
			fns[who]()
		}
	}()
}
