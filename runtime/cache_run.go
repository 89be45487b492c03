package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// A run is a cache on one session. Its goroutine (Run's) is the only one
// that changes the cache's nodes; it does what the feed (cache_feed.go)
// asks, in this order:
//
//  1. A lost connection opens a gap (readers are told at once).
//  2. A resync (the run's start, each new connection, an overflow of the
//     feed): set the watch first (addWatch on the base, or, in one-shot
//     mode, a sync whose reply tells the zxid), then mark the base and
//     every instance held, so that every instance is read again (a
//     deleted one reads as missing) and the base is listed down to the
//     instances. The watch is set before anything is read, so a change
//     after a listing is notified: nodes created or deleted between a
//     listing and the reads of what it found are read again, or read as
//     missing.
//  3. Reads of the marked paths, up to cacheReaders at a time (an
//     instance a persistent watch notified deleted, and no event since,
//     is removed without one): an
//     instance's data (with a data watch in one-shot mode), a node's
//     children on the way to the instances (with a child watch in
//     one-shot mode; the base missing, an exists watch for its
//     creation). A read failed with the connection leaves its mark for
//     the next connection's resync.
//  4. Once every event up to the resync's is resolved, the gap closes:
//     a Synced event with the zxid of the resync's first reply.

// cacheBatch is the most marks handed to reads at once, cacheReaders the
// most reads in flight.
const (
	cacheBatch   = 2048
	cacheReaders = 128
)

// cacheListed, when set (by a test), is called with the path of each
// listing a run has read, before it marks what the listing found.
var cacheListed atomic.Pointer[func(path string)]

// cacheRun is a cache running on one session.
type cacheRun[K comparable, T any] struct {
	c      *Cache[K, T]
	s      *Session
	feed   *cacheFeed
	done   chan struct{} // closed when the run ends
	syncAt uint64        // the event of the last resync placed, until its Synced; 0: none
	syncZ  int64         // the zxid of that resync's first reply
	maxZ   int64         // the greatest zxid of a stat read
	fails  int           // reads failed in a row for another reason than the connection
	holds  bool          // the run counts in the session's persistent watch on the base
	// A resync whose watch failed with the connection waits for the next
	// connection (parked, and the connection count it failed on).
	parked     bool
	parkedConn uint64
	below      belowWatches // one-shot watches below the instances (WatchBelow)

	// One-shot mode: the paths whose watch the run has set and not seen
	// fire, and whether an exists watch waits for the missing base.
	armed       map[string]bool
	baseAwaited bool
}

// cacheRead is what a read of one path found.
type cacheRead struct {
	data    []byte
	stat    *zk.Stat
	kids    []string
	found   bool
	err     error
	watched bool // the read set the path's one-shot watch
	awaited bool // an exists watch was set on the missing base
}

// Run mirrors the cache's instances through session s until ctx ends
// (then it returns nil), s ends (it returns s.Err()) or the cache stops
// (ErrCacheFull). It blocks all that time. The cache runs on one session
// at a time (ErrCacheRunning otherwise); under Supervise, call Run in the
// work function and the cache continues on each new session: its
// contents and readers stay, and the change of session is a gap. When
// Run returns, the cache keeps what it held, and readers get a Gap event
// (unless ctx ended while the session lives, or the cache stopped). Run
// removes its persistent watch from the session's connection before it
// returns, unless another cache on the session watches the same base;
// one-shot watches stay until they fire, once. Nothing else is left in
// ZooKeeper.
func (c *Cache[K, T]) Run(ctx context.Context, s *Session) error {
	r, err := c.begin(s)
	if err != nil {
		return err
	}
	remove := opsOf(s).Listen(r.feed.listen)
	r.feed.askResync()
	c.publish(r)
	err = r.loop(ctx)
	remove()
	r.unwatch()
	c.end(r, ctx.Err() != nil && s.Err() == nil)
	return err
}

// begin makes the run of c on s.
func (c *Cache[K, T]) begin(s *Session) (*cacheRun[K, T], error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.err != nil:
		return nil, c.err
	case c.run != nil:
		return nil, fmt.Errorf("%w: on session 0x%x", ErrCacheRunning, c.run.s.ID())
	}
	r := &cacheRun[K, T]{c: c, s: s, feed: newCacheFeed(c.tmpl, 2*c.cfg.maxNodes+cacheBatch), done: make(chan struct{}),
		armed: map[string]bool{}}
	r.feed.oneShot.Store(c.refused)
	r.feed.subtree = c.cfg.subtree
	c.stats.Runs++
	return r, nil
}

