package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// hold is the state of one tenure — a lock held, a semaphore lease, a
// leadership, a group membership: the node that holds, its fencing token,
// and the signals of its end.
type hold struct {
	node     string
	token    int64
	lost     chan struct{} // closed when the tenure ends (loss or release)
	revoked  chan struct{} // closed when a revocation is requested; nil unless revocable
	endOnce  sync.Once
	revOnce  sync.Once
	wasLost  atomic.Bool
	released atomic.Bool // release started: a deletion is ours
	stop     chan struct{}
	lostErr  error // the sentinel a loss wraps; ErrLockLost when nil
	note     bool  // released with a hand-off note (lock.go)

	armOnce   sync.Once
	monitored bool                      // a monitor goroutine runs (see startHoldAs); set before armOnce runs
	watches   chan (<-chan zk.Event)    // own-node watches for the monitor
	untrack   *sync.WaitGroup           // counts the tenure's end (see Session.track)
	tel       atomic.Pointer[tenureTel] // what its end records (telemetry.go)

	// The tenure's context, made on first use (context): most tenures
	// are never asked for one.
	ctxMu  sync.Mutex
	ctx    context.Context
	cancel context.CancelCauseFunc
	ended  bool // end has run; under ctxMu
}

// context returns a context cancelled when the tenure ends, with the
// reason as its cause (see Lock.Context); made on the first call.
func (h *hold) context() context.Context {
	h.ctxMu.Lock()
	defer h.ctxMu.Unlock()
	if h.ctx == nil {
		h.ctx, h.cancel = context.WithCancelCause(context.Background())
		if h.ended {
			h.cancel(h.endCause())
		}
	}
	return h.ctx
}

// endCause is the cause of an ended tenure's context.
func (h *hold) endCause() error {
	if h.wasLost.Load() {
		return fmt.Errorf("%s: %w", h.node, h.lostSentinel())
	}
	return fmt.Errorf("%s: %w (released)", h.node, ErrNotHeld)
}

func (h *hold) end(lost bool) {
	h.endOnce.Do(func() {
		if h.untrack != nil {
			defer h.untrack.Done()
		}
		h.wasLost.Store(lost)
		endTenure(&h.tel, lost)
		h.ctxMu.Lock()
		h.ended = true
		if h.cancel != nil {
			h.cancel(h.endCause())
		}
		h.ctxMu.Unlock()
		close(h.lost)
	})
}

// lostSentinel is the error a loss of this tenure wraps.
func (h *hold) lostSentinel() error {
	if h.lostErr != nil {
		return h.lostErr
	}
	return ErrLockLost
}

func (h *hold) revoke() { h.revOnce.Do(func() { close(h.revoked) }) }

// startHold starts the tenure of node, which no other node blocks any more,
// with the given fencing token.
//
// The tenure ends when the session ends (always noticed, no request needed)
// or when the node is deleted by someone else, which takes a watch on it.
// That watch is set lazily, on the first Lost or Context call (see arm), so
// the plain acquire-release cycle costs three requests: create, children,
// delete. The holder watches its own node with a child watch: an ephemeral
// node never has children, so it fires only on deletion; unlike an exists
// watch it is not left behind if the node is already gone, and unlike a data
// watch it does not show in the server's wchp report, which keeps showing
// each contender node watched by one session only, the one waiting for it.
//
// A revocable holder must see revocation requests (data changes) as soon as
// they come, so it sets a data watch at once.
func (s *Session) startHold(ctx context.Context, node string, token int64, revocable bool) (*hold, error) {
	return s.startHoldAs(ctx, node, token, revocable, nil)
}

