package runtime

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// A cache learns of changes from the session's events (Ops.Listen): each
// notification marks a path to read again, and each new connection asks
// for a resync (its watches are gone). The feed numbers the events as they
// come, so that a read can tell which of them it covers: a read sent after
// event n saw the effect of every change whose notification was event n
// or earlier (ZooKeeper sends a connection's notifications before the
// reply to any later request). A mark stays until a read covering its
// latest event has completed; so "every event up to n is resolved" (no
// mark and no resync left with an event at or before n) means the cache
// reflects every change notified up to n. Sync and the resync's end wait
// for that (await).

// cacheMark is what is left to read of one path.
type cacheMark struct {
	since    uint64 // the first event not covered by a completed read
	last     uint64 // the latest event; a read must cover it
	queued   bool   // in the queue
	reading  bool   // taken by a read that has not completed
	notified bool   // a notification named the path since it was last taken
	// gone: the latest event marking the path is a persistent watch's
	// notification of its deletion; the path is an instance. Until an
	// event marks it again, the node is known missing without a read.
	gone bool
}

// takenMark is a mark handed to a read.
type takenMark struct {
	path     string
	since    uint64
	notified bool // a notification named the path: a one-shot watch on it fired
	gone     bool // the node is known missing as of the take's cover: no read
}

// cacheFeed is a cache's events during one run, as marks to read.
type cacheFeed struct {
	tmpl    Template
	limit   int                         // the most marks kept; beyond, a resync replaces them
	subtree func(instance, path string) // WithSubtree's, or nil
	oneShot atomic.Bool                 // nodes on the way to instances are read too (one-shot watches)

	mu       sync.Mutex
	seq      uint64 // events counted
	marks    map[string]*cacheMark
	queue    []string      // paths to read, oldest mark first
	resync   uint64        // the event that asked for a resync not taken yet; 0: none
	placing  uint64        // the event of the resync taken and not placed yet; 0: none
	changed  chan struct{} // closed and replaced when a mark or the resync goes
	wake     chan struct{} // tells the run there is work
	lost     bool          // the connection was lost since takeLost
	conns    uint64        // connections established (StateHasSession) during the run
	notified int64         // notifications that marked a path
}

func newCacheFeed(t Template, limit int) *cacheFeed {
	return &cacheFeed{tmpl: t, limit: limit, marks: map[string]*cacheMark{},
		changed: make(chan struct{}), wake: make(chan struct{}, 1)}
}

// listen is the session's event callback (Ops.Listen): it must not block.
func (f *cacheFeed) listen(ev zk.Event) {
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateHasSession:
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
			f.askResync()
		case zk.StateDisconnected, zk.StateExpired:
			f.mu.Lock()
			f.lost = true
			f.mu.Unlock()
			f.signal()
		}
		return
	case zk.EventNotWatching:
		return
	}
	if f.subtree != nil {
		if inst, ok := f.tmpl.instanceOf(ev.Path); ok {
			f.subtree(inst, ev.Path)
		}
	}
	n, ok := f.tmpl.depth(ev.Path)
	if !ok || n < f.tmpl.Len() && !f.oneShot.Load() {
		return // not ours; or a node on the way, which a persistent watch does not need
	}
	f.mu.Lock()
	f.seq++
	f.notified++
	if !f.markLocked(ev.Path, f.seq, f.seq) {
		f.overflowLocked()
	} else {
		m := f.marks[ev.Path]
		m.notified = true
		// A persistent watch notifies every later change of the path, so
		// until one does the instance stays deleted: the run removes it
		// without reading it (as the peers' caches do). In one-shot mode
		// the read sets the watches again, so it is read.
		m.gone = ev.Type == zk.EventNodeDeleted && n == f.tmpl.Len() && !f.oneShot.Load()
	}
	f.mu.Unlock()
	f.signal()
}

// askResync asks for a resync: the connection's watches, or the state the
// cache was told of, may have missed changes.
func (f *cacheFeed) askResync() {
	f.mu.Lock()
	f.seq++
	if f.resync == 0 {
		f.resync = f.seq
	}
	f.mu.Unlock()
	f.signal()
}

func (f *cacheFeed) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// markLocked marks path, from event since to event last; false when the
// feed is full.
func (f *cacheFeed) markLocked(path string, since, last uint64) bool {
	m := f.marks[path]
	if m == nil {
		if len(f.marks) >= f.limit {
			return false
		}
		m = &cacheMark{since: since}
		f.marks[path] = m
	}
	m.since = min(m.since, since)
	m.last = max(m.last, last)
	m.gone = false // listen sets it again for a deletion
	if !m.queued && !m.reading {
		m.queued = true
		f.queue = append(f.queue, path)
	}
	return true
}

// overflowLocked replaces every mark with a resync from the oldest one's
// event: more paths changed than the feed may hold.
func (f *cacheFeed) overflowLocked() {
	oldest := f.seq
	for _, m := range f.marks {
		oldest = min(oldest, m.since)
	}
	if f.resync == 0 || f.resync > oldest {
		f.resync = oldest
	}
	f.marks = map[string]*cacheMark{} // not clear: the table would stay
	f.queue = nil
}

