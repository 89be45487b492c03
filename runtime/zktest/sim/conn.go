package sim

import (
	"cmp"
	"encoding/binary"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// conn is one client connection: a reader goroutine that executes requests
// under the server's lock, and a writer goroutine that sends what they
// queue (replies and watch events, in the order they were queued).
type conn struct {
	srv  *Server
	id   int64   // the order it was opened in
	key  string  // the order of its steps (connKey), and of Server.sortedConns
	m    *member // the server of the ensemble it is connected to
	nc   net.Conn
	ip   string
	sess *session // nil until the handshake

	// Under the server's lock: the zxid the member must reach before the
	// connection's next request is executed (its pending reply's), and the
	// requests read meanwhile.
	waitZxid int64
	backlog  [][]byte
	// draining is set while drain executes the backlog: a request it runs
	// may commit, and the commit's flush must not drain the same backlog
	// again before that request's reply has set waitZxid (the requests
	// behind a write would run ahead of it and miss it).
	draining bool

	mu      sync.Mutex
	out     [][]byte
	wake    chan struct{}
	closing bool // close once what is queued is written
	closed  bool
	muted   bool // nothing is sent any more (a fault)
	lost    bool // something was dropped while its session was cut off (Isolate)
	once    sync.Once
}

// serve starts serving nc, a connection of the named client (DialerFor;
// "": none), and returns its key ("": not served).
func (s *Server) serve(nc net.Conn, m *member, client string) string {
	c := &conn{srv: s, m: m, nc: nc, ip: "127.0.0.1", wake: make(chan struct{}, 1)}
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.ip = a.IP.String()
	}
	s.mu.Lock()
	if s.closed || !m.up() || !s.serving() {
		s.mu.Unlock()
		nc.Close()
		return ""
	}
	s.nextConn++
	c.id, c.key = s.nextConn, s.connKey(client)
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.wg.Add(2)
	go c.writeLoop()
	go c.readLoop()
	return c.key
}

// sortedConns returns the connections keep selects (nil: all), in the
// order they were opened (under the server's lock): what the server does
// to several connections at once, it does in one order on every run.
func (s *Server) sortedConns(keep func(*conn) bool) []*conn {
	var out []*conn
	for c := range s.conns {
		if keep == nil || keep(c) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *conn) int { return cmp.Compare(a.key, b.key) })
	return out
}