// startHoldAs is startHold for a tenure whose loss wraps lostErr (an
// election's leadership, a group membership) instead of ErrLockLost. Such a
// tenure watches its node from the start.
func (s *Session) startHoldAs(ctx context.Context, node string, token int64, revocable bool, lostErr error) (*hold, error) {
	h := &hold{node: node, token: token, lost: make(chan struct{}),
		stop: make(chan struct{}), watches: make(chan (<-chan zk.Event), 1), lostErr: lostErr}
	if revocable {
		h.revoked = make(chan struct{})
	}
	var w <-chan zk.Event
	if revocable {
		own, err := s.getW(ctx, node)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) && lostErr != nil {
				return nil, fmt.Errorf("%s: node vanished: %w", node, lostErr)
			}
			return nil, lostIfNoNode(err, node)
		}
		if revokeRequested(own.data) {
			h.revoke()
		}
		w = own.watch
		h.armOnce.Do(func() {})
	}
	// A tenure that watches its node from the start has a monitor from the
	// start. Any other is ended by the session's end directly (it is
	// registered with the session) until arm starts its monitor: the plain
	// lock cycle runs no goroutine of its own.
	h.monitored = revocable || lostErr != nil
	if !s.track(h, !h.monitored) {
		h.end(true) // the session ended meanwhile: told at once
	}
	if h.monitored {
		go s.monitor(h, w, revocable)
	}
	if lostErr != nil {
		s.arm(h)
	}
	return h, nil
}

// arm sets the watch on the holder's own node, once, in the background. If
// the node is already gone, the tenure is lost.
func (s *Session) arm(h *hold) {
	h.armOnce.Do(func() {
		if !h.monitored {
			// From now on the monitor sees the session's end too.
			s.untrackEnd(h)
			go s.monitor(h, nil, false)
		}
		go func() {
			r, err := s.watchOwn(context.Background(), h.node, false)
			switch {
			case err == nil:
				h.watches <- r.watch
			case errors.Is(err, zk.ErrNoNode) && !h.released.Load():
				s.log.Warn("lost: node deleted", "path", h.node)
				h.end(true)
			}
			// Other errors mean the session ended: the monitor sees that.
		}()
	})
}

// watchOwn reads the holder's own node and watches it (see startHold).
func (s *Session) watchOwn(ctx context.Context, node string, revocable bool) (getResult, error) {
	if revocable {
		return s.getW(ctx, node)
	}
	return s.childrenW(ctx, node)
}

// monitor ends the hold when it is lost — our node deleted by someone else,
// or the session ended — and signals revocation requests. w is nil until
// the own-node watch is armed.
func (s *Session) monitor(h *hold, w <-chan zk.Event, revocable bool) {
	for {
		select {
		case w = <-h.watches:
		case ev := <-w:
			switch ev.Type {
			case zk.EventNodeDeleted:
				if !h.released.Load() {
					s.log.Warn("lost: node deleted", "path", h.node)
					h.end(true)
				}
				return
			case zk.EventNotWatching:
				h.end(true)
				return
			}
			// Data changed (a revocation request) or another event: read
			// and watch again.
			r, err := s.watchOwn(context.Background(), h.node, revocable)
			if err != nil {
				if !h.released.Load() {
					s.log.Warn("lost", "path", h.node, "err", err)
					h.end(true)
				}
				return
			}
			if revocable && revokeRequested(r.data) {
				h.revoke()
			}
			w = r.watch
		case <-s.done:
			h.end(true)
			return
		case <-h.stop:
			return
		}
	}
}

// stopHold stops the monitor of h, if it has one, and forgets h.
func (s *Session) stopHold(h *hold) {
	close(h.stop)
	if !h.monitored {
		s.untrackEnd(h)
	}
}

// untrackEnd takes h off the tenures the session's end ends directly.
func (s *Session) untrackEnd(h *hold) {
	s.mu.Lock()
	delete(s.holds, h)
	s.mu.Unlock()
}

// release ends the tenure h by deleting its node; see releaseAs.
func (s *Session) release(ctx context.Context, h *hold) error {
	return s.releaseAs(ctx, h, "", func(ctx context.Context) error { return s.delete(ctx, h.node, -1) })
}

