package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkgen/zkgen/runtime/internal/client"
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
	lostErr  error // the sentinel a loss wraps (ErrLockLost, ErrLeadershipLost, ...)
	note     bool  // released with a hand-off note (lock.go)

	armOnce   sync.Once
	monitored bool                      // a monitor goroutine runs (see startTenure); set before armOnce runs
	watches   chan (<-chan zk.Event)    // own-node watches for the monitor
	tracked   *Session                  // counts the tenure's end, when set (see trackHold)
	hooked    *Session                  // ends h at its end, when set (see trackHold)
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

// askClock is what a tenure does when the application asks about it (Held,
// Lost, Context().Err(), Guarded): it consults the session's clock, so the
// first question after the process was frozen past the session timeout is
// answered "lost" — not a few milliseconds later, when the goroutines that
// would notice have run (see Ops.CheckClock). It reports whether the
// tenure is still on.
func askClock(s *Session, h *hold) bool {
	if h.isEnded() {
		return false
	}
	if opsOf(s).CheckClock() {
		h.end(true) // as its monitor, or the session's end, will
		return false
	}
	return true
}

// isEnded reports whether the tenure has ended (lost or released).
func (h *hold) isEnded() bool {
	select {
	case <-h.lost:
		return true
	default:
		return false
	}
}

// heldContext is a tenure's context as the application gets it: Err and
// Done consult the session's clock first (see askClock).
type heldContext struct {
	context.Context
	s *Session
	h *hold
}

// Err returns the cancellation error of the tenure's context, after asking
// the session's clock whether the tenure is still on.
func (c *heldContext) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	askClock(c.s, c.h)
	return c.Context.Err()
}

// Done returns the channel closed when the tenure ends, after asking the
// session's clock: a tenure found over is ended, and the channel returned
// is closed already.
func (c *heldContext) Done() <-chan struct{} {
	askClock(c.s, c.h)
	return c.Context.Done()
}

