package zktest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// dialTimeout bounds the proxy's connection to its target.
	dialTimeout = 5 * time.Second
	// replyWait bounds how long CutAfterRequest waits for the server's reply
	// to the chosen request before cutting anyway.
	replyWait = 5 * time.Second
	// queueLen is the number of chunks buffered per direction.
	queueLen = 256
	// rawChunk is the read size for connections that are not ZooKeeper
	// client sessions (four-letter words).
	rawChunk = 32 << 10
)

// Proxy is a fault-injecting TCP proxy for ZooKeeper clients. It listens on
// 127.0.0.1 (or where ListenProxyOn says) and forwards each accepted connection to its target, and it can
// cut, delay, stall or refuse that traffic on demand.
//
// The proxy understands the client protocol's framing (a 4-byte big-endian
// length, then the payload; the first client frame is the ConnectRequest,
// every later one starts with xid and opcode) so it can act on a given
// request and record the session credentials of each ConnectResponse. A
// connection whose first bytes are not a plausible frame (a four-letter
// word such as "ruok") is relayed as a plain byte stream.
//
// Faults apply to the connections live when they are set and to later ones.
// All methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener

	blackhole atomic.Bool
	reject    atomic.Bool
	refused   sync.Map     // opcode (int32) -> struct{}: answered as unknown (Refuse)
	delay     atomic.Int64 // time.Duration
	accepted  atomic.Int64

	countMu  sync.Mutex
	requests map[int32]int64 // client requests relayed, by opcode
	trips    int64           // requests sent with none of their connection's awaiting a reply
	notifies int64           // watch notifications relayed (server frames with xid -1)
	reaches  []reqReach      // RequestsReach waiters, under countMu
	replies  map[int32]int64 // server replies to client requests, by the request's opcode
	answered []reqReach      // RepliesReach waiters, under countMu
	read     int64           // bytes of server frames relayed to the clients

	mu       sync.Mutex
	conns    map[*proxyConn]struct{}
	reqTrig  []*reqTrigger
	byteTrig []*byteTrigger
	sessions []Session
	pause    chan struct{} // non-nil while paused; closed when resumed
	closed   bool

	wg        sync.WaitGroup
	closeOnce sync.Once
}

type reqTrigger struct {
	op     int32
	fired  chan struct{}
	hold   bool // keep the connection open, replies dropped (HoldRepliesAfterRequest)
	before bool // cut without forwarding the request (CutBeforeRequest)
}

type byteTrigger struct {
	remaining int64
	fired     chan struct{}
}

// NewProxy starts a proxy to target (host:port) for the test and registers
// its Close as a cleanup.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	p, err := ListenProxy(target)
	if err != nil {
		tb.Fatalf("zktest: %v", err)
	}
	tb.Cleanup(func() { _ = p.Close() })
	return p
}

// ListenProxy is NewProxy without a testing.TB. The caller must Close it.
func ListenProxy(target string) (*Proxy, error) { return ListenProxyOn("127.0.0.1:0", target) }

