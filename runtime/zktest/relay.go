package zktest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// relayRetry bounds how long a relay retries a refused connection to its
// target.
const relayRetry = time.Second

// relay is a plain TCP forwarder from a listener on 127.0.0.1 to a target,
// with one fault: cut. While cut, it closes its live connections and
// resets every new one as soon as it is accepted, so both ends see the
// link fail at once, as with a refused connection. An ensemble with quorum
// faults puts one relay on each of its servers' quorum and election links.
type relay struct {
	ln     net.Listener
	target string
	// hello, if set, reads the first message of each connection from the
	// dialling side and returns the bytes to send to the target instead.
	// An error drops the connection.
	hello func(io.Reader) ([]byte, error)

	mu     sync.Mutex
	cut    bool
	closed bool
	conns  map[*relayConn]struct{}
	wg     sync.WaitGroup
}

// relayConn is the pair of sockets of one relayed connection.
type relayConn struct {
	mu     sync.Mutex
	closed bool
	socks  []net.Conn
}

// listenRelay reserves the relay's address. It forwards nothing until
// start, so that its address can go into a configuration first.
func listenRelay() (*relay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("zktest: relay: %w", err)
	}
	return &relay{ln: ln, conns: make(map[*relayConn]struct{})}, nil
}

// start begins forwarding connections to target.
func (r *relay) start(target string, hello func(io.Reader) ([]byte, error)) {
	r.target, r.hello = target, hello
	r.wg.Add(1)
	go r.acceptLoop()
}

// addr returns the relay's listening address, "127.0.0.1:port".
func (r *relay) addr() string { return r.ln.Addr().String() }

// port returns the relay's listening port.
func (r *relay) port() int { return r.ln.Addr().(*net.TCPAddr).Port }

// setCut cuts the relay (closing its live connections) or restores it.
func (r *relay) setCut(on bool) {
	r.mu.Lock()
	r.cut = on
	var live []*relayConn
	if on {
		for c := range r.conns {
			live = append(live, c)
		}
	}
	r.mu.Unlock()
	for _, c := range live {
		c.close()
	}
}

// isCut reports whether the relay is cut.
func (r *relay) isCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// close stops accepting, closes every connection and waits for the relay's
// goroutines. It is idempotent.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	var live []*relayConn
	for c := range r.conns {
		live = append(live, c)
	}
	r.mu.Unlock()
	_ = r.ln.Close()
	for _, c := range live {
		c.close()
	}
	r.wg.Wait()
}

func (r *relay) acceptLoop() {
	defer r.wg.Done()
	for {
		conn, err := r.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // a transient failure such as EMFILE: back off, do not spin
			continue
		}
		r.mu.Lock()
		if r.closed || r.cut {
			r.mu.Unlock()
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0) // reset, not an orderly close
			}
			conn.Close()
			continue
		}
		c := &relayConn{socks: []net.Conn{conn}}
		r.conns[c] = struct{}{}
		r.wg.Add(1)
		r.mu.Unlock()
		go r.serve(c)
	}
}

// serve relays one connection until either side ends it or the relay cuts
// it; then both sockets are closed.
func (r *relay) serve(c *relayConn) {
	defer r.wg.Done()
	defer func() {
		c.close()
		r.mu.Lock()
		delete(r.conns, c)
		r.mu.Unlock()
	}()
	in := c.socks[0]
	out, err := r.dial(c)
	if err != nil || !c.add(out) {
		return
	}
	if r.hello != nil {
		_ = in.SetReadDeadline(time.Now().Add(dialTimeout))
		msg, err := r.hello(in)
		if err != nil {
			return
		}
		_ = in.SetReadDeadline(time.Time{})
		// One write: the receiver may read the message with a single read.
		if _, err := out.Write(msg); err != nil {
			return
		}
	}
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(out, in)
		c.close()
		close(done)
	}()
	_, _ = io.Copy(in, out)
	c.close()
	<-done
}

// dial connects to the target. A refused connection is retried for up to
// relayRetry: the relay has already accepted its peer's connection, so it
// cannot refuse it as the target would, and a server that has just become
// leader opens its quorum port a moment after its followers learn of it.
// (A follower retries a refused connection to its leader, but gives up on
// one that is accepted and then closed.)
func (r *relay) dial(c *relayConn) (net.Conn, error) {
	deadline := time.Now().Add(relayRetry)
	for {
		out, err := net.DialTimeout("tcp", r.target, dialTimeout)
		if err == nil || time.Now().After(deadline) || c.isClosed() {
			return out, err
		}
		time.Sleep(pollInterval) // the target is not listening yet; there is nothing to wait on
	}
}

// add records a socket of the connection, or closes it if the connection
// was closed meanwhile.
func (c *relayConn) add(s net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		s.Close()
		return false
	}
	c.socks = append(c.socks, s)
	return true
}

func (c *relayConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *relayConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	for _, s := range c.socks {
		s.Close()
	}
}

// The initial message of a connection to a quorum peer's election port
// (QuorumCnxManager, ZooKeeper 3.5 and later) is: protocol version (int64,
// -65536 or -65535 for multiple addresses), the sender's server id (int64),
// the length of its election address (int32), then that address as
// "host:port" ("host:port|host:port|..." for version -65535). A receiver
// with a higher server id than the sender drops the connection and dials
// back to that address, not to the address its own configuration lists for
// the sender. Before 3.5 the message was the server id alone (a
// non-negative int64).
const (
	electionProtocolV1 = -65536
	electionProtocolV2 = -65535
	// maxElectionAddr bounds the address length accepted from a peer.
	maxElectionAddr = 64 << 10
)

// advertiseAs returns a hello function for a relay to a peer's election
// port that rewrites the sender's advertised election address to addr, so
// that the peer dials back through addr (the relay in the other direction)
// instead of straight to the sender. A message of an unknown protocol
// version is refused rather than forwarded unchanged, since it might carry
// an address that would bypass the relays.
func advertiseAs(addr string) func(io.Reader) ([]byte, error) {
	return func(rd io.Reader) ([]byte, error) {
		var head [8]byte
		if _, err := io.ReadFull(rd, head[:]); err != nil {
			return nil, err
		}
		version := int64(binary.BigEndian.Uint64(head[:]))
		if version >= 0 { // the sender's id, with no address
			return head[:], nil
		}
		if version != electionProtocolV1 && version != electionProtocolV2 {
			return nil, fmt.Errorf("zktest: unknown election protocol version %d", version)
		}
		var idLen [12]byte
		if _, err := io.ReadFull(rd, idLen[:]); err != nil {
			return nil, err
		}
		n := int32(binary.BigEndian.Uint32(idLen[8:]))
		if n <= 0 || n > maxElectionAddr {
			return nil, fmt.Errorf("zktest: election address length %d", n)
		}
		if _, err := io.CopyN(io.Discard, rd, int64(n)); err != nil {
			return nil, err
		}
		msg := make([]byte, 0, 20+len(addr))
		msg = append(msg, head[:]...)
		msg = append(msg, idLen[:8]...)
		msg = binary.BigEndian.AppendUint32(msg, uint32(len(addr)))
		return append(msg, addr...), nil
	}
}

// hostPort joins 127.0.0.1 and a port.
func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
