package client

import (
	"context"
	"path"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/wire"
)

// --- Create and list in one round trip
//
// A contender (lock, read/write lock, semaphore lease, election candidate)
// creates its node, then lists the directory to see where it stands: two
// requests, each sent once the previous reply is in. ZooKeeper answers one
// session's requests in the order it receives them, so the listing can go
// out right behind the create, without waiting for its reply: the pair
// costs one round trip instead of two.
//
// go-zookeeper has no asynchronous API: the two requests are sent from two
// goroutines, and the order in which they reach its send queue cannot be
// observed. The outcome does not depend on it. The create's reply names
// the node (its GUID-carrying prefix is unique to the attempt); when the
// listing contains that name it was taken after the create, which is
// exactly the children read the recipe makes next, and it is used. When it
// does not (the listing went first, or failed, or the create had to be
// settled after a connection loss), it is dropped and the recipe lists
// again, as it would have anyway: correct, one round trip more.
//
// The create itself is CreateProtected's, unchanged: a lost reply is
// settled by the GUID, a cancelled caller's node is removed.

// listing is a pipelined children read: its reply, once done is closed.
type listing struct {
	done chan struct{}
	r    Result
	err  error

	mark string        // text only the create's frame carries: its GUID-carrying prefix
	sent chan struct{} // closed once the create's frame is written, or the create is over
}

// CreateListed creates dir/<prefix><seq> as CreateProtected does and lists
// dir at the same time; with watch, the listing leaves a child watch on dir
// (ChildrenW). It returns the node's path and, when the listing was taken
// after the create (it contains the node), that listing; otherwise a nil
// listing, and the caller lists dir itself. An error is the create's.
//
// The listing is sent once the create's frame has been written to the
// server (the session's connection sees it go, see sentWaits), so it
// normally follows the create on the wire and holds the node; it is sent
// in any case once the create is over.
func (s *Ops) CreateListed(ctx context.Context, acl []zk.ACL, dir, prefix string, data []byte, watch bool) (string, *Result, error) {
	l := &listing{done: make(chan struct{}), mark: prefix, sent: make(chan struct{})}
	if s.pipe.listFirst.Load() {
		close(l.sent) // tests: the listing is answered before the create is sent
		go l.list(s.conn, dir, watch)
		<-l.done
	} else {
		s.sends.add(l)
		go l.list(s.conn, dir, watch)
	}
	node, err := s.CreateProtected(ctx, acl, dir, prefix, data)
	s.sends.remove(l)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return node, nil, nil // the caller's own read reports it
	case <-s.done:
		return node, nil, nil
	}
	if l.err != nil || !slices.Contains(l.r.Kids, path.Base(node)) {
		s.pipe.fallbacks.Add(1)
		return node, nil, nil
	}
	s.pipe.hits.Add(1)
	return node, &l.r, nil
}

// list sends one children read of dir once l.sent is closed (no retry: a
// failed listing is simply not used) and closes l.done when its reply is
// in.
func (l *listing) list(conn *zk.Conn, dir string, watch bool) {
	<-l.sent
	if watch {
		l.r.Kids, l.r.Stat, l.r.Watch, l.err = conn.ChildrenW(dir)
	} else {
		l.r.Kids, l.r.Stat, l.err = conn.Children(dir)
	}
	close(l.done)
}

// sentWaits holds the listings waiting for their create's frame to be
// written to the server. go-zookeeper writes one frame per Write call, on
// its one sending goroutine, in the order it sends requests: a request
// queued once a frame has been written goes out after it.
type sentWaits struct {
	n  atomic.Int32 // len(ls), read without mu on every write
	mu sync.Mutex
	ls []*listing
}

// add registers l: its sent channel is closed when a written frame carries
// l.mark, or by remove.
func (w *sentWaits) add(l *listing) {
	w.mu.Lock()
	w.ls = append(w.ls, l)
	w.n.Store(int32(len(w.ls)))
	w.mu.Unlock()
}

// remove closes l.sent if no frame did, and forgets l.
func (w *sentWaits) remove(l *listing) {
	w.mu.Lock()
	if i := slices.Index(w.ls, l); i >= 0 {
		close(l.sent)
		w.ls = slices.Delete(w.ls, i, i+1)
		w.n.Store(int32(len(w.ls)))
	}
	w.mu.Unlock()
}

// wrote releases the listings whose create is the frame p, just written.
func (w *sentWaits) wrote(p []byte) {
	if w.n.Load() == 0 {
		return
	}
	w.mu.Lock()
	w.ls = slices.DeleteFunc(w.ls, func(l *listing) bool {
		if wire.Carries(p, l.mark) {
			close(l.sent)
			return true
		}
		return false
	})
	w.n.Store(int32(len(w.ls)))
	w.mu.Unlock()
}

// pipeStats counts CreateListed's outcomes on a session: listings used
// (hits) and listings dropped for a read of their own (fallbacks).
type pipeStats struct {
	hits, fallbacks atomic.Int64
	listFirst       atomic.Bool // tests: send the create once the listing is answered
}