// ListenProxyOn is ListenProxy listening on addr ("ip:port", a port of 0
// for a free one) instead of a free port of 127.0.0.1: a test moves a
// server to another address that keeps its port with a proxy on another
// loopback address (127.0.0.2, which Linux serves and macOS does not by
// default). The caller must Close it.
func ListenProxyOn(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: make(map[*proxyConn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr returns the proxy's listening address, "127.0.0.1:port" unless
// ListenProxyOn said otherwise. Give it to the client instead of the
// server's address.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// Accepted returns how many connections the proxy has accepted so far,
// including rejected ones.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Conns returns the number of live connections.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// CutAll closes every live connection now, on both sides. New connections
// are still accepted.
func (p *Proxy) CutAll() {
	for _, c := range p.snapshot(func(*proxyConn) bool { return true }) {
		c.close()
	}
}

// CutAfterRequest arms a one-shot fault: the next client request with the
// given opcode (OpCreate, OpSetData, ...) on any connection is forwarded in
// full to the server, and that connection is then cut on both sides before
// any reply bytes reach the client. So the server executes the request but
// the client never learns the outcome. The proxy waits (up to 5s) for the
// server's reply to that request before cutting, so the request has taken
// effect when the returned channel is closed, which happens once the
// connection is cut. Several triggers may be armed; each fires once.
func (p *Proxy) CutAfterRequest(opcode int32) <-chan struct{} {
	t := &reqTrigger{op: opcode, fired: make(chan struct{})}
	p.mu.Lock()
	p.reqTrig = append(p.reqTrig, t)
	p.mu.Unlock()
	return t.fired
}

// CutBeforeRequest arms a one-shot fault: the next client request with the
// given opcode on any connection is dropped, and that connection is cut on
// both sides. The server never sees the request, but the client cannot
// tell this from a reply lost after it (CutAfterRequest). The returned
// channel is closed once the connection is cut.
func (p *Proxy) CutBeforeRequest(opcode int32) <-chan struct{} {
	t := &reqTrigger{op: opcode, fired: make(chan struct{}), before: true}
	p.mu.Lock()
	p.reqTrig = append(p.reqTrig, t)
	p.mu.Unlock()
	return t.fired
}

// HoldRepliesAfterRequest arms a one-shot fault like CutAfterRequest's,
// except that the connection is not cut: the request is forwarded and
// executed, and from then on nothing the server sends on that connection
// reaches the client, while the client's bytes (pings included) still reach
// the server. The client hears nothing until it gives up on the connection
// itself. The returned channel is closed once the server has replied to the
// request (up to 5s).
func (p *Proxy) HoldRepliesAfterRequest(opcode int32) <-chan struct{} {
	t := &reqTrigger{op: opcode, fired: make(chan struct{}), hold: true}
	p.mu.Lock()
	p.reqTrig = append(p.reqTrig, t)
	p.mu.Unlock()
	return t.fired
}

// CutAfterBytes arms a one-shot fault: once n more bytes have been relayed,
// counting both directions of every connection, the connection that relayed
// the n-th byte is cut on both sides (with n == 0, the next connection with
// anything to relay is cut before relaying it). The returned channel is
// closed after the cut.
func (p *Proxy) CutAfterBytes(n int64) <-chan struct{} {
	if n < 0 {
		n = 0
	}
	t := &byteTrigger{remaining: n, fired: make(chan struct{})}
	p.mu.Lock()
	p.byteTrig = append(p.byteTrig, t)
	p.mu.Unlock()
	return t.fired
}

// Delay adds latency d to everything relayed from now on, in both
// directions; 0 removes it. Each frame is held until d after the proxy read
// it, so throughput is not reduced and order is kept.
func (p *Proxy) Delay(d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.delay.Store(int64(d))
}

// Blackhole simulates a network partition. While on, live connections stay
// open but every byte in both directions is dropped, and new connections are
// accepted but held without reaching the server, their bytes dropped too.
// A client's session therefore expires on the server once Blackhole lasts
// longer than the session timeout. Turning it off closes the held
// connections (so clients redial) and lets live ones flow again.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	p.blackhole.Store(on)
	var held []*proxyConn
	if !on {
		for c := range p.conns {
			if c.held {
				held = append(held, c)
			}
		}
	}
	p.mu.Unlock()
	for _, c := range held {
		c.close()
	}
}

// Reject makes the proxy, while on, reset every new connection as soon as it
// is accepted (as close as a listening socket gets to refusing). Live
// connections are unaffected.
func (p *Proxy) Reject(on bool) { p.reject.Store(on) }

// Refuse makes the proxy, while on, answer every request with opcode op
// itself, as a ZooKeeper server that does not know the opcode does
// (ZooKeeper 3.5 and addWatch, OpAddWatch): a reply with the error
// UNIMPLEMENTED (-6) and then the connection closed, on both sides. The
// request never reaches the server; the requests before it on the
// connection may or may not get their replies (3.5 answers an unknown
// opcode at once, ahead of them, and then closes).
func (p *Proxy) Refuse(op int32, on bool) {
	if on {
		p.refused.Store(op, struct{}{})
	} else {
		p.refused.Delete(op)
	}
}

// Pause makes the proxy, while on, accept new connections but not connect
// them to the server until it is turned off; the client's bytes wait in the
// socket meanwhile. Live connections are unaffected.
func (p *Proxy) Pause(on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case on && p.pause == nil:
		p.pause = make(chan struct{})
	case !on && p.pause != nil:
		close(p.pause)
		p.pause = nil
	}
}

// Session returns the credentials of the session with the given id, as the
// server sent them in a ConnectResponse relayed by the proxy.
func (p *Proxy) Session(id int64) (Session, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.sessions) - 1; i >= 0; i-- {
		if p.sessions[i].ID == id {
			s := p.sessions[i]
			s.Passwd = append([]byte(nil), s.Passwd...)
			return s, true
		}
	}
	return Session{}, false
}

