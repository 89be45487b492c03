package client

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zkgen/zkgen/runtime/internal/wire"
)

// The server expires a session when it has not heard from the client for the
// negotiated session timeout. A client cut off from the server learns of the
// expiry only when it reconnects — by then another client may hold the lock
// it thinks it holds. So the session keeps its own clock: it records when it
// last heard from the server and the timeout the server granted, and when
// disconnected it declares the session expired at lostFraction of the
// timeout after it last heard from the server — before the server can have
// expired it.
//
// How early that must be: the ensemble's leader expires sessions, and a
// client connected to a follower is known to the leader only through the
// follower's reports, sent each time the leader pings it (every half tick).
// A follower cut off from the leader takes the client's latest contacts
// with it, so the leader's clock may start at an earlier contact: one ping
// interval earlier for a quiet client (go-zookeeper pings every third of
// the timeout), plus the half tick between reports (at most a quarter of
// the timeout, as the server grants no timeout under two ticks). The leader
// may therefore expire the session 1/3 + 1/4 of the timeout after the last
// reply the client saw, plus its own rounding up to a tick; giving up at
// 0.35 leaves at least 6% of the timeout for the client's timer and its
// handles to report the loss (25% or more with the timeout at four ticks or
// more). TestPartitionLockQuietMinorityHolder isolates a quiet holder's
// follower right after a ping: at 0.8 the majority took the lock first.

// lostFraction is the part of the negotiated timeout after the last sign of
// the server at which a disconnected session gives up.
const lostFraction = 0.35

// liveConn wraps a connection to the server: it notes when bytes arrive and
// reads the negotiated timeout from the first frame of the stream, the
// ConnectResponse (int32 length, int32 protocol version, int32 timeout, ...).
// It also keeps the session's last zxid (see zxidGuard).
type liveConn struct {
	net.Conn
	s      *Session
	addr   string // the server's address, for errors
	first  [2]byte
	firstN int // bytes of first read: the start of the server's first reply
	zxid   *zxidGuard

	wmu      sync.Mutex  // one frame written at a time: go-zookeeper's, or the session's own
	ready    atomic.Bool // the handshake is done: a session's requests may be written
	injected injectWaits // the session's own requests awaiting their replies (inject.go)
	// readBy is the read deadline go-zookeeper set (Unix nanoseconds; 0:
	// none): a connection past it is dead (see Write).
	readBy atomic.Int64
}

// Write writes one frame of go-zookeeper's. A failed write is reported as
// written, with the connection closed: go-zookeeper answers a request whose
// write failed at once, yet leaves it among the requests waiting for a reply
// and answers it again when its connection loop ends; if the caller stopped
// waiting in between (the Conn was closed: the session ended), that second
// answer blocks the loop for ever, a goroutine and a connection leaked per
// occurrence (seen as a stuck loop under testing/synctest, in the
// simulation search of queues). With the write reported done and the connection
// closed, the loop answers every waiting request once, ErrConnectionClosed:
// the outcome unknown, as for a reply lost, which the recipes settle.
//
// A frame written once the read deadline has passed is not sent: the
// connection is closed instead, as go-zookeeper's receive loop is about to
// close it for its silence. Its ping falls due at the same instant as that
// deadline when the last frame read and the last one written were at one
// instant (every 1/3 and 2/3 of the session timeout); which of the two
// timers' goroutines runs first would decide whether the dead connection's
// ping reaches the server, and a replay on the simulator would differ.
func (c *liveConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if by := c.readBy.Load(); by != 0 && !time.Now().Before(time.Unix(0, by)) {
		c.close()
		return len(p), nil
	}
	c.zxid.wrote(p)
	if _, err := c.Conn.Write(p); err != nil {
		c.close()
		return len(p), nil
	}
	c.s.sends.wrote(p)
	c.s.frames.wrote()
	return len(p), nil
}

