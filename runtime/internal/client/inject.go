package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/wire"
)

// Requests go-zookeeper cannot send (addWatch, opcode 106: ZooKeeper 3.6's
// persistent watches) are written by the session itself on go-zookeeper's
// connection, between go-zookeeper's own frames: the session dials that
// connection (liveConn) and sees every frame both ways (package wire).
//
//   - Such a request has a negative xid of its own (from injectXidFirst
//     down), which go-zookeeper never uses: it reads the reply, finds no
//     request of its own with that xid, logs it at debug and drops it.
//     The session hears of the reply header first (zxidGuard.Reply) and
//     hands it to the caller.
//   - go-zookeeper reads each frame whole, then handles it, then reads the
//     next, with no buffer between (see wire.In.Read). So when the session
//     hears of the reply, every frame before it, notifications included,
//     has been handled: the event callback has been called for each
//     notification the server sent before it. A caller may take the reply
//     as a barrier in the stream of events.
//   - Notifications of a persistent watch reach go-zookeeper as any other;
//     it passes each to the session's event callback (Ops.Listen) and
//     fires its own one-shot watches on the same path and type, which
//     the server fires with them or their readers take for a spurious
//     wake-up (every watch loop of the runtime reads again).
//   - A request is written only on a connection whose handshake is done,
//     and a connection lost before the reply fails it with
//     zk.ErrConnectionClosed: the server may or may not have taken it.
//     Watches belong to a connection: a persistent watch must be added
//     again on each new one (Listen reports StateHasSession).

// ErrUnimplemented means the server does not know a request: a ZooKeeper
// before 3.6 asked for a persistent watch. Such a server closes the
// connection after its answer; the session reconnects.
var ErrUnimplemented = errors.New("zookeeper: request not implemented by the server")

// injectXidFirst is the xid of the first request the session writes
// itself; the next ones count down from it, wrapping back to it before
// they reach go-zookeeper's special xids (-1, -2).
const injectXidFirst = -1 << 20

// isInjected reports whether xid is one of the session's own requests'.
func isInjected(xid int32) bool { return xid <= injectXidFirst }

// nextInjectXid returns a fresh xid for a request of the session's own.
func nextInjectXid(s *Session) int32 {
	n := s.injectN.Add(1)
	return int32(int64(injectXidFirst) - int64(n%(1<<30)))
}

// injectReply is the header of the reply to a request of the session's own.
type injectReply struct {
	zxid int64
	code int32
}

// injectWaits are the requests of the session's own that wait for their
// replies on one connection.
type injectWaits struct {
	mu    sync.Mutex
	waits map[int32]chan injectReply
	dead  bool // the connection is gone: nothing more is written or answered
}

// add registers a wait for the reply to xid; false when the connection
// is gone.
func (w *injectWaits) add(xid int32) (<-chan injectReply, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return nil, false
	}
	if w.waits == nil {
		w.waits = map[int32]chan injectReply{}
	}
	ch := make(chan injectReply, 1)
	w.waits[xid] = ch
	return ch, true
}

// drop forgets the wait for xid (its caller gave up).
func (w *injectWaits) drop(xid int32) {
	w.mu.Lock()
	delete(w.waits, xid)
	w.mu.Unlock()
}

// replied hands the reply to xid to its waiter.
func (w *injectWaits) replied(xid int32, r injectReply) {
	w.mu.Lock()
	ch := w.waits[xid]
	delete(w.waits, xid)
	w.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

// fail ends every wait: the connection is gone.
func (w *injectWaits) fail() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dead = true
	for xid, ch := range w.waits {
		close(ch)
		delete(w.waits, xid)
	}
}

// Inject writes the request frame(xid) on the session's connection and
// returns the zxid of its reply once it comes (see above): every
// notification the server sent before the reply has been passed to the
// Listen callbacks by then. It blocks until the reply, ctx's end or the
// session's end. It fails with zk.ErrConnectionClosed when the session
// is not connected or the connection is lost first (nothing is retried),
// with ErrUnimplemented when the server does not know the request, and
// with the error of the reply's code otherwise.
func (o *Ops) Inject(ctx context.Context, frame func(xid int32) []byte) (int64, error) {
	s := o.session()
	awaitTurn(s, "")
	if err := s.Err(); err != nil {
		return 0, err
	}
	c := s.live.Load()
	if c == nil || !c.ready.Load() {
		return 0, zk.ErrConnectionClosed
	}
	xid := nextInjectXid(s)
	ch, ok := c.injected.add(xid)
	if !ok {
		return 0, zk.ErrConnectionClosed
	}
	defer c.injected.drop(xid)
	c.writeFrame(frame(xid))
	select {
	case r, ok := <-ch:
		if !ok {
			return 0, zk.ErrConnectionClosed
		}
		return r.zxid, codeError(r.code)
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-s.done:
		return 0, s.Err()
	}
}