// Sessions returns the credentials of every session established or
// re-established through the proxy, oldest first, one entry per session.
func (p *Proxy) Sessions() []Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Session, len(p.sessions))
	for i, s := range p.sessions {
		s.Passwd = append([]byte(nil), s.Passwd...)
		out[i] = s
	}
	return out
}

// Close stops accepting, cuts every connection and waits for all of the
// proxy's goroutines to finish. It is idempotent.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		if p.pause != nil {
			close(p.pause)
			p.pause = nil
		}
		p.mu.Unlock()
		err = p.ln.Close()
		p.CutAll()
		p.wg.Wait()
	})
	return err
}

func (p *Proxy) snapshot(keep func(*proxyConn) bool) []*proxyConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*proxyConn
	for c := range p.conns {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (such as running out of descriptors):
			// back off briefly rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.accepted.Add(1)
		if p.reject.Load() {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // reset, not an orderly close
			}
			conn.Close()
			continue
		}
		c := &proxyConn{
			p:         p,
			client:    conn,
			done:      make(chan struct{}),
			modeSet:   make(chan struct{}),
			replySeen: make(chan struct{}),
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			conn.Close()
			return
		}
		c.held = p.blackhole.Load()
		pause := p.pause
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go c.serve(pause)
	}
}

// Requests returns how many client requests with the given opcode (OpCreate,
// OpGetChildren2, ...) the proxy has read from its clients since it started
// or was last reset (ResetCounts), across all connections. Tests use it to
// check how often a recipe asks the server for something.
func (p *Proxy) Requests(opcode int32) int64 {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	return p.requests[opcode]
}

// claimReq removes and returns the first armed trigger for op, if any.
func (p *Proxy) claimReq(op int32) *reqTrigger {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.reqTrig {
		if t.op == op {
			p.reqTrig = append(p.reqTrig[:i:i], p.reqTrig[i+1:]...)
			return t
		}
	}
	return nil
}

// rearmReq puts back a trigger whose request could not be forwarded.
func (p *Proxy) rearmReq(t *reqTrigger) {
	p.mu.Lock()
	p.reqTrig = append([]*reqTrigger{t}, p.reqTrig...)
	p.mu.Unlock()
}

func (p *Proxy) recordSession(s Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range p.sessions {
		if p.sessions[i].ID == s.ID {
			p.sessions[i] = s
			return
		}
	}
	p.sessions = append(p.sessions, s)
}