// SetReadDeadline sets the connection's read deadline, noted for Write.
func (c *liveConn) SetReadDeadline(t time.Time) error {
	c.noteReadBy(t)
	return c.Conn.SetReadDeadline(t)
}

// SetDeadline sets the connection's deadlines, noted for Write.
func (c *liveConn) SetDeadline(t time.Time) error {
	c.noteReadBy(t)
	return c.Conn.SetDeadline(t)
}

func (c *liveConn) noteReadBy(t time.Time) {
	if t.IsZero() {
		c.readBy.Store(0)
		return
	}
	c.readBy.Store(t.UnixNano())
}

// writeFrame writes a request of the session's own (inject.go).
func (c *liveConn) writeFrame(p []byte) { _, _ = c.Write(p) }

// Close closes the connection; the session's own requests waiting on it
// fail.
func (c *liveConn) Close() error { return c.close() }

func (c *liveConn) close() error {
	c.ready.Store(false)
	c.injected.fail()
	return c.Conn.Close()
}

func (c *liveConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.firstN < len(c.first) {
		if ferr := c.firstReply(p[:n], err); ferr != nil {
			return 0, ferr
		}
		c.firstN += copy(c.first[c.firstN:], p[:n])
	}
	if n > 0 {
		c.s.lastRecv.Store(time.Now().UnixNano())
		c.zxid.read(p[:n])
	}
	if err != nil {
		c.ready.Store(false)
		c.injected.fail()
	}
	return n, err
}

// firstReply checks the start of the server's first reply, p (or the
// error met reading it), for a disagreement on TLS (ErrTLSHandshake): a
// server that refused the client's certificate after the handshake, or a
// TLS port answering a plain client with an alert or (ZooKeeper's Netty
// port) closing the connection without a reply, which speaksTLS then tells
// from other reasons to close.
func (c *liveConn) firstReply(p []byte, err error) error {
	host := c.s.hosts.serverName(c.addr)
	if c.s.tlsConf != nil {
		if err != nil && tlsRefusal(err) {
			return tlsFailed(c.s, c.addr, host, err)
		}
		return nil
	}
	var got [2]byte
	k := copy(got[:], c.first[:c.firstN])
	copy(got[k:], p)
	if c.firstN+len(p) >= len(got) && got == tlsAlertPrefix {
		return tlsFailed(c.s, c.addr, host, errors.New("the server answered with a TLS alert: its port speaks TLS (see WithTLS)"))
	}
	if c.firstN+len(p) == 0 && err != nil && !isEstablished(c.s) && speaksTLS(c.s, c.addr) {
		return tlsFailed(c.s, c.addr, host, fmt.Errorf("the server closed the connection without a reply (%w), and its port answers a TLS handshake: it speaks TLS (see WithTLS)", err))
	}
	return nil
}

// Timeout returns the timeout the server granted, or the one asked.
func (s *Ops) Timeout() time.Duration {
	if d := time.Duration(s.negotiated.Load()); d > 0 {
		return d
	}
	return s.timeout
}

// giveUpIn returns how long a session that just lost its connection may keep
// reconnecting before it must be treated as expired.
func giveUpIn(s *Session) time.Duration {
	last := s.lastRecv.Load()
	if last == 0 {
		last = time.Now().UnixNano()
	}
	deadline := time.Unix(0, last).Add(time.Duration(float64(OpsOf(s).Timeout()) * lostFraction))
	return max(time.Until(deadline), 0)
}

// --- The session clock when asked (see clockEnded)
//
// The expiry timer above acts when its goroutine runs. A process frozen
// (SIGSTOP, a VM paused, a long stop-the-world) past the session timeout
// resumes with every goroutine runnable at once, and the application's may
// run before the ones that would tell it that its session is over: a
// tenure's Context().Err() would still say nil although another process
// took the lock meanwhile. So the tenures consult the clock when they are
// asked (Held, Context().Err(), Lost, Guarded), through clockEnded.
//
// That clock counts from the last moment the server is known to have seen
// the session alive: the send time of the latest request it answered (a
// server that answers a request has seen the session when it received it,
// after it was sent). Bytes merely read are no evidence of the time: after
// a pause, replies and notifications the server sent long ago are read
// from the socket's buffer, and the time they are read says nothing of
// when they were sent. Replies come in the order of the requests (ZooKeeper
// answers a session's requests in order), so each is matched to its
// request's send time in a queue; notifications (xid -1) are not replies.

