package runtime

import (
	"encoding/binary"
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

// Byte offsets of the zxid fields in the frames (each frame starts with an
// int32 length).
const (
	connectZxidAt   = 8  // ConnectRequest: length, protocol version, last zxid seen
	setWatchesZxid  = 12 // setWatches: length, xid, opcode, relative zxid
	replyXidAt      = 4  // reply: length, xid, zxid, err
	replyZxidAt     = 8
	replyHeaderSize = 20
	opSetWatches    = 101
)

// zxidGuard is the zxid bookkeeping of one connection (see above).
type zxidGuard struct {
	s    *Session
	prev int64 // greatest zxid seen on the session's earlier connections

	// reader state
	hs    [4]byte // length of the ConnectResponse
	hsN   int
	hsLen int // -1 until known
	off   int // offset in the current reply frame, length prefix included
	frame int
	hdr   [replyHeaderSize - 4]byte // length, xid, zxid

	writes int // frames written; the first is the ConnectRequest

	clock replyClock // the send times of the requests answered (liveness.go)
}

// newZxidGuard starts the bookkeeping of a connection dialed now: every
// reply of the earlier connections has been read (go-zookeeper dials again
// only after the last reader has returned).
func newZxidGuard(s *Session) *zxidGuard {
	return &zxidGuard{s: s, prev: s.lastZxid.Load(), hsLen: -1, clock: replyClock{s: s}}
}

// wrote completes the zxid field of the frame p the client writes, in place
// (go-zookeeper writes one frame per call, from a buffer of its own).
func (g *zxidGuard) wrote(p []byte) {
	g.writes++
	switch {
	case g.writes == 1 && len(p) >= connectZxidAt+8:
		binary.BigEndian.PutUint64(p[connectZxidAt:], uint64(g.prev))
	case len(p) >= setWatchesZxid+8 && int32(binary.BigEndian.Uint32(p[8:12])) == opSetWatches:
		binary.BigEndian.PutUint64(p[setWatchesZxid:], uint64(g.prev))
	}
}

// read records and hides the zxids of the replies in p, bytes just read from
// the server.
func (g *zxidGuard) read(p []byte) {
	i := 0
	for ; i < len(p) && (g.hsLen < 0 || g.hsN < 4+g.hsLen); i++ {
		// The ConnectResponse: no zxid.
		if g.hsN < 4 {
			g.hs[g.hsN] = p[i]
		}
		g.hsN++
		if g.hsN == 4 {
			g.hsLen = int(binary.BigEndian.Uint32(g.hs[:]))
		}
		if g.hsLen >= 0 && g.hsN == 4+g.hsLen {
			g.clock.connected()
		}
	}
	for i < len(p) {
		if g.off < len(g.hdr) {
			g.hdr[g.off] = p[i]
			if g.off >= replyZxidAt {
				p[i] = 0
			}
			g.off++
			i++
			if g.off == len(g.hdr) {
				g.frame = int(binary.BigEndian.Uint32(g.hdr[:4]))
				xid := int32(binary.BigEndian.Uint32(g.hdr[replyXidAt:]))
				zxid := int64(binary.BigEndian.Uint64(g.hdr[replyZxidAt:]))
				if xid >= 0 && zxid > 0 {
					g.s.noteZxid(zxid)
				}
				g.clock.replied(xid)
			}
			continue
		}
		n := min(len(p)-i, 4+g.frame-g.off)
		g.off += n
		i += n
		if g.off >= 4+g.frame {
			g.off = 0
		}
	}
}

// noteZxid records a zxid seen in a reply.
func (s *Session) noteZxid(z int64) {
	for {
		cur := s.lastZxid.Load()
		if z <= cur || s.lastZxid.CompareAndSwap(cur, z) {
			return
		}
	}
}