// proxyConn is one client connection and its server connection.
type proxyConn struct {
	p      *Proxy
	client net.Conn
	held   bool // accepted during Blackhole: never connected to the server

	mu     sync.Mutex
	server net.Conn
	closed bool

	done      chan struct{}
	closeOnce sync.Once

	modeSet chan struct{} // closed once raw is known
	raw     bool          // not a ZooKeeper session: relay bytes as they come

	toClient sync.Mutex // one frame written to the client at a time (see refuse)

	inFlight atomic.Int64 // requests read from the client whose reply the server has not sent

	pendMu  sync.Mutex
	pending []chunk // requests relayed to the server, oldest first, until their replies

	cutting   atomic.Bool  // a CutAfterRequest fired here: relay nothing more to the client
	cutXid    atomic.Int32 // xid of the request that fired it
	replySeen chan struct{}
	replyOnce sync.Once
}

// chunk is a unit of relayed data: a whole frame, or raw bytes.
type chunk struct {
	data []byte
	at   time.Time // not to be written before
	op   int32     // request opcode, for client frames with a header
	xid  int32
	hdr  bool // op and xid are valid
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.client.Close()
		c.mu.Lock()
		c.closed = true
		if c.server != nil {
			c.server.Close()
		}
		c.mu.Unlock()
	})
}

func (c *proxyConn) serve(pause chan struct{}) {
	defer c.p.wg.Done()
	defer func() {
		c.close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	}()
	if c.held {
		// Partitioned: swallow whatever the client sends until cut.
		_, _ = io.Copy(io.Discard, c.client)
		return
	}
	if pause != nil {
		select {
		case <-pause:
		case <-c.done:
			return
		}
	}
	// Dial, giving up early if the connection is cut meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	var dialWatch sync.WaitGroup
	dialWatch.Add(1)
	go func() {
		defer dialWatch.Done()
		select {
		case <-c.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", c.p.target)
	cancel()
	dialWatch.Wait()
	if err != nil {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		server.Close()
		return
	}
	c.server = server
	c.mu.Unlock()

	up := make(chan chunk, queueLen)
	down := make(chan chunk, queueLen)
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); c.readClient(up) }()
	go func() { defer wg.Done(); c.readServer(server, down) }()
	go func() { defer wg.Done(); c.writeLoop(server, up, false) }()
	go func() { defer wg.Done(); c.writeLoop(c.client, down, true) }()
	wg.Wait()
}

// send queues ch for the writer, stamped with the current delay.
func (c *proxyConn) send(out chan<- chunk, ch chunk) bool {
	ch.at = time.Now().Add(time.Duration(c.p.delay.Load()))
	select {
	case out <- ch:
		return true
	case <-c.done:
		return false
	}
}

// readClient reads the client's frames (or raw bytes) and queues them. It
// closes out when the client's stream ends, so that the writer relays what
// is queued before closing the connection.
func (c *proxyConn) readClient(out chan<- chunk) {
	defer close(out)
	br := bufio.NewReaderSize(c.client, rawChunk)
	hdr, err := br.Peek(4)
	if err != nil {
		close(c.modeSet)
		return
	}
	n := int32(binary.BigEndian.Uint32(hdr))
	c.raw = n < 0 || n > maxFrame
	close(c.modeSet)
	if c.raw {
		c.readRaw(br, out)
		return
	}
	for first := true; ; first = false {
		frame, err := readWholeFrame(br)
		if err != nil {
			return
		}
		if c.p.blackhole.Load() {
			continue
		}
		ch := chunk{data: frame}
		if !first && len(frame) >= 12 {
			ch.xid = int32(binary.BigEndian.Uint32(frame[4:]))
			ch.op = int32(binary.BigEndian.Uint32(frame[8:]))
			ch.hdr = true
			if _, no := c.p.refused.Load(ch.op); no {
				c.p.countRequest(ch.op, false)
				c.refuse(ch.xid)
				return
			}
			c.p.countRequest(ch.op, ch.xid > 0 && c.inFlight.Add(1) == 1)
			if ch.xid > 0 {
				c.pendMu.Lock()
				c.pending = append(c.pending, chunk{xid: ch.xid, op: ch.op})
				c.pendMu.Unlock()
			}
		}
		if !c.send(out, ch) {
			return
		}
	}
}

