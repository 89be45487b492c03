package client

import (
	"github.com/zkgen/zkgen/runtime/internal/wire"
)

// go-zookeeper v1.0.4 has a data race on reconnections of a session that
// holds watches: its connection loop starts the goroutine that reads replies
// (recvLoop), then reads the last zxid the client has seen to re-register
// the watches (sendSetWatches), while that reader writes the same field for
// every reply. A request issued while the client was disconnected is sent
// the moment the connection is back, and its reply can be read before the
// watches are re-registered: the race detector reports the race, and a test
// run with -race fails. The race is not only a report: a reply read first
// makes the re-registration ask the server only about changes after that
// reply's zxid, and a change made while the client was away, before that
// zxid, then fires no watch.
//
// The session removes the race without patching the library, in the
// connection it dials (liveConn): it keeps the last zxid itself and hides it
// from go-zookeeper.
//
//   - Every reply reaches go-zookeeper with a zxid of 0, which it does not
//     record: its field is never written after the session starts, so
//     nothing races on it.
//   - The session records the zxid of each reply (the greatest seen, as
//     go-zookeeper would have: replies to requests only, not notifications
//     or pings).
//   - The two requests that carry the field are completed on their way out:
//     the ConnectRequest of each connection (LastZxidSeen, so that the
//     server refuses a client that has seen more than it has) and every
//     setWatches request (RelativeZxid), both with the greatest zxid seen on
//     the connections before the one they are written on. A setWatches
//     request left unsent by a connection that died and written on the next
//     gets the same value, which is what it was built for.

// zxidGuard is the zxid bookkeeping of one connection (see above); the
// frames' layout is package wire's.
type zxidGuard struct {
	s    *Session
	conn *liveConn // the connection's own requests (inject.go)
	prev int64     // greatest zxid seen on the session's earlier connections
	out  wire.Out
	in   *wire.In

	clock replyClock // the send times of the requests answered (liveness.go)
}

// newZxidGuard starts the bookkeeping of connection c, dialed now: every
// reply of the earlier connections has been read (go-zookeeper dials again
// only after the last reader has returned).
func newZxidGuard(s *Session, c *liveConn) *zxidGuard {
	return &zxidGuard{s: s, conn: c, prev: s.lastZxid.Load(), in: wire.NewIn(), clock: replyClock{s: s}}
}

// wrote completes the zxid field of the frame p the client writes, in place
// (go-zookeeper writes one frame per call, from a buffer of its own), and
// notes its send time.
func (g *zxidGuard) wrote(p []byte) {
	g.clock.wrote(g.out.Wrote(p, g.prev))
}

// read records and hides the zxids of the replies in p, bytes just read from
// the server.
func (g *zxidGuard) read(p []byte) { g.in.Read(p, true, g) }

// Connected notes the ConnectResponse read (wire.Handler): the timeout
// the server granted, the session's password (for retire), and the answer
// to the ConnectRequest.
func (g *zxidGuard) Connected(h wire.Handshake) {
	if h.Timeout > 0 {
		g.s.negotiated.Store(int64(h.Timeout))
		if h.Passwd != nil {
			g.s.passwd.Store(&h.Passwd)
		}
		g.conn.ready.Store(true)
	}
	g.clock.connected()
}

// Reply notes a reply header read (wire.Handler): the zxid of a reply to a
// request (go-zookeeper's or the session's own; not of a notification or
// a ping), and its answer; the reply to a request of the session's own
// goes to its caller (inject.go).
func (g *zxidGuard) Reply(xid int32, zxid int64, code int32) {
	own := isInjected(xid)
	if (xid >= 0 || own) && zxid > 0 {
		noteZxid(g.s, zxid)
	}
	g.clock.replied(xid)
	if xid >= 0 || own {
		g.s.hosts.Served()
	}
	if own {
		g.conn.injected.replied(xid, injectReply{zxid: zxid, code: code})
	}
}

// noteZxid records a zxid seen in a reply.
func noteZxid(s *Session, z int64) {
	for {
		cur := s.lastZxid.Load()
		if z <= cur || s.lastZxid.CompareAndSwap(cur, z) {
			return
		}
	}
}