// AddWatchRecursive adds a persistent recursive watch on path on the
// session's current connection (see Inject): until that connection ends,
// every creation, deletion and data change of path or a node below it is
// passed to the Listen callbacks (as go-zookeeper's zk.Event, without a
// zxid: ZooKeeper 3.8 sends none). It returns the reply's zxid. A server
// before 3.6 answers ErrUnimplemented and closes the connection. path
// need not exist.
func (o *Ops) AddWatchRecursive(ctx context.Context, path string) (int64, error) {
	z, err := o.Inject(ctx, func(xid int32) []byte {
		return wire.PathRequest(xid, wire.OpAddWatch, path, wire.AddWatchPersistentRecursive)
	})
	return z, OpError("addWatch", path, err)
}

// RemoveWatchRecursive removes the persistent recursive watch on path
// from the session's current connection (see AddWatchRecursive), and no
// other watch. A connection without one is no error (nothing to remove);
// a lost connection took the watch with it, and is reported as
// zk.ErrConnectionClosed. A server that cannot remove a watch by that
// type (ZooKeeper 3.6 to 3.8 know only the one-shot types, and answer
// MARSHALLINGERROR) fails it with ErrUnimplemented: the watch then lasts
// as long as the connection.
func (o *Ops) RemoveWatchRecursive(ctx context.Context, path string) error {
	_, err := o.Inject(ctx, func(xid int32) []byte {
		return wire.PathRequest(xid, wire.OpRemoveWatches, path, wire.WatcherPersistentRecursive)
	})
	switch {
	case errors.Is(err, errNoWatcher):
		err = nil
	case errors.Is(err, errMarshalling), errors.Is(err, errBadArguments):
		err = fmt.Errorf("%w: removeWatches of a persistent recursive watch (%w)", ErrUnimplemented, err)
	}
	return OpError("removeWatches", path, err)
}

// Errors of reply codes go-zookeeper does not name.
var (
	errNoWatcher    = errors.New("zookeeper: no such watch")     // NOWATCHER
	errMarshalling  = errors.New("zookeeper: marshalling error") // MARSHALLINGERROR
	errBadArguments = errors.New("zookeeper: bad arguments")     // BADARGUMENTS
)

// SyncZxid is Sync (one attempt) that returns the zxid of its reply: the
// server has applied every transaction up to it, and every notification
// of a change up to it has been passed to the Listen callbacks.
func (o *Ops) SyncZxid(ctx context.Context, path string) (int64, error) {
	z, err := o.Inject(ctx, func(xid int32) []byte { return wire.PathRequest(xid, wire.OpSync, path) })
	if errors.Is(err, zk.ErrNoNode) {
		err = nil
	}
	return z, OpError("sync", path, err)
}

// codeError is the error of a reply's code.
func codeError(code int32) error {
	switch code {
	case 0:
		return nil
	case wire.CodeUnimplemented:
		return ErrUnimplemented
	case -5:
		return errMarshalling
	case -8:
		return errBadArguments
	case -101:
		return zk.ErrNoNode
	case -102:
		return zk.ErrNoAuth
	case -112:
		return zk.ErrSessionExpired
	case -118:
		return zk.ErrSessionMoved
	case -121:
		return errNoWatcher
	}
	return fmt.Errorf("zookeeper: error code %d", code)
}

// listeners are the Listen callbacks of a session.
type listeners struct {
	mu  sync.Mutex
	fns atomic.Pointer[[]*func(zk.Event)] // copied on write; read on every event
}

// Listen registers fn, which is called with every event go-zookeeper
// passes to the session: the notifications of every watch (the one-shot
// watches of the recipes and the persistent ones of AddWatchRecursive),
// in the order the server sent them, and the session's state changes
// (zk.EventSession: StateHasSession once a new connection's handshake is
// done, before any reply on it). fn runs on go-zookeeper's connection
// loop: it must not block. remove unregisters it.
func (o *Ops) Listen(fn func(zk.Event)) (remove func()) {
	l := &o.listen
	p := &fn
	l.mu.Lock()
	defer l.mu.Unlock()
	var cur []*func(zk.Event)
	if old := l.fns.Load(); old != nil {
		cur = *old
	}
	next := append(cur[:len(cur):len(cur)], p)
	l.fns.Store(&next)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		var kept []*func(zk.Event)
		for _, f := range *l.fns.Load() {
			if f != p {
				kept = append(kept, f)
			}
		}
		l.fns.Store(&kept)
	}
}

// tell calls the Listen callbacks with ev.
func (l *listeners) tell(ev zk.Event) {
	if fns := l.fns.Load(); fns != nil {
		for _, f := range *fns {
			(*f)(ev)
		}
	}
}