// refuse answers the request xid as a server that does not know its
// opcode (see Proxy.Refuse) and closes the connection.
func (c *proxyConn) refuse(xid int32) {
	var unimplemented int32 = -6
	reply := binary.BigEndian.AppendUint32(nil, 16)
	reply = binary.BigEndian.AppendUint32(reply, uint32(xid))
	reply = binary.BigEndian.AppendUint64(reply, 0)
	reply = binary.BigEndian.AppendUint32(reply, uint32(unimplemented))
	c.toClient.Lock()
	_, _ = c.client.Write(reply)
	c.toClient.Unlock()
	c.close()
}

// readServer reads the server's frames (or raw bytes) and queues them,
// recording the session granted by the ConnectResponse. Like readClient it
// closes out when the stream ends: a server that answers and hangs up (a
// four-letter word, an expired session) is relayed in full.
func (c *proxyConn) readServer(server net.Conn, out chan<- chunk) {
	defer close(out)
	select {
	case <-c.modeSet:
	case <-c.done:
		return
	}
	br := bufio.NewReaderSize(server, rawChunk)
	if c.raw {
		c.readRaw(br, out)
		return
	}
	for first := true; ; first = false {
		frame, err := readWholeFrame(br)
		if err != nil {
			return
		}
		if first {
			if s, err := parseConnectResponse(frame[4:]); err == nil && s.ID != 0 && s.Timeout > 0 {
				c.p.recordSession(s)
			}
		} else if c.cutting.Load() && len(frame) >= 8 &&
			int32(binary.BigEndian.Uint32(frame[4:])) == c.cutXid.Load() {
			c.replyOnce.Do(func() { close(c.replySeen) })
		}
		if !first && len(frame) >= 8 && int32(binary.BigEndian.Uint32(frame[4:])) > 0 {
			c.inFlight.Add(-1) // the reply to a request
			c.replied(int32(binary.BigEndian.Uint32(frame[4:])))
		}
		if c.cutting.Load() || c.p.blackhole.Load() {
			continue
		}
		c.p.countRead(len(frame))
		if !first && len(frame) >= 8 && int32(binary.BigEndian.Uint32(frame[4:])) == -1 {
			c.p.countNotification()
		}
		if !c.send(out, chunk{data: frame}) {
			return
		}
	}
}

