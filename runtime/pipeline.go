package runtime

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
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
// The create itself is createProtected's, unchanged: a lost reply is
// settled by the GUID, a cancelled caller's node is removed.

// listing is a pipelined children read: its reply, once done is closed.
type listing struct {
	done chan struct{}
	r    getResult
	err  error
}

// createListed creates dir/<prefix><seq> as createProtected does and lists
// dir at the same time; with watch, the listing leaves a child watch on dir
// (childrenW). It returns the node's path and, when the listing was taken
// after the create (it contains the node), that listing; otherwise a nil
// listing, and the caller lists dir itself. An error is the create's.
func (s *Session) createListed(ctx context.Context, acl []zk.ACL, dir, prefix string, data []byte, watch bool) (string, *getResult, error) {
	l := &listing{done: make(chan struct{})}
	go l.list(s.conn, dir, watch)
	node, err := s.createProtected(ctx, acl, dir, prefix, data)
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
	if l.err != nil || !slices.Contains(l.r.kids, baseName(node)) {
		s.pipe.fallbacks.Add(1)
		return node, nil, nil
	}
	s.pipe.hits.Add(1)
	return node, &l.r, nil
}

// list sends one children read of dir (no retry: a failed listing is
// simply not used) and closes l.done when its reply is in.
func (l *listing) list(conn *zk.Conn, dir string, watch bool) {
	if watch {
		l.r.kids, l.r.stat, l.r.watch, l.err = conn.ChildrenW(dir)
	} else {
		l.r.kids, l.r.stat, l.err = conn.Children(dir)
	}
	close(l.done)
}

// pipeStats counts createListed's outcomes on a session: listings used
// (hits) and listings dropped for a read of their own (fallbacks).
type pipeStats struct {
	hits, fallbacks atomic.Int64
}
