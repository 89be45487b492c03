// Package wire reads and completes the frames of ZooKeeper's client
// protocol as they pass between go-zookeeper and its connection. It is the
// one place that knows their byte layout; the session's connection
// (runtime's liveConn) uses it to keep the session's last zxid out of
// go-zookeeper's reach (a data race in go-zookeeper v1.0.4, see the
// runtime's zxid.go), to time the server's answers (liveness.go) and to
// learn the session timeout the server granted.
//
// Every frame starts with its length, an int32. The client writes the
// ConnectRequest first, then requests (xid, opcode, body); the server
// answers with the ConnectResponse (protocol version, timeout, session id,
// password), then replies and notifications, each with a header (xid,
// zxid, err). go-zookeeper writes one frame per Write call.
package wire

import (
	"encoding/binary"
	"fmt"
	"io"
	"time"
)

// Byte offsets in the frames, length prefix included.
const (
	connectZxidAt    = 8  // ConnectRequest: length, protocol version, last zxid seen
	connectTimeoutAt = 8  // ConnectResponse: length, protocol version, timeout (ms)
	requestXidAt     = 4  // request: length, xid, opcode, body
	requestOpAt      = 8  //
	setWatchesZxidAt = 12 // setWatches: length, xid, opcode, relative zxid
	replyXidAt       = 4  // reply: length, xid, zxid, err
	replyZxidAt      = 8  //
	replyErrAt       = 16 //
	replyHeaderSize  = 20 //
)

// OpSetWatches is the opcode of the request that re-registers a session's
// watches on a new connection.
const OpSetWatches = 101

// XidNotification is the xid of a watch notification, which answers no
// request.
const XidNotification = -1

// Out follows the frames the client writes on one connection.
type Out struct{ writes int }

// Written is what a frame written is.
type Written struct {
	Connect bool  // the ConnectRequest, the connection's first frame
	Xid     int32 // a request's xid; for the ConnectRequest, 0
	Short   bool  // a request frame too short to carry an xid
}

// Wrote notes frame p, about to be written, and sets its zxid field in
// place to zxid when it has one: the ConnectRequest's last zxid seen and a
// setWatches request's relative zxid.
func (o *Out) Wrote(p []byte, zxid int64) Written {
	o.writes++
	if o.writes == 1 {
		if len(p) >= connectZxidAt+8 {
			binary.BigEndian.PutUint64(p[connectZxidAt:], uint64(zxid))
		}
		return Written{Connect: true}
	}
	if len(p) < requestOpAt {
		return Written{Short: true}
	}
	if len(p) >= setWatchesZxidAt+8 && int32(binary.BigEndian.Uint32(p[requestOpAt:])) == OpSetWatches {
		binary.BigEndian.PutUint64(p[setWatchesZxidAt:], uint64(zxid))
	}
	return Written{Xid: int32(binary.BigEndian.Uint32(p[requestXidAt:]))}
}

// Handshake is what a ConnectResponse says.
type Handshake struct {
	// Timeout is the session timeout the server granted; 0 when it
	// granted none: the session it was asked to resume has expired.
	Timeout time.Duration
	// SessionID and Passwd are the session's credentials, with which a
	// later connection resumes it (Passwd is nil when the frame is cut
	// short).
	SessionID int64
	Passwd    []byte
}

// Handler is told what In reads.
type Handler interface {
	// Connected reports the ConnectResponse read.
	Connected(h Handshake)
	// Reply reports a reply's (or a notification's, XidNotification, or a
	// ping's) header: the xid it answers, the server's zxid, its error
	// code (0: none).
	Reply(xid int32, zxid int64, code int32)
}

// In follows the server's stream of one connection.
type In struct {
	hs    [handshakeMax]byte    // the ConnectResponse's start: length, version, timeout, id, password
	hsN   int                   // bytes of the ConnectResponse read
	hsLen int                   // its length, -1 until known
	off   int                   // offset in the current reply frame, length prefix included
	frame int                   // the current reply frame's length
	hdr   [replyHeaderSize]byte // length, xid, zxid, err
}

// NewIn returns the reader of a fresh connection's stream.
func NewIn() *In { return &In{hsLen: -1} }

// Read walks p, bytes just read from the server, in order, and tells h.
// With hide set it zeroes each reply's zxid in p, so that the client
// records none.
//
// h hears of a reply once its header's last byte is in p. A client that
// reads each frame whole before it reads the next, with no buffer between
// (go-zookeeper reads the length, then the rest), has therefore handled
// every earlier frame, notifications included, when h hears of a reply.
func (in *In) Read(p []byte, hide bool, h Handler) {
	i := in.handshake(p, h)
	for i < len(p) {
		if in.off < len(in.hdr) {
			in.hdr[in.off] = p[i]
			if hide && in.off >= replyZxidAt && in.off < replyErrAt {
				p[i] = 0
			}
			in.off++
			i++
			if in.off == len(in.hdr) {
				in.frame = int(binary.BigEndian.Uint32(in.hdr[:4]))
				h.Reply(int32(binary.BigEndian.Uint32(in.hdr[replyXidAt:])), int64(binary.BigEndian.Uint64(in.hdr[replyZxidAt:])),
					int32(binary.BigEndian.Uint32(in.hdr[replyErrAt:])))
			}
			continue
		}
		n := min(len(p)-i, 4+in.frame-in.off)
		in.off += n
		i += n
		if in.off >= 4+in.frame {
			in.off = 0
		}
	}
}