func (c *proxyConn) readRaw(r io.Reader, out chan<- chunk) {
	for {
		buf := make([]byte, rawChunk)
		n, err := r.Read(buf)
		if n > 0 && !c.p.blackhole.Load() {
			if !c.send(out, chunk{data: buf[:n]}) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// writeLoop writes queued chunks to dst once their delay has passed,
// applying the faults armed at that moment. When the queue is closed (its
// source hung up) it closes the connection.
func (c *proxyConn) writeLoop(dst net.Conn, in <-chan chunk, toClient bool) {
	defer c.close()
	d := delay{done: c.done}
	defer d.stop()
	for {
		var ch chunk
		var ok bool
		select {
		case ch, ok = <-in:
			if !ok {
				return
			}
		case <-c.done:
			return
		}
		if !d.until(ch.at) {
			return
		}
		if c.p.blackhole.Load() || (toClient && c.cutting.Load()) {
			continue
		}
		if !c.forward(dst, ch, toClient) {
			return
		}
	}
}

// delay waits for the times chunks are due, on one timer.
type delay struct {
	done  <-chan struct{}
	timer *time.Timer
}

// until waits until at; it reports false if done closed first.
func (d *delay) until(at time.Time) bool {
	wait := time.Until(at)
	if wait <= 0 {
		return true
	}
	if d.timer == nil {
		d.timer = time.NewTimer(wait)
	} else {
		d.timer.Reset(wait)
	}
	select {
	case <-d.timer.C:
		return true
	case <-d.done:
		return false
	}
}

// stop stops the timer.
func (d *delay) stop() {
	if d.timer != nil {
		d.timer.Stop()
	}
}

// forward writes ch to dst, cutting the connection after a request a
// fault is armed on (claimReq): nothing reaches the client from then on,
// in particular not the request's reply. It reports false when the loop
// is to end.
func (c *proxyConn) forward(dst net.Conn, ch chunk, toClient bool) bool {
	var trig *reqTrigger
	if ch.hdr && !toClient {
		if trig = c.p.claimReq(ch.op); trig != nil {
			c.cutXid.Store(ch.xid)
			c.cutting.Store(true)
		}
	}
	if trig != nil && trig.before {
		c.close()
		close(trig.fired)
		return false
	}
	if !c.write(dst, ch.data, toClient) {
		if trig != nil {
			c.p.rearmReq(trig)
		}
		return false
	}
	if trig == nil {
		return true
	}
	select {
	case <-c.replySeen:
	case <-c.done:
	case <-time.After(replyWait):
	}
	if trig.hold {
		close(trig.fired)
		return true // replies stay dropped (cutting), requests flow
	}
	c.close()
	close(trig.fired)
	return false
}

// write writes data to dst (writeCounted); to the client, one frame at a
// time with refuse's.
func (c *proxyConn) write(dst net.Conn, data []byte, toClient bool) bool {
	if toClient {
		c.toClient.Lock()
		defer c.toClient.Unlock()
	}
	return c.writeCounted(dst, data)
}

// writeCounted writes data to dst subject to the armed byte triggers. It
// reports false when the connection is finished (cut or failed).
func (c *proxyConn) writeCounted(dst net.Conn, data []byte) bool {
	p := c.p
	p.mu.Lock()
	allowed := int64(len(data))
	hit := false
	for _, t := range p.byteTrig {
		if t.remaining <= allowed {
			allowed = t.remaining
			hit = true
		}
	}
	var fired []*byteTrigger
	if len(p.byteTrig) > 0 {
		kept := p.byteTrig[:0:0]
		for _, t := range p.byteTrig {
			t.remaining -= allowed
			if hit && t.remaining == 0 {
				fired = append(fired, t)
			} else {
				kept = append(kept, t)
			}
		}
		p.byteTrig = kept
	}
	p.mu.Unlock()

	if allowed > 0 {
		if _, err := dst.Write(data[:allowed]); err != nil {
			// Not relayed after all; the bytes were counted regardless,
			// which only matters for a connection that is going anyway.
			c.close()
			for _, t := range fired {
				close(t.fired)
			}
			return false
		}
	}
	if hit {
		c.close()
		for _, t := range fired {
			close(t.fired)
		}
		return false
	}
	return true
}

// readWholeFrame reads one length-prefixed frame and returns it with its
// prefix.
func readWholeFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || n > maxFrame {
		return nil, errors.New("zktest: frame length out of range")
	}
	b := make([]byte, 4+int(n))
	copy(b, hdr[:])
	_, err := io.ReadFull(r, b[4:])
	return b, err
}

// replied counts the server's reply to the request xid. A session's
// replies come in the order of its requests, so the pending requests before
// xid (dropped on the way, never answered) are forgotten with it.
func (c *proxyConn) replied(xid int32) {
	c.pendMu.Lock()
	op, ok := int32(0), false
	for len(c.pending) > 0 && !ok {
		op, ok = c.pending[0].op, c.pending[0].xid == xid
		c.pending = c.pending[1:]
	}
	c.pendMu.Unlock()
	if !ok {
		return
	}
	c.p.countMu.Lock()
	if c.p.replies == nil {
		c.p.replies = make(map[int32]int64)
	}
	c.p.replies[op]++
	c.p.answered = fire(c.p.answered, op, c.p.replies[op])
	c.p.countMu.Unlock()
}

// fire closes and removes the waiters in ws for op whose count n reached.
func fire(ws []reqReach, op int32, n int64) []reqReach {
	return slices.DeleteFunc(ws, func(r reqReach) bool {
		if r.op == op && n >= r.n {
			close(r.ch)
			return true
		}
		return false
	})
}

// countRequest counts a request of opcode op; trip says it starts a round
// trip (see Counts.RoundTrips).
func (p *Proxy) countRequest(op int32, trip bool) {
	p.countMu.Lock()
	if p.requests == nil {
		p.requests = make(map[int32]int64)
	}
	p.requests[op]++
	if trip {
		p.trips++
	}
	p.reaches = fire(p.reaches, op, p.requests[op])
	p.countMu.Unlock()
}

// reqReach is a RequestsReach waiter.
type reqReach struct {
	op int32
	n  int64
	ch chan struct{}
}

// RequestsReach returns a channel that is closed once the proxy has read n
// client requests of opcode op (counted as Requests counts them, from the
// last ResetCounts): a test waits on it for a client to have got that far
// in its protocol.
func (p *Proxy) RequestsReach(op int32, n int64) <-chan struct{} {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	return reach(p.requests, &p.reaches, op, n)
}

// reach returns a channel closed once counts[op] reaches n: at once, or
// through a waiter added to ws. Called with countMu held.
func reach(counts map[int32]int64, ws *[]reqReach, op int32, n int64) <-chan struct{} {
	ch := make(chan struct{})
	if counts[op] >= n {
		close(ch)
		return ch
	}
	*ws = append(*ws, reqReach{op: op, n: n, ch: ch})
	return ch
}

// RepliesReach returns a channel that is closed once the server has
// answered n client requests of opcode op, counted from the last
// ResetCounts (the replies the proxy read from the server, whether or not
// a fault then kept them from the client): the server has executed them,
// so a watch such a request sets is in place.
func (p *Proxy) RepliesReach(op int32, n int64) <-chan struct{} {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	return reach(p.replies, &p.answered, op, n)
}

func (p *Proxy) countRead(n int) {
	p.countMu.Lock()
	p.read += int64(n)
	p.countMu.Unlock()
}

func (p *Proxy) countNotification() {
	p.countMu.Lock()
	p.notifies++
	p.countMu.Unlock()
}

// Counts is what a proxy relayed since it started or was last reset: the
// client requests by opcode (OpCreate, OpGetChildren2, ...) and the watch
// notifications the server sent, the bytes the clients read and the round
// trips they waited for. The protocol's cost, counted on the wire.
//
// RoundTrips counts the requests (pings and other negative-xid frames left
// out) that a client sent on a connection with none of its earlier requests
// awaiting a reply there: the round trips a client waited for. Requests
// sent behind one another without waiting for the replies (pipelined) count
// as one.
type Counts struct {
	Requests      map[int32]int64
	Notifications int64
	RoundTrips    int64
	// BytesRead is the size of the server's frames relayed to the clients,
	// length prefixes included (replies, notifications, pings' replies and
	// the ConnectResponse); a raw stream such as a four-letter word is not
	// counted.
	BytesRead int64
}

// Total returns the number of requests, leaving out pings (OpPing), which
// the client sends on a timer rather than for the work.
func (c Counts) Total() int64 {
	var n int64
	for op, k := range c.Requests {
		if op != OpPing {
			n += k
		}
	}
	return n
}

// Counts returns a copy of the counters.
func (p *Proxy) Counts() Counts {
	p.countMu.Lock()
	defer p.countMu.Unlock()
	c := Counts{Requests: make(map[int32]int64, len(p.requests)), Notifications: p.notifies, BytesRead: p.read, RoundTrips: p.trips}
	for op, n := range p.requests {
		c.Requests[op] = n
	}
	return c
}

// ResetCounts zeroes the counters.
func (p *Proxy) ResetCounts() {
	p.countMu.Lock()
	p.requests = nil
	p.replies = nil
	p.notifies = 0
	p.read = 0
	p.trips = 0
	p.countMu.Unlock()
}