// heldCtx returns the tenure's context for the application (see
// heldContext).
func heldCtx(s *Session, h *hold) context.Context {
	return &heldContext{Context: h.context(), s: s, h: h}
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
		if h.tracked != nil {
			defer client.Untrack(h.tracked)
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
func (h *hold) lostSentinel() error { return h.lostErr }

func (h *hold) revoke() { h.revOnce.Do(func() { close(h.revoked) }) }

// startTenure starts the tenure of node, which no other node blocks any more,
// with the given fencing token.
//
// The tenure ends when the session ends (always noticed, no request needed)
// or when the node is deleted by someone else, which takes a watch on it.
// That watch is set lazily, on the first Lost or Context call (see armHold), so
// the plain acquire-release cycle costs three requests: create, children,
// delete. The holder watches its own node with a child watch: an ephemeral
// node never has children, so it fires only on deletion; unlike an exists
// watch it is not left behind if the node is already gone, and unlike a data
// watch it does not show in the server's wchp report, which keeps showing
// each contender node watched by one session only, the one waiting for it.
//
// A revocable holder must see revocation requests (data changes) as soon as
// they come, so it sets a data watch at once; with watchNow (an election's
// leadership, a group membership) the holder watches its node from the
// start. A loss wraps lostErr.
func startTenure(ctx context.Context, s *Session, node string, token int64, revocable bool, lostErr error, watchNow bool) (*hold, error) {
	h := &hold{node: node, token: token, lost: make(chan struct{}),
		stop: make(chan struct{}), watches: make(chan (<-chan zk.Event), 1), lostErr: lostErr}
	if revocable {
		h.revoked = make(chan struct{})
	}
	var w <-chan zk.Event
	if revocable {
		own, err := opsOf(s).GetW(ctx, node)
		if err != nil {
			if errors.Is(err, zk.ErrNoNode) {
				return nil, fmt.Errorf("%s: node vanished: %w", node, lostErr)
			}
			return nil, err
		}
		if revokeRequested(own.Data) {
			h.revoke()
		}
		w = own.Watch
		h.armOnce.Do(func() {})
	}
	// A tenure that watches its node from the start has a monitor from the
	// start. Any other is ended by the session's end directly (it is
	// registered with the session) until arm starts its monitor: the plain
	// lock cycle runs no goroutine of its own.
	h.monitored = revocable || watchNow
	if !trackHold(s, h, !h.monitored) {
		h.end(true) // the session ended meanwhile: told at once
	}
	if h.monitored {
		go monitorHold(s, h, w, revocable)
	}
	if watchNow {
		armHold(s, h)
	}
	return h, nil
}

// startHoldAs starts a tenure whose loss wraps lostErr and that watches its
// node from the start (see startTenure).
func startHoldAs(ctx context.Context, s *Session, node string, token int64, revocable bool, lostErr error) (*hold, error) {
	return startTenure(ctx, s, node, token, revocable, lostErr, true)
}

// armHold sets the watch on the holder's own node, once, in the background. If
// the node is already gone, the tenure is lost. The read is spawned after
// the Once, not in it: Spawn waits for the read to be sent, and on a
// stepped simulated server that waits for every goroutine to be blocked,
// which a second caller waiting on the Once's lock never is.
func armHold(s *Session, h *hold) {
	first := false
	h.armOnce.Do(func() {
		first = true
		if !h.monitored {
			// From now on the monitor sees the session's end too.
			untrackEnd(h)
			go monitorHold(s, h, nil, false)
		}
	})
	if first {
		opsOf(s).Spawn(func() { // its read goes out before the caller's next request
			r, err := watchOwn(context.Background(), s, h.node, false)
			switch {
			case err == nil:
				h.watches <- r.Watch
			case errors.Is(err, zk.ErrNoNode) && !h.released.Load():
				opsOf(s).Log().Warn("lost: node deleted", "path", h.node)
				h.end(true)
			}
			// Other errors mean the session ended: the monitor sees that.
		})
	}
}

// watchOwn reads the holder's own node and watches it (see startHold).
func watchOwn(ctx context.Context, s *Session, node string, revocable bool) (client.Result, error) {
	if revocable {
		return opsOf(s).GetW(ctx, node)
	}
	return opsOf(s).ChildrenW(ctx, node)
}

// monitorHold ends the hold when it is lost — our node deleted by someone else,
// or the session ended — and signals revocation requests. w is nil until
// the own-node watch is armed.
func monitorHold(s *Session, h *hold, w <-chan zk.Event, revocable bool) {
	for {
		select {
		case w = <-h.watches:
		case ev := <-w:
			switch ev.Type {
			case zk.EventNodeDeleted:
				if !h.released.Load() {
					opsOf(s).Log().Warn("lost: node deleted", "path", h.node)
					h.end(true)
				}
				return
			case zk.EventNotWatching:
				h.end(true)
				return
			}
			// Data changed (a revocation request) or another event: read
			// and watch again.
			r, err := watchOwn(context.Background(), s, h.node, revocable)
			if err != nil {
				if !h.released.Load() {
					opsOf(s).Log().Warn("lost", "path", h.node, "err", err)
					h.end(true)
				}
				return
			}
			if revocable && revokeRequested(r.Data) {
				h.revoke()
			}
			w = r.Watch
		case <-s.Done():
			h.end(true)
			return
		case <-h.stop:
			return
		}
	}
}

// stopHold stops the monitor of h, if it has one, and forgets h.
func stopHold(s *Session, h *hold) {
	close(h.stop)
	if !h.monitored {
		untrackEnd(h)
	}
}

// untrackEnd takes h off the tenures the session's end ends directly.
func untrackEnd(h *hold) {
	if h.hooked != nil {
		client.OffEnd(h.hooked, h)
	}
}

// SessionEnded ends h when its session ends, as its monitor would have
// (see trackHold).
func (h *hold) SessionEnded() { h.end(true) }

// trackHold registers a tenure starting on the session; false means the
// session has ended (the tenure is lost at once). Supervise waits for every
// tracked tenure to end before it cancels the work's context (Track): h
// counts its end (Untrack). With endDirectly, the session's end ends h
// itself (h has no monitor to see it).
func trackHold(s *Session, h *hold, endDirectly bool) bool {
	if !client.Track(s) {
		return false
	}
	h.tracked = s
	if endDirectly {
		if !client.OnEnd(s, h) {
			return false
		}
		h.hooked = s
	}
	return true
}

// releaseHold ends the tenure h by deleting its node; see releaseHoldAs.
func releaseHold(ctx context.Context, s *Session, h *hold) error {
	return releaseHoldAs(ctx, s, h, "", func(ctx context.Context) error { return opsOf(s).Delete(ctx, h.node, -1) })
}

// releaseHoldAs ends the tenure h with remove, which deletes its node (and
// what goes with it). It returns an error wrapping the tenure's loss error
// if the tenure had been lost, or turns out lost (the node gone, the
// session ended). If the removal is not confirmed — ctx ended, or it
// failed while the session lives — it carries on in the background
// (bounded) and the error is returned: a node left behind on a live
// session would block every contender queued after it for the session's
// life. label, if not empty, comes before the node's path in errors.
func releaseHoldAs(ctx context.Context, s *Session, h *hold, label string, remove func(context.Context) error) error {
	defer stopHold(s, h)
	where := h.node
	if label != "" {
		where = label + " " + h.node
	}
	if err := s.Err(); err != nil {
		// The session has ended, and the tenure with it: say so the same
		// way whether the tenure's own goroutine has seen the end yet or
		// not (both come at one instant; the words of a replay then
		// follow Go's scheduler: multilock seed=7001 under -race).
		h.end(true)
		return fmt.Errorf("%s: %w (%w)", where, h.lostSentinel(), err)
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
	case s.Err() == nil:
		opsOf(s).Spawn(func() {
			cctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
			defer cancel()
			if err := remove(cctx); err != nil && !errors.Is(err, zk.ErrNoNode) && s.Err() == nil {
				opsOf(s).Log().Warn("could not remove the node of a released tenure", "path", h.node, "err", err)
			}
		})
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

// abandonNode removes a contender node with a fresh, bounded context and returns
// cause. The node is ephemeral, so if the session is gone there is nothing to
// remove.
func abandonNode(s *Session, node string, cause error) error {
	if s.Err() != nil {
		if cause == nil {
			return s.Err()
		}
		return cause
	}
	ctx, cancel := context.WithTimeout(context.Background(), client.CleanupTimeout)
	defer cancel()
	if err := opsOf(s).Delete(ctx, node, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		opsOf(s).Log().Warn("could not remove contender node", "path", node, "err", err)
		return client.JoinErrors(cause, err)
	}
	return cause
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
func (t *tenure) Node() string {
	if t.zero() {
		return ""
	}
	return t.h.node
}

// zero reports whether the tenure is a zero value (not handed out by a
// handle): its methods then report it not held, and never panic.
func (t *tenure) zero() bool { return t.h == nil }

// closedChan is the Lost channel of a zero value.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// zeroCtx is the Context of a zero value: cancelled, with errZeroValue.
var zeroCtx = func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errZeroValue)
	return ctx
}()

// Lost returns a channel closed when the tenure ends: lost (the session
// expired or was closed, or the node was deleted by someone else) or given
// up (Resign, Leave, Release). A brief connection loss does not end it; a
// disconnection past the session's give-up point does (see
// [WithSessionTimeout]). Lost consults the session's clock when called (see
// Held): after a pause past the session timeout the channel it returns is
// closed already.
func (t *tenure) Lost() <-chan struct{} {
	if t.zero() {
		return closedChan
	}
	armHold(t.s, t.h)
	askClock(t.s, t.h)
	return t.h.lost
}

// Context returns a context cancelled when the tenure ends, so work done
// under it stops by itself when it is lost. context.Cause tells why: an
// error wrapping the recipe's loss error (ErrLeadershipLost,
// ErrMembershipLost, ErrLockLost), or ErrNotHeld once given up. Its Err
// and Done consult the session's clock when called (see Held); contexts
// derived from it with the context package learn of the end when it is
// cancelled, a moment later.
func (t *tenure) Context() context.Context {
	if t.zero() {
		return zeroCtx
	}
	armHold(t.s, t.h)
	return heldCtx(t.s, t.h)
}

// Held reports whether the tenure is still on, as far as this process can
// know without asking the server: it has not been given up, its end has
// not been noticed, and the session's own clock does not say the session is
// over — so the first call after the process was frozen past the session
// timeout (SIGSTOP, a paused VM) says false, even before any goroutine of
// the runtime has run. What it cannot see: a node deleted by someone else
// whose watch has not fired yet, and anything that happens between this
// call and the act that follows it. Only a fenced write (Guarded, or the
// fencing token checked by the resource) closes that window.
func (t *tenure) Held() bool {
	return !t.zero() && askClock(t.s, t.h)
}

// guardedOwn runs ops while the tenure's own node exists (see
// guardedMulti).
func (t *tenure) guardedOwn(ctx context.Context, label string, ops []any) ([]zk.MultiResponse, error) {
	if t.zero() {
		return nil, fmt.Errorf("%s: %w", label, errZeroValue)
	}
	return guardedMulti(ctx, t.s, t.h, label+" "+t.h.node, nil, nil, ops)
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

// --- Fenced writes (Guarded)

// fence describes the tenure a fenced write depends on (see fencedMulti).
type fence struct {
	label  string // names the tenure in errors ("lock /a/b")
	checks []any  // the ops that hold only while the tenure does
	// on consults the tenure (and the session's clock, see askClock):
	// false once it is over.
	on func() bool
	// lost returns the error of a write refused or not applied because the
	// tenure is over (and records the end); cause may be nil.
	lost func(why string, cause error) error
	// refused returns the error for check i failing on the server; nil:
	// lost.
	refused func(i int) error
}

// checkRefused is the error of a multi that one of f's checks refused
// (its node gone or rewritten); nil when none did.
func (f fence) checkRefused(res []zk.MultiResponse) error {
	for i := 0; i < len(f.checks) && i < len(res); i++ {
		if !errors.Is(res[i].Error, zk.ErrNoNode) && !errors.Is(res[i].Error, zk.ErrBadVersion) {
			continue
		}
		if f.refused != nil {
			if rerr := f.refused(i); rerr != nil {
				return fmt.Errorf("%s: guarded write refused: %w", f.label, rerr)
			}
		}
		return f.lost("guarded write refused", nil)
	}
	return nil
}

// requests is the multi's requests: f's checks, then ops as go-zookeeper
// requests (see guardedRequests).
func (f fence) requests(s *Session, ops []any) ([]any, error) {
	reqs, err := guardedRequests(s, ops)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.label, err)
	}
	return append(append(make([]any, 0, len(f.checks)+len(reqs)), f.checks...), reqs...), nil
}

// fencedMulti runs ops as one multi after f's checks: the writes happen
// only while the tenure is on, atomically with the checks. The outcome is
// classified once, whatever the transport said on the way:
//
//   - the tenure over, by what is known or by the session's clock (a
//     process frozen past the session timeout): nothing is sent, and the
//     error is f.lost's (it wraps the tenure's loss error);
//   - a check refused by the server, or a request that cannot have been
//     applied (never sent, its write failed, the session expired before
//     it) while the tenure ended: f.lost's (or f.refused's);
//   - a request whose reply was lost (the connection closed under it, or
//     ctx or the session ended while it was on its way): ErrOutcomeUnknown,
//     which wraps the error met. If it was applied, it was applied while
//     the tenure held (the checks passed on the server);
//   - a request that cannot have been applied while the tenure is still on
//     (the connection failed before sending): the connection error, which
//     IsRecoverable; the call may be made again;
//   - an op of the caller's refused: the ops' results and the error, and
//     nothing was applied.
//
// A multi is not idempotent, so nothing is retried here.
func fencedMulti(ctx context.Context, s *Session, f fence, ops []any) ([]zk.MultiResponse, error) {
	if !f.on() {
		return nil, f.lost("guarded write not sent", s.Err())
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	all, err := f.requests(s, ops)
	if err != nil {
		return nil, err
	}
	// go-zookeeper's own error, before await's translation; nil while the
	// request is on its way (await returns early when ctx or the session
	// ends).
	var rawp atomic.Pointer[error]
	answered := make(chan struct{})
	res, err := client.Await(ctx, s, func() ([]zk.MultiResponse, error) {
		r, e := s.Conn().Multi(all...)
		rawp.Store(&e)
		close(answered)
		return r, e
	})
	if err != nil && rawp.Load() == nil && s.Err() != nil {
		sessionEndAnswer(answered)
	}
	if err == nil {
		return res[len(f.checks):], nil
	}
	if rerr := f.checkRefused(res); rerr != nil {
		return nil, rerr
	}
	if len(res) > 0 {
		// The server applied nothing: an op of the caller's failed.
		return res[len(f.checks):], client.OpError("multi", f.label, err)
	}
	p := rawp.Load()
	if p == nil || *p == nil {
		// await stopped waiting (ctx or the session ended): the request
		// may be on its way, or applied with its reply unread.
		return nil, fmt.Errorf("%s: guarded write: %w (%w)", f.label, ErrOutcomeUnknown, err)
	}
	raw := *p
	notApplied := errors.Is(raw, zk.ErrNoServer) || errors.Is(raw, zk.ErrSessionExpired) ||
		(client.IsConnError(raw) && !errors.Is(raw, zk.ErrConnectionClosed))
	switch {
	case notApplied && !f.on():
		return nil, f.lost("guarded write not applied", raw)
	case notApplied:
		return nil, client.OpError("multi", f.label, fmt.Errorf("guarded write not applied: %w", raw))
	case errors.Is(raw, zk.ErrConnectionClosed), errors.Is(raw, zk.ErrClosing):
		state := "still held"
		if !f.on() {
			state = "over since"
		}
		return nil, fmt.Errorf("%s: guarded write: %w; the tenure is %s (%w)", f.label, ErrOutcomeUnknown, state, raw)
	}
	return nil, client.OpError("multi", f.label, err)
}

// sessionEndAnswer waits for go-zookeeper's answer to a request that was
// on its way when the session ended (answered closed): the session's end
// closes the connection, which answers it at once (ErrConnectionClosed),
// so the outcome is classified by that answer every time, not by which of
// the session's end and the answer the wait saw first. The wait is
// bounded by a second.
func sessionEndAnswer(answered <-chan struct{}) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-answered:
	case <-t.C:
	}
}

// guardedMulti runs ops while the tenure h holds: its own node exists, and so
// do the nodes of extra's checks (see fencedMulti). A failure of one of
// extra (a partition's owner node, say) returns extraLost's error and
// leaves h as it is. Loss errors wrap h's loss error; ErrNotHeld once h
// was released.
func guardedMulti(ctx context.Context, s *Session, h *hold, label string, extra []any, extraLost func() error, ops []any) ([]zk.MultiResponse, error) {
	if h.released.Load() || (h.isEnded() && !h.wasLost.Load()) {
		return nil, fmt.Errorf("%s: %w", label, ErrNotHeld)
	}
	f := fence{
		label:  label,
		checks: append([]any{checkNode(h.node)}, extra...),
		on:     func() bool { return askClock(s, h) },
		lost: func(why string, cause error) error {
			h.end(true)
			if cause != nil {
				return fmt.Errorf("%s: %s: %w (%w)", label, why, h.lostSentinel(), cause)
			}
			return fmt.Errorf("%s: %s: %w", label, why, h.lostSentinel())
		},
	}
	if extraLost != nil {
		f.refused = func(i int) error {
			if i == 0 {
				return nil
			}
			return extraLost()
		}
	}
	return fencedMulti(ctx, s, f, ops)
}

// checkNode is the check that node exists, whatever its version.
func checkNode(node string) *zk.CheckVersionRequest {
	return &zk.CheckVersionRequest{Path: node, Version: -1}
}

// tenureTel is what a tenure records when it ends: its hold time (locks
// and semaphores) and, if lost, the lost-tenure count.
type tenureTel struct {
	t     *telemetry
	hold  hist // histNone: no hold time
	attrs []attribute.KeyValue
	start time.Time
}

// tenure makes the tenure h record its end, for the resource (kind, name,
// path); extra is one more attribute (if valid). Exactly one of h.end and
// this records, whichever comes last sees the other's mark.
func (t *telemetry) tenure(h *hold, kind, name, path string, extra attribute.KeyValue) {
	if t == nil || h == nil {
		return
	}
	tt := &tenureTel{t: t, hold: histNone, attrs: resAttrs(kind, name, path), start: time.Now()}
	if extra.Valid() {
		tt.attrs = append(tt.attrs, extra)
	}
	switch kind {
	case "lock", "rwlock":
		tt.hold = histLockHold
	case "semaphore":
		tt.hold = histSemHold
	}
	h.tel.Store(tt)
	select {
	case <-h.lost:
		// Ended before the mark was set: record here unless end saw it.
		if h.tel.CompareAndSwap(tt, nil) {
			tt.record(h.wasLost.Load())
		}
	default:
	}
}

// endTenure is called by hold.end.
func endTenure(p *atomic.Pointer[tenureTel], lost bool) {
	if tt := p.Swap(nil); tt != nil {
		tt.record(lost)
	}
}

func (tt *tenureTel) record(lost bool) {
	ctx := context.Background()
	if tt.hold != histNone {
		tt.t.hists[tt.hold].Record(ctx, time.Since(tt.start).Seconds(), metric.WithAttributes(tt.attrs...))
	}
	if lost {
		tt.t.tenuresLost.Add(ctx, 1, metric.WithAttributes(tt.attrs...))
	}
}

// tenureOf makes the tenure h of a resource record its loss.
func (t *telemetry) tenureOf(h *hold, kind, name, path string) {
	t.tenure(h, kind, name, path, attribute.KeyValue{})
}

// tenureLost counts the loss of a tenure that has no hold of its own (a
// TTL lease: it outlives sessions).
func (t *telemetry) tenureLost(kind, name, path string) {
	if t == nil {
		return
	}
	t.tenuresLost.Add(context.Background(), 1, metric.WithAttributes(resAttrs(kind, name, path)...))
}

// curatorRevoke is the data Curator's Revoker writes into a lock node to ask
// its holder to release; holders here honour it too.
const curatorRevoke = "__REVOKE__"

// revokeRequested reports whether lock node data carries a revocation
// request: ours (owner metadata with revoke_requested_at) or Curator's.
func revokeRequested(data []byte) bool {
	if string(data) == curatorRevoke {
		return true
	}
	o, ok := parseOwner(data)
	return ok && !o.RevokeRequestedAt.IsZero()
}