// releaseAs ends the tenure h with remove, which deletes its node (and
// what goes with it). It returns an error wrapping the tenure's loss error
// if the tenure had been lost, or turns out lost (the node gone, the
// session ended). If ctx ends before the removal is confirmed, the removal
// carries on in the background (bounded) and ctx's error is returned.
// label, if not empty, comes before the node's path in errors.
func (s *Session) releaseAs(ctx context.Context, h *hold, label string, remove func(context.Context) error) error {
	defer s.stopHold(h)
	where := h.node
	if label != "" {
		where = label + " " + h.node
	}
	if h.wasLost.Load() {
		return fmt.Errorf("%s: %w", where, h.lostSentinel())
	}
	h.released.Store(true)
	err := remove(ctx)
	switch {
	case err == nil:
	case errors.Is(err, zk.ErrNoNode), errors.Is(err, ErrSessionExpired), errors.Is(err, ErrClosed):
		h.end(true)
		return fmt.Errorf("%s: %w (%w)", where, h.lostSentinel(), err)
	case ctx.Err() != nil && s.check() == nil:
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
			defer cancel()
			if err := remove(cctx); err != nil && !errors.Is(err, zk.ErrNoNode) && s.check() == nil {
				s.log.Warn("could not remove the node of a released tenure", "path", h.node, "err", err)
			}
		}()
	}
	h.end(false)
	return err
}

// dismiss ends a tenure that was started but never handed out (an
// election candidate that turned out not to lead), its node being removed
// by the caller.
func (h *hold) dismiss() {
	h.released.Store(true)
	close(h.stop)
	h.end(false)
}

// abandon removes a contender node with a fresh, bounded context and returns
// cause. The node is ephemeral, so if the session is gone there is nothing to
// remove.
func (s *Session) abandon(node string, cause error) error {
	if s.check() != nil {
		if cause == nil {
			return s.check()
		}
		return cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := s.delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		s.log.Warn("could not remove contender node", "path", node, "err", err)
		return errors.Join(cause, err)
	}
	return cause
}

func lostIfNoNode(err error, node string) error {
	if errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("%s: node vanished: %w", node, ErrLockLost)
	}
	return err
}

// --- Tenures handed out
//
// A Leadership, a Membership and a Lease are each one tenure of a node,
// handed to the application. They embed tenure, whose methods are theirs:
// Node, Lost and Context. The loss they report wraps the recipe's own error
// (ErrLeadershipLost, ErrMembershipLost, ErrLockLost), set when the tenure
// starts (startHoldAs).

// tenure is what a Leadership, a Membership and a Lease have in common.
type tenure struct {
	s     *Session
	h     *hold
	ended atomic.Bool // given up: Resign or Leave called
}

// Node returns the path of the node that holds the tenure.
func (t *tenure) Node() string { return t.h.node }

// Lost returns a channel closed when the tenure ends: lost (the session
// expired or was closed, or the node was deleted by someone else) or given
// up (Resign, Leave, Release). A brief connection loss does not end it; a
// disconnection for over a third of the session timeout does (see
// WithSessionTimeout).
func (t *tenure) Lost() <-chan struct{} {
	t.s.arm(t.h)
	return t.h.lost
}

// Context returns a context cancelled when the tenure ends, so work done
// under it stops by itself when it is lost. context.Cause tells why: an
// error wrapping the recipe's loss error (ErrLeadershipLost,
// ErrMembershipLost, ErrLockLost), or ErrNotHeld once given up.
func (t *tenure) Context() context.Context {
	t.s.arm(t.h)
	return t.h.context()
}

// giveUp marks the tenure given up; it reports false when it was already.
func (t *tenure) giveUp() bool { return t.ended.CompareAndSwap(false, true) }

// slot is the flag of a handle that has one tenure at a time (an election
// candidate, a group member): set from the start of an attempt until the
// attempt fails or the tenure is given up.
type slot struct {
	mu   sync.Mutex
	busy bool
}

// take sets the flag; it reports false when it was set already.
func (o *slot) take() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.busy {
		return false
	}
	o.busy = true
	return true
}

// free clears the flag.
func (o *slot) free() {
	o.mu.Lock()
	o.busy = false
	o.mu.Unlock()
}