// publish makes r the cache's run, for Sync.
func (c *Cache[K, T]) publish(r *cacheRun[K, T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.run = r
	close(c.runSet)
	c.runSet = make(chan struct{})
}

// end ends run r: the cache is no longer told of changes, a gap unless
// quiet (ctx ended) or the cache stopped.
func (c *Cache[K, T]) end(r *cacheRun[K, T], quiet bool) {
	n, _ := r.feed.counts()
	c.mu.Lock()
	c.run = nil
	close(c.runSet)
	c.runSet = make(chan struct{})
	c.stats.Notifications += n
	c.mu.Unlock()
	close(r.done)
	if !quiet {
		c.openGap()
	}
}

// loop does the feed's work until ctx or the session ends or the cache
// stops.
func (r *cacheRun[K, T]) loop(ctx context.Context) error {
	for {
		if err := r.step(ctx); err != nil {
			return err
		}
		select {
		case <-r.feed.wake:
		case <-ctx.Done():
			return r.s.Err() // nil while the session lives
		case <-r.s.Done():
			return r.s.Err()
		}
	}
}

// step does what the feed asks now (see the protocol above).
func (r *cacheRun[K, T]) step(ctx context.Context) error {
	if r.feed.takeLost() {
		r.c.openGap()
	}
	if since, conns := r.feed.takeResync(r.parkedConn, r.parked); since != 0 {
		r.parked = false
		if err := r.resync(ctx, since, conns); err != nil {
			return err
		}
	}
	if err := r.drain(ctx); err != nil {
		return err
	}
	if r.syncAt != 0 && r.feed.resolved(r.syncAt) {
		r.c.closeGap(r.syncZ)
		r.syncAt = 0
	}
	if r.feed.idle() {
		r.c.raiseZxid(r.maxZ)
	}
	return nil
}

// resync sets the watch and marks everything to read again (see above).
// conns is the count of connections established when it was taken.
func (r *cacheRun[K, T]) resync(ctx context.Context, since, conns uint64) error {
	r.c.openGap()
	z, err := r.watch(ctx)
	if err != nil {
		r.feed.untake(since)
		if ctx.Err() == nil && r.s.Err() == nil && !client.IsRecoverable(err) {
			// Not the connection's loss: try again after a pause.
			opsOf(r.s).Log().Warn("cache: cannot set its watch; retrying", "base", r.c.tmpl.base, "err", err)
			r.fails++
			_ = opsOf(r.s).Sleep(ctx, r.backoff(min(r.fails, 10)))
			r.feed.signal()
		} else {
			// The connection's loss (or one not established yet): the
			// next connection asks for the resync again; until it comes,
			// a wake-up for other work does not try on this one. Whether
			// such a wake-up was pending would otherwise decide whether
			// the run tried again at once (cache seed=8002 under the race
			// detector's shuffle).
			r.parked, r.parkedConn = true, conns
		}
		return nil
	}
	if !r.feed.place(since, append(r.c.knownPaths(), r.c.tmpl.base)) {
		return r.c.fail(r.fullError())
	}
	r.syncAt, r.syncZ = since, z
	return nil
}

// watch sets the run's watch on the current connection and returns the
// zxid of its reply: a persistent recursive watch on the base; on a
// server that refuses it, or in one-shot mode, a sync (the one-shot
// watches are set by the reads).
func (r *cacheRun[K, T]) watch(ctx context.Context) (int64, error) {
	base := r.c.tmpl.base
	if !r.feed.oneShot.Load() && watchesOf(r.s).refusedAlready() {
		r.feed.oneShot.Store(true) // another cache on the session was refused
	}
	if !r.feed.oneShot.Load() {
		if !r.holds {
			watchesOf(r.s).hold(base)
			r.holds = true
		}
		z, err := opsOf(r.s).AddWatchRecursive(ctx, base)
		if err == nil {
			r.c.setMode(CachePersistent, false)
			return z, nil
		}
		if !errors.Is(err, ErrUnimplemented) {
			return 0, err
		}
		opsOf(r.s).Log().Warn("cache: the server refuses persistent watches (ZooKeeper before 3.6); falling back to one-shot watches", "base", base)
		watchesOf(r.s).refusedNow()
		r.feed.oneShot.Store(true)
	}
	r.c.setMode(CacheOneShot, true)
	return opsOf(r.s).SyncZxid(ctx, base)
}

// unwatch removes the run's persistent watch from the session's
// connection, unless another run on the session watches the same base.
func (r *cacheRun[K, T]) unwatch() {
	if r.holds {
		watchesOf(r.s).release(r.s, r.c.tmpl.base)
	}
}

// cacheWatches counts, for one session, the runs that keep a persistent
// watch on each base: the server keeps one per path and connection,
// which every cache on that base shares. It also remembers a refusal of
// persistent watches, so that the session's other caches do not ask
// again (ZooKeeper 3.5 closes the connection at each request).
type cacheWatches struct {
	mu      sync.Mutex
	n       map[string]int
	refused bool
}

// refusedNow notes that the session's server refused a persistent watch.
func (w *cacheWatches) refusedNow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.refused = true
}

// refusedAlready reports whether the session's server refused a
// persistent watch.
func (w *cacheWatches) refusedAlready() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refused
}

type cacheWatchesKey struct{}

func watchesOf(s *Session) *cacheWatches {
	return client.Shared(s, cacheWatchesKey{}, func() *cacheWatches { return &cacheWatches{n: map[string]int{}} })
}

