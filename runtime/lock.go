package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// lockMarker is the node-name marker of exclusive lock contenders, as in
// Curator's InterProcessMutex: <dir>/_c_<uuid>-lock-<seq>.
const lockMarker = "lock-"

// Lock is an exclusive lock on a znode directory, the ZooKeeper guide's lock
// recipe: each contender creates an ephemeral sequential node; the lowest
// holds the lock; every other contender watches only the node just before
// its own, so a release wakes exactly one waiter (no herd effect).
//
// Node names are Curator's (_c_<uuid>-lock-<seq>), so this lock and Curator's
// InterProcessMutex on the same path exclude each other. Children of the
// directory that are not lock nodes are ignored.
//
// A Lock stands for one contender. It is not reentrant: Lock on a handle
// that holds or is acquiring returns ErrAlreadyHeld. After Unlock it can be
// locked again. Two handles, even on one session, are two contenders. Methods
// are safe for concurrent use.
type Lock struct {
	s      *Session
	dir    string
	err    error // the path was invalid
	marker string

	mu      sync.Mutex
	busy    bool  // acquiring or holding
	hold    *hold // non-nil while held
	purpose string
}

// hold is one tenure of the lock.
type hold struct {
	node     string
	token    int64
	lost     chan struct{} // closed when the tenure ends (loss or Unlock)
	endOnce  sync.Once
	wasLost  atomic.Bool
	released atomic.Bool // Unlock started: a deletion is ours
	stop     chan struct{}
}

func (h *hold) end(lost bool) {
	h.endOnce.Do(func() {
		h.wasLost.Store(lost)
		close(h.lost)
	})
}

// closedCh is returned by Lost when nothing is held.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// NewLock returns a lock handle on the directory p. It does no I/O; the
// directory and its parents are created (as container nodes) on first use.
// If p is invalid, every method returns p's error.
func NewLock(s *Session, p Path) *Lock {
	return &Lock{s: s, dir: p.String(), err: p.Err(), marker: lockMarker}
}

// Path returns the lock's directory.
func (l *Lock) Path() string { return l.dir }

// SetPurpose sets the purpose recorded in the owner metadata of the next
// acquisition (shown by Holders and zkgen inspect).
func (l *Lock) SetPurpose(purpose string) {
	l.mu.Lock()
	l.purpose = purpose
	l.mu.Unlock()
}

// Lock blocks until this handle holds the lock, ctx ends, or the session
// ends. When ctx ends first, Lock removes its contender node before
// returning ctx's error, so nothing is left in ZooKeeper. On success the lock
// is held until Unlock, or until it is lost: see Lost.
func (l *Lock) Lock(ctx context.Context) error {
	_, err := l.acquire(ctx, true)
	return err
}

// TryLock takes the lock only if it is free: it reports whether this handle
// now holds it. It never waits for another holder; when the lock is taken
// its contender node is removed before it returns false.
func (l *Lock) TryLock(ctx context.Context) (bool, error) {
	return l.acquire(ctx, false)
}

func (l *Lock) acquire(ctx context.Context, wait bool) (bool, error) {
	if l.err != nil {
		return false, l.err
	}
	l.mu.Lock()
	if l.busy {
		l.mu.Unlock()
		return false, fmt.Errorf("lock %s: %w", l.dir, ErrAlreadyHeld)
	}
	l.busy = true
	purpose := l.purpose
	l.mu.Unlock()

	h, err := l.contend(ctx, wait, purpose)

	l.mu.Lock()
	defer l.mu.Unlock()
	if h == nil {
		l.busy = false
		return false, err
	}
	l.hold = h
	return true, nil
}

// contend runs the lock protocol. It returns a hold when the lock is taken,
// nil with a nil error when wait is false and the lock is taken by another.
func (l *Lock) contend(ctx context.Context, wait bool, purpose string) (*hold, error) {
	node, err := l.s.createProtected(ctx, l.dir, l.marker, l.s.owner(purpose))
	if err != nil {
		return nil, err
	}
	name := baseName(node)
	for {
		kids, err := l.s.children(ctx, l.dir)
		if err != nil {
			return nil, l.abandon(node, err)
		}
		cs := sortContenders(kids, l.marker)
		i := indexOf(cs, name)
		switch {
		case i < 0:
			return nil, fmt.Errorf("lock %s: contender node deleted while waiting: %w", node, ErrLockLost)
		case i == 0:
			return l.take(ctx, node)
		case !wait:
			return nil, l.abandon(node, nil)
		}
		// Watch only the node just before ours. If it is already gone, it
		// left between our children read and now: read again rather than
		// wait for an event that will never come (the lost wake-up).
		pred, err := l.s.getW(ctx, joinPath(l.dir, cs[i-1].name))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, l.abandon(node, err)
		}
		select {
		case <-pred.watch:
		case <-ctx.Done():
			return nil, l.abandon(node, ctx.Err())
		case <-l.s.done:
			return nil, l.s.Err()
		}
	}
}