// send queues a frame (under the server's lock, so that replies and events
// keep the order of the transactions).
func (c *conn) send(frame []byte) {
	c.mu.Lock()
	switch {
	case c.closed || c.muted:
	case c.srv.faults.isolated[c.sessID()]:
		c.lost = true
	default:
		c.out = append(c.out, frame)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// event queues a watch event.
func (c *conn) event(typ int32, path string) {
	w := newWriter()
	w.int32(xidNotification)
	w.int64(-1)
	w.int32(0)
	w.int32(typ)
	w.int32(stateSyncConnected)
	w.string(path)
	c.send(w.frame())
}

func (c *conn) writeLoop() {
	defer c.srv.wg.Done()
	for {
		c.mu.Lock()
		out, closing, closed := c.out, c.closing, c.closed
		c.out = nil
		c.mu.Unlock()
		if closed {
			return
		}
		for _, f := range out {
			if !c.srv.turnOf(&turn{key: keyWrite + c.key, what: func() string { return describeFrame(f) }}) {
				c.close()
				return
			}
			if _, err := c.nc.Write(f); err != nil {
				c.close()
				return
			}
		}
		if closing {
			c.close()
			return
		}
		<-c.wake
	}
}

// mute drops everything sent on c from now on (a fault).
func (c *conn) mute() {
	c.mu.Lock()
	c.muted = true
	c.mu.Unlock()
}

// sessID returns the id of c's session, 0 before the handshake (under the
// server's lock, like every send).
func (c *conn) sessID() int64 {
	if c.sess == nil {
		return 0
	}
	return c.sess.id
}

// closeAfterSent closes the connection once what is queued has been
// written (a closeSession's reply).
func (c *conn) closeAfterSent() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// isClosing reports whether the connection closes once what is queued is
// written (closeAfterSent).
func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// close closes the connection now; the session stays (until it expires).
//
// It takes the server's lock before c's once, as closeLocked's callers
// hold it: taking them the other way round deadlocked a write loop's
// close against a request's closeLocked (TestSimRandomFaultsLock/seed=3
// hung in CI, 2026-11-28).
func (c *conn) close() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	c.closeLocked()
}

// closeLocked is close under the server's lock: the connection is closed
// before the lock is let go, within the step that closes it.
func (c *conn) closeLocked() {
	c.once.Do(func() {
		c.shut()
		c.forget()
	})
}

// shut marks c closed and closes its network connection.
func (c *conn) shut() {
	c.mu.Lock()
	c.closed = true
	c.out = nil
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	c.nc.Close()
}

// forget drops c from the server (under the server's lock).
func (c *conn) forget() {
	s := c.srv
	delete(s.conns, c)
	s.dropWatches(c)
	if c.sess != nil && c.sess.conn == c {
		c.sess.conn = nil
	}
}

func (c *conn) readLoop() {
	defer c.srv.wg.Done()
	defer c.close()
	ok, refusal := c.handshake()
	if refusal != nil {
		_, _ = c.nc.Write(refusal)
	}
	if !ok {
		return
	}
	if c.srv.steps != nil {
		c.execSteps() // each request in a step of its own (steps.go)
		return
	}
	for {
		f, err := readFrame(c.nc, c.srv.cfg.maxBuffer)
		if err != nil || !c.srv.handle(c, f) {
			return
		}
	}
}

// handshake reads the ConnectRequest and answers it: a new session, a
// live session taken over, or (timeout 0, session 0) an expired one, whose
// reply it returns for the caller to write before closing.
func (c *conn) handshake() (ok bool, refusal []byte) {
	req, ok, answer := c.readConnect()
	if !ok {
		return false, answer
	}
	s := c.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.lastZxid > c.m.applied {
		// The client has seen more than this server has: ZooKeeper refuses
		// it (closes the connection) so that it moves on to another.
		return false, nil
	}
	timeout := min(max(req.timeout, s.cfg.minSession), s.cfg.maxSession)
	var ss *session
	var created int64 // the createSession's zxid: the reply waits for the member to reach it
	if req.id == 0 {
		ss, created = s.createSession()
	} else if ss, ok, refusal = c.resume(req); !ok {
		return false, refusal
	}
	ss.timeout = timeout
	ss.last = time.Now()
	ss.conn = c
	c.sess = ss
	w := newWriter()
	w.int32(0)
	w.int32(int32(timeout / time.Millisecond))
	w.int64(ss.id)
	w.buffer(ss.passwd)
	w.bool(false)
	c.m.replyAt(c, created, w.frame())
	return true, nil
}

// connectReq is a ConnectRequest.
type connectReq struct {
	lastZxid int64
	timeout  time.Duration
	id       int64
	passwd   []byte
}

// readConnect reads what a fresh connection sends first: a
// ConnectRequest, or a four-letter word, whose answer it returns (ok
// false) for the caller to write before closing.
func (c *conn) readConnect() (req connectReq, ok bool, answer []byte) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.nc, hdr[:]); err != nil {
		return req, false, nil
	}
	if answer, ok := c.srv.fourLetter(c.m, string(hdr[:])); ok {
		return req, false, answer
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 0 || n > c.srv.cfg.maxBuffer {
		return req, false, nil
	}
	f := make([]byte, n)
	if _, err := io.ReadFull(c.nc, f); err != nil || !c.srv.turn(keyRequest+c.key) {
		return req, false, nil
	}
	r := &reader{b: f}
	r.int32() // protocol version
	req.lastZxid = r.int64()
	req.timeout = time.Duration(r.int32()) * time.Millisecond
	req.id = r.int64()
	req.passwd = r.buffer()
	return req, r.err == nil, nil
}

// createSession opens a new session by a createSession transaction, whose
// zxid it returns (under the server's lock).
func (s *Server) createSession() (*session, int64) {
	ss := &session{id: s.nextID, passwd: newPasswd(), ephemerals: map[string]struct{}{},
		ordinal: int(s.nextID-firstSessionID) + 1}
	s.nextID++
	s.sessions[ss.id] = ss
	x := s.newTxn(ss)
	created := x.zxid
	s.commit(x) // createSession
	return ss, created
}

// resume takes over the live session req names, closing the connection
// that held it; refusal is the reply to an expired session or a wrong
// password (under the server's lock).
func (c *conn) resume(req connectReq) (ss *session, ok bool, refusal []byte) {
	s := c.srv
	if s.faults.isolated[req.id] {
		return nil, false, nil // cut off (Isolate): the request never arrives
	}
	ss = s.sessions[req.id]
	if ss == nil || string(ss.passwd) != string(req.passwd) {
		w := newWriter()
		w.int32(0)
		w.int32(0)
		w.int64(0)
		w.buffer(make([]byte, 16))
		w.bool(false)
		return nil, false, w.frame()
	}
	if old := ss.conn; old != nil && old != c {
		ss.conn = nil
		old.closeLocked()
	}
	return ss, true, nil
}