// takeLost reports whether the connection was lost since the last call.
func (f *cacheFeed) takeLost() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	lost := f.lost
	f.lost = false
	return lost
}

// takeResync takes the resync asked, returning the event that asked for
// it (0: none asked) and the connections established so far. Until place
// or untake, the resync counts as unresolved from that event; a resync
// asked meanwhile is another one. A resync given back on the connection
// count parked (untake) is not taken again before the next connection.
func (f *cacheFeed) takeResync(parked uint64, isParked bool) (since, conns uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if isParked && f.conns == parked {
		return 0, f.conns
	}
	since = f.resync
	if since != 0 {
		f.resync, f.placing = 0, since
	}
	return since, f.conns
}

// untake gives back the resync taken at since (its watch could not be
// set): it is asked again.
func (f *cacheFeed) untake(since uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.placing = 0
	if f.resync == 0 || f.resync > since {
		f.resync = since
	}
}

// place places the resync taken at event since: it marks paths (the
// known instances and the base) from since, and every mark to read again.
// It reports false when the feed is full.
func (f *cacheFeed) place(since uint64, paths []string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.placing = 0
	var again []string
	for p, m := range f.marks {
		m.since, m.last = min(m.since, since), max(m.last, f.seq)
		m.gone = false // the watch missed what came while it was not set: read
		if !m.queued && !m.reading {
			m.queued = true
			again = append(again, p)
		}
	}
	slices.Sort(again) // queued in one order, not the map's: a simulated run replays
	f.queue = append(f.queue, again...)
	f.broadcastLocked()
	for _, p := range paths {
		if !f.markLocked(p, since, f.seq) {
			return false
		}
	}
	return true
}

// found marks paths a listing found, from event since (the listed
// node's mark's) to event last (the listing's cover). It reports false
// when the feed is full.
func (f *cacheFeed) found(paths []string, since, last uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range paths {
		if !f.markLocked(p, since, last) {
			return false
		}
	}
	return true
}

// take hands up to n queued marks to reads, with their cover: the latest
// event so far, which every one of the reads, sent after, covers. A mark
// taken gone needs no read: no event since its deletion's names the path,
// so the node is missing as of the cover.
func (f *cacheFeed) take(n int) ([]takenMark, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []takenMark
	for len(out) < n && len(f.queue) > 0 {
		p := f.queue[0]
		f.queue = f.queue[1:]
		if m := f.marks[p]; m != nil && m.queued {
			m.queued, m.reading = false, true
			out = append(out, takenMark{path: p, since: m.since, notified: m.notified, gone: m.gone})
			m.notified = false
		}
	}
	if len(f.queue) == 0 {
		f.queue = nil // let the backing array go
	}
	return out, f.seq
}

// resolve ends a read of path that covered events up to cover: the mark
// goes, or stays for the events after cover.
func (f *cacheFeed) resolve(path string, cover uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.marks[path]
	if m == nil {
		return
	}
	m.reading = false
	if m.last <= cover {
		delete(f.marks, path) // told by settled
		if len(f.marks) == 0 {
			f.marks = map[string]*cacheMark{} // a map keeps its table: let a resync's go
		}
		return
	}
	m.since = max(m.since, cover+1)
	m.queued = true
	f.queue = append(f.queue, path)
}

// park ends a read of path that failed with the connection: the mark
// stays, unqueued, for the resync the next connection asks for.
func (f *cacheFeed) park(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.marks[path]; m != nil {
		m.reading = false
	}
}

// settled tells the waiters (await) that reads have resolved marks: once
// per batch of reads, not per mark, as each waiter checks every mark.
func (f *cacheFeed) settled() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.broadcastLocked()
}

func (f *cacheFeed) broadcastLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// now returns the latest event's number.
func (f *cacheFeed) now() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seq
}

// idle reports whether nothing is left to read: the cache reflects every
// change notified so far.
func (f *cacheFeed) idle() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.marks) == 0 && f.resync == 0 && f.placing == 0
}

// resolved reports whether every event up to n is resolved.
func (f *cacheFeed) resolved(n uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.resolvedLocked(n)
}

// requeue queues path again after a read that failed for another reason
// than the connection.
func (f *cacheFeed) requeue(path string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if m := f.marks[path]; m != nil && !m.queued {
		m.reading, m.queued = false, true
		f.queue = append(f.queue, path)
	}
}

// resolvedLocked reports whether every event up to n is resolved.
func (f *cacheFeed) resolvedLocked(n uint64) bool {
	if f.resync != 0 && f.resync <= n || f.placing != 0 && f.placing <= n {
		return false
	}
	for _, m := range f.marks {
		if m.since <= n {
			return false
		}
	}
	return true
}

// await waits until every event up to n is resolved; it returns ctx's
// error if ctx ends first, and false if stop closes first.
func (f *cacheFeed) await(ctx context.Context, n uint64, stop <-chan struct{}) (bool, error) {
	for {
		f.mu.Lock()
		ok, ch := f.resolvedLocked(n), f.changed
		f.mu.Unlock()
		if ok {
			return true, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false, ctx.Err()
		case <-stop:
			return false, nil
		}
	}
}

// counts returns the notifications that marked a path, and the marks
// left.
func (f *cacheFeed) counts() (notified int64, pending int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.notified, len(f.marks)
}