// take starts the tenure of node, which is now first in line. It reads our
// own node with a child watch: the reply's stat gives the fencing token (the
// node's czxid), and the watch fires when the node is deleted under us (an
// ephemeral node never has children, so it fires for nothing else). A child
// watch, unlike an exists watch, is not left behind if the node is already
// gone, and it is not a data watch: the server's wchp report keeps showing
// each contender node watched by one session only, the one waiting for it.
// Waiters do not watch their own node at all.
func (l *Lock) take(ctx context.Context, node string) (*hold, error) {
	own, err := l.s.childrenW(ctx, node)
	if err != nil {
		return nil, l.abandon(node, lostIfNoNode(err, node))
	}
	h := &hold{node: node, token: own.stat.Czxid, lost: make(chan struct{}), stop: make(chan struct{})}
	go l.monitor(h, own.watch)
	return h, nil
}

// abandon removes our contender node with a fresh, bounded context and
// returns cause. The node is ephemeral, so if the session is gone there is
// nothing to remove.
func (l *Lock) abandon(node string, cause error) error {
	if l.s.check() != nil {
		if cause == nil {
			return l.s.check()
		}
		return cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := l.s.delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		l.s.log.Warn("could not remove lock contender node", "path", node, "err", err)
		return errors.Join(cause, err)
	}
	return cause
}

// monitor ends the hold when the lock is lost: our node deleted by someone
// else, or the session ended.
func (l *Lock) monitor(h *hold, w <-chan zk.Event) {
	for {
		select {
		case ev := <-w:
			switch ev.Type {
			case zk.EventNodeDeleted:
				if !h.released.Load() {
					l.s.log.Warn("lock lost: node deleted", "path", h.node)
					h.end(true)
				}
				return
			case zk.EventNotWatching:
				h.end(true)
				return
			}
			// Any other event: watch again.
			r, err := l.s.childrenW(context.Background(), h.node)
			if err != nil {
				if !h.released.Load() {
					l.s.log.Warn("lock lost", "path", h.node, "err", err)
					h.end(true)
				}
				return
			}
			w = r.watch
		case <-l.s.done:
			h.end(true)
			return
		case <-h.stop:
			return
		}
	}
}

// Unlock releases the lock by deleting this handle's node; the next waiter
// (only it) is woken. It returns ErrNotHeld when this handle does not hold
// the lock, and ErrLockLost when the lock had been lost (the node is gone
// already). If ctx ends before the delete is confirmed, the delete carries on
// in the background (bounded) and Unlock returns ctx's error. Either way the
// handle can be locked again.
func (l *Lock) Unlock(ctx context.Context) error {
	if l.err != nil {
		return l.err
	}
	l.mu.Lock()
	h := l.hold
	l.hold = nil
	l.busy = false
	l.mu.Unlock()
	if h == nil {
		return fmt.Errorf("lock %s: %w", l.dir, ErrNotHeld)
	}
	defer close(h.stop)
	if h.wasLost.Load() {
		return fmt.Errorf("lock %s: %w", h.node, ErrLockLost)
	}
	h.released.Store(true)
	err := l.s.delete(ctx, h.node, -1)
	switch {
	case err == nil:
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed):
		h.end(true)
		return fmt.Errorf("lock %s: %w (%w)", h.node, ErrLockLost, err)
	case ctx.Err() != nil && l.s.check() == nil:
		go l.abandon(h.node, nil)
	}
	h.end(false)
	return err
}

// Token returns the fencing token of the current tenure: the creation zxid
// of this handle's lock node, strictly increasing across successive holders
// of the path. It is 0 when the lock is not held.
func (l *Lock) Token() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return 0
	}
	return l.hold.token
}

// Lost returns a channel that is closed when the current tenure ends: the
// lock was lost (session expired or closed, or the node deleted by someone
// else) or released with Unlock. When the lock is not held it returns a
// closed channel. A brief connection loss does not end the tenure; a
// disconnection longer than the session timeout does.
func (l *Lock) Lost() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.hold == nil {
		return closedCh
	}
	return l.hold.lost
}

func lostIfNoNode(err error, node string) error {
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("lock %s: node vanished: %w", node, ErrLockLost)
	}
	return err
}