// replyClock matches the replies read on one connection to the send times
// of their requests, and records the latest in the session (answeredAt).
type replyClock struct {
	s  *Session
	mu sync.Mutex
	q  []sentFrame // requests sent and not answered, in order
	// The ConnectRequest's send time, answered by the ConnectResponse
	// (no xid); zero once answered.
	connectSent int64
}

type sentFrame struct {
	xid int32
	at  int64 // monoNow when written
}

// wrote notes the frame w the client is about to write.
func (c *replyClock) wrote(w wire.Written) {
	now := monoNow()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case w.Connect:
		c.connectSent = now
	case !w.Short:
		c.q = append(c.q, sentFrame{xid: w.Xid, at: now})
	}
}

// connected notes the ConnectResponse read.
func (c *replyClock) connected() {
	c.mu.Lock()
	at := c.connectSent
	c.connectSent = 0
	c.mu.Unlock()
	if at != 0 {
		noteAnswered(c.s, at)
	}
}

// replied notes a reply header read with xid.
func (c *replyClock) replied(xid int32) {
	if xid == wire.XidNotification {
		return
	}
	c.mu.Lock()
	var at int64
	for i, f := range c.q {
		if f.xid == xid {
			at = f.at
			c.q = c.q[i+1:]
			break
		}
	}
	c.mu.Unlock()
	if at != 0 {
		noteAnswered(c.s, at)
	}
}

// noteAnswered records that the server answered a request sent at at
// (monoNow).
func noteAnswered(s *Session, at int64) {
	for {
		cur := s.answeredAt.Load()
		if at <= cur || s.answeredAt.CompareAndSwap(cur, at) {
			return
		}
	}
}

// monoStart is the origin of monoNow.
var monoStart = time.Now()

// monoNow reads the monotonic clock (nanoseconds since monoStart): the wall
// clock may be stepped, which must not end a session.
func monoNow() int64 { return int64(time.Since(monoStart)) }

// clockEnded reports whether the session is over, or over by its own
// clock although no goroutine has acted on it yet: nothing answered from
// requests sent in the last two thirds of the session timeout (go-zookeeper
// drops a connection silent that long, and the session then gives up at
// once, see lostFraction), or, while disconnected, the give-up moment
// passed. A healthy session is answered a ping every third of the timeout,
// so it never reads as ended.
func clockEnded(s *Session) bool {
	if s.Err() != nil {
		return true
	}
	at := s.answeredAt.Load()
	if at == 0 {
		return false
	}
	age := time.Duration(monoNow() - at)
	timeout := OpsOf(s).Timeout()
	if age >= timeout*2/3 {
		return true
	}
	if age < time.Duration(float64(timeout)*lostFraction) {
		return false
	}
	s.mu.Lock()
	disconnected := s.expiryTimer != nil
	s.mu.Unlock()
	return disconnected
}

// CheckClock ends the session, as its expiry timer would, when clockEnded
// says it is over by its clock; it reports whether the session has ended.
func (s *Ops) CheckClock() bool {
	if !clockEnded(s.session()) {
		return false
	}
	if s.session().Err() == nil {
		age := time.Duration(monoNow() - s.answeredAt.Load())
		s.log.Warn("nothing answered from zookeeper for too long (was the process paused?): session treated as expired",
			"since_last_answer", age, "session_timeout", s.Timeout())
		s.gaveUp.Store(true)
		s.session().expire()
	}
	return true
}