// handshake consumes the ConnectResponse's bytes at the start of p, telling
// h once it is complete, and returns how many it consumed.
func (in *In) handshake(p []byte, h Handler) int {
	i := 0
	for ; i < len(p) && (in.hsLen < 0 || in.hsN < 4+in.hsLen); i++ {
		if in.hsN < len(in.hs) {
			in.hs[in.hsN] = p[i]
		}
		in.hsN++
		if in.hsN == 4 {
			in.hsLen = int(binary.BigEndian.Uint32(in.hs[:4]))
		}
		if in.hsLen >= 0 && in.hsN == 4+in.hsLen {
			h.Connected(ParseConnectResponse(in.hs[:min(in.hsN, len(in.hs))]))
		}
	}
	return i
}

// Carries reports whether frame p holds the bytes of s, such as the
// GUID-bearing prefix of a path a request creates (without converting
// either: this runs on every frame written while someone waits for one).
func Carries(p []byte, s string) bool {
	for i := 0; i+len(s) <= len(p); i++ {
		if string(p[i:i+len(s)]) == s {
			return true
		}
	}
	return false
}

// handshakeMax is the length of a ConnectResponse frame with a password of
// up to 16 bytes (ZooKeeper's are 16): length, protocol version, timeout,
// session id, password (length and bytes), read-only flag.
const handshakeMax = 4 + 4 + 4 + 8 + 4 + 16 + 1

// ParseConnectResponse reads frame, a ConnectResponse (length prefix
// included, possibly cut after the password).
func ParseConnectResponse(frame []byte) Handshake {
	var h Handshake
	if len(frame) < connectTimeoutAt+4 {
		return h
	}
	if ms := int32(binary.BigEndian.Uint32(frame[connectTimeoutAt:])); ms > 0 {
		h.Timeout = time.Duration(ms) * time.Millisecond
	}
	const idAt, pwAt = connectTimeoutAt + 4, connectTimeoutAt + 12
	if len(frame) < pwAt {
		return h
	}
	h.SessionID = int64(binary.BigEndian.Uint64(frame[idAt:]))
	if len(frame) < pwAt+4 {
		return h
	}
	if n := int(int32(binary.BigEndian.Uint32(frame[pwAt:]))); n >= 0 && len(frame) >= pwAt+4+n {
		h.Passwd = append([]byte(nil), frame[pwAt+4:pwAt+4+n]...)
	}
	return h
}

// OpCloseSession is the opcode of the request that closes a session.
const OpCloseSession = -11

// ConnectRequest returns the frame that opens a connection to the session
// with the given credentials (a new session when id is 0), asking for
// timeout. lastZxid is the greatest zxid the client has seen: a server
// that has seen less refuses it.
func ConnectRequest(lastZxid int64, timeout time.Duration, id int64, passwd []byte) []byte {
	b := make([]byte, 4, 4+4+8+4+8+4+len(passwd)+1)
	b = binary.BigEndian.AppendUint32(b, 0) // protocol version
	b = binary.BigEndian.AppendUint64(b, uint64(lastZxid))
	b = binary.BigEndian.AppendUint32(b, uint32(timeout.Milliseconds()))
	b = binary.BigEndian.AppendUint64(b, uint64(id))
	b = binary.BigEndian.AppendUint32(b, uint32(len(passwd)))
	b = append(b, passwd...)
	b = append(b, 0) // not read-only
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// Request returns the frame of a request without a body.
func Request(xid int32, op int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, 8)
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	return binary.BigEndian.AppendUint32(b, uint32(op))
}

// Opcodes of the requests PathRequest builds.
const (
	// OpSync asks the server to catch up with the leader (body: path).
	OpSync = 9
	// OpAddWatch adds a persistent watch (body: path, mode); ZooKeeper
	// 3.6 and later. A server that does not know it (3.5) answers
	// CodeUnimplemented and closes the connection.
	OpAddWatch = 106
)

// OpRemoveWatches removes a connection's watches of one type on a path
// (body: path, watcher type).
const OpRemoveWatches = 18

// WatcherPersistentRecursive is removeWatches' type of the watches
// addWatch adds with AddWatchPersistentRecursive.
const WatcherPersistentRecursive = 5

// AddWatchPersistentRecursive is addWatch's mode for a watch that fires
// on every change of the path and of every node below it (created,
// deleted, data changed; not children changed), stays registered after
// it fires, and lasts as long as the connection.
const AddWatchPersistentRecursive = 1

// CodeUnimplemented is the error code of a reply to an unknown opcode.
const CodeUnimplemented = -6

// PathRequest returns the frame of a request whose body is path followed
// by ints (sync: none; addWatch: the mode; removeWatches: the watcher
// type).
func PathRequest(xid, op int32, path string, ints ...int32) []byte {
	b := make([]byte, 4, 4+8+4+len(path)+4*len(ints))
	b = binary.BigEndian.AppendUint32(b, uint32(xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	b = binary.BigEndian.AppendUint32(b, uint32(len(path)))
	b = append(b, path...)
	for _, v := range ints {
		b = binary.BigEndian.AppendUint32(b, uint32(v))
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// ReadFrame reads one frame of at most limit bytes (length prefix excluded)
// from r, and returns it with its length prefix.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := int(int32(binary.BigEndian.Uint32(n[:])))
	if size < 0 || size > limit {
		return nil, fmt.Errorf("zookeeper frame of %d bytes, more than %d", size, limit)
	}
	b := make([]byte, 4+size)
	copy(b, n[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// ReplyHeader reads a reply frame's header: the xid of the request it
// answers, and the error code (0: none).
func ReplyHeader(frame []byte) (xid int32, code int32, ok bool) {
	if len(frame) < replyHeaderSize {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(frame[replyXidAt:])), int32(binary.BigEndian.Uint32(frame[replyErrAt:])), true
}