// hold counts a run that watches base. It waits for a removal of the
// watch under way, so that the run's addWatch comes after it.
func (w *cacheWatches) hold(base string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n[base]++
}

// release counts a run that no longer watches base; the last one removes
// the watch from the session's connection (bounded by cacheUnwatch; a
// connection lost meanwhile took it; a server before 3.9 cannot remove
// it alone, and it lasts as long as the connection).
func (w *cacheWatches) release(s *Session, base string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n[base]--; w.n[base] > 0 {
		return
	}
	delete(w.n, base)
	if s.Err() == nil {
		ctx, cancel := context.WithTimeout(context.Background(), cacheUnwatch)
		defer cancel()
		err := opsOf(s).RemoveWatchRecursive(ctx, base)
		switch {
		case errors.Is(err, ErrUnimplemented):
			opsOf(s).Log().Debug("cache: the server cannot remove a persistent watch; it lasts as long as the connection", "base", base)
		case err != nil && !client.IsRecoverable(err):
			opsOf(s).Log().Warn("cache: could not remove its watch", "base", base, "err", err)
		}
	}
}

// cacheUnwatch bounds the removal of a cache's watch when it stops.
const cacheUnwatch = 5 * time.Second

// drain reads the marked paths until none is queued, ctx or the session
// ends, or the cache stops.
func (r *cacheRun[K, T]) drain(ctx context.Context) error {
	for {
		batch, cover := r.feed.take(cacheBatch)
		if len(batch) == 0 {
			return nil
		}
		reads := make([]cacheRead, len(batch))
		opsOf(r.s).Parallel(len(batch), cacheReaders, func(i int) {
			if !batch[i].gone {
				reads[i] = r.read(ctx, batch[i])
			} // else found false: deleted, as its notification said
		})
		failed := false
		for i, m := range batch {
			f, err := r.settle(m, reads[i], cover)
			if err != nil {
				return err
			}
			failed = failed || f
		}
		r.feed.settled()
		if ctx.Err() != nil || r.s.Err() != nil {
			return nil
		}
		if failed {
			r.fails++
			if opsOf(r.s).Sleep(ctx, r.backoff(min(r.fails, 10))) != nil {
				return nil
			}
		} else {
			r.fails = 0
		}
	}
}

// settle applies the read of mark m, which covered the events up to
// cover. failed reports a read failed for another reason than the
// connection (requeued).
func (r *cacheRun[K, T]) settle(m takenMark, rd cacheRead, cover uint64) (failed bool, err error) {
	switch {
	case rd.err == nil:
	case errors.Is(rd.err, zk.ErrNoAuth):
		opsOf(r.s).Log().Warn("cache: a node the session may not read is left out", "path", m.path)
		rd.found, rd.err = false, nil
	case errors.Is(rd.err, errBaseCreated):
		r.feed.requeue(m.path)
		return false, nil
	case client.IsRecoverable(rd.err) || r.s.Err() != nil || errors.Is(rd.err, context.Canceled) || errors.Is(rd.err, context.DeadlineExceeded):
		r.feed.park(m.path)
		return false, nil
	default:
		opsOf(r.s).Log().Warn("cache: read failed; retrying", "path", m.path, "err", rd.err)
		r.feed.requeue(m.path)
		return true, nil
	}
	r.arm(m.path, rd)
	if rd.stat != nil {
		r.maxZ = max(r.maxZ, rd.stat.Mzxid, rd.stat.Czxid, rd.stat.Pzxid)
	}
	if depth, _ := r.c.tmpl.depth(m.path); depth < r.c.tmpl.Len() {
		if h := cacheListed.Load(); h != nil && rd.found {
			(*h)(m.path)
		}
		if !r.feed.found(r.c.instancesBelow(m.path, depth, rd.kids), m.since, cover) {
			return false, r.c.fail(r.fullError())
		}
	} else if err := r.c.apply(m.path, rd); err != nil {
		return false, err
	}
	r.feed.resolve(m.path, cover)
	return false, nil
}

// arm notes the one-shot watches a read of path set or lost.
func (r *cacheRun[K, T]) arm(path string, rd cacheRead) {
	switch {
	case rd.watched:
		r.armed[path] = true
	case !rd.found:
		delete(r.armed, path) // no data or child watch on a missing node
	}
	if path == r.c.tmpl.base {
		r.baseAwaited = !rd.found && (rd.awaited || r.baseAwaited)
	}
}

// backoff is the pause before retry n of one of the run's loops: the
// session's retry policy, its jitter drawn for the place the caller stands
// (Ops.BackoffKey), so that a simulated run pauses alike on every replay.
func (r *cacheRun[K, T]) backoff(n int) time.Duration {
	return opsOf(r.s).Backoff(opsOf(r.s).BackoffKey(), n)
}

// fullError is the ErrCacheFull of r's cache.
func (r *cacheRun[K, T]) fullError() error {
	return fmt.Errorf("%w: more nodes to track under %s than the bound of %d allows (WithMaxNodes)", ErrCacheFull, r.c.tmpl, r.c.cfg.maxNodes)
}
