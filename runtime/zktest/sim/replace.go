package sim

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Servers that move, as on Kubernetes: a server leaves the ensemble (its
// pod is deleted: the process stops, its address answers no more) and
// joins again at a new address under the same name (the pod rescheduled
// under a headless service's name, with its volume), catching up on what
// it missed. Clients follow it by name: Hosts and LookupHost are the
// names and the resolver the simulation controls.
//
// And the quorum rule: ZooKeeper serves only while a majority of its
// servers are up and in touch. Here a server is down while it has left
// (LeaveServer) or is cut off (IsolateServer); while a majority is down,
// nobody serves: every connection is closed, new ones are refused, no
// session expires, and once a majority is back every session's timeout
// starts afresh, as after a leader election (ChangeLeader).

// nameDomain is the domain of the servers' names (zk0.sim.test, ...):
// .test is reserved for tests (RFC 2606), so no real resolver answers.
const nameDomain = ".sim.test"

// memPort is the port of the in-memory servers' addresses.
const memPort = "2181"

// loopback returns the k-th loopback address (k >= 1): 127.0.0.k up to
// k = 255, then on through 127.0.1.0, ...
func loopback(k int) string {
	return netip.AddrFrom4([4]byte{127, byte(k >> 16), byte(k >> 8), byte(k)}).String()
}

// Hosts returns the ensemble's servers by name: "zk<i>.sim.test:<port>"
// for server i, with the port of its address (Servers). A client given
// these, LookupHost as its resolver and Dial as its dialer
// (runtime.WithResolver, runtime.WithDialer) follows a server that left
// and joined again at a new address (JoinServer).
func (s *Server) Hosts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.members))
	for i, m := range s.members {
		out[i] = net.JoinHostPort(fmt.Sprintf("zk%d%s", i, nameDomain), m.port)
	}
	return out
}

// LookupHost resolves a name of Hosts (without its port) to the IP
// address its server has now, as net.Resolver.LookupHost does: a
// runtime.ResolveFunc. While the server has left (LeaveServer), and for
// any other name, it returns a *net.DNSError that is not found: a deleted
// pod's name resolves to nothing until its new pod exists. It never
// blocks; ctx is not used.
func (s *Server) LookupHost(ctx context.Context, host string) ([]string, error) {
	notFound := &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	digits, ok := strings.CutPrefix(strings.TrimSuffix(host, nameDomain), "zk")
	i, err := strconv.Atoi(digits)
	if !ok || err != nil || !strings.HasSuffix(host, nameDomain) || strconv.Itoa(i) != digits {
		return nil, notFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.members) || s.members[i].down {
		return nil, notFound
	}
	return []string{s.members[i].ip}, nil
}

// LeaveServer stops server i, as when its process ends or its pod is
// deleted: its clients' connections close (they move to another server),
// its address refuses connections from now on (Dial, its listener), its
// name resolves to nothing (LookupHost), and it applies nothing. It keeps
// what it applied, as a pod keeps its volume: JoinServer brings it back.
// While a majority of the servers have left or are cut off, nobody
// serves (see the quorum rule above). A server that has left already is
// left alone.
func (s *Server) LeaveServer(i int) {
	s.mu.Lock()
	m := s.members[i]
	if m.down || s.closed {
		s.mu.Unlock()
		return
	}
	m.down = true
	s.retired[m.addr()] = true
	if m.ln != nil {
		m.ln.Close()
		m.ln = nil
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	m.pending = nil // the replies of its closed connections
	cut := append(s.connsOf(m), s.quorumChanged()...)
	s.mu.Unlock()
	for _, c := range cut {
		c.close()
	}
}

// JoinServer brings server i, which left (LeaveServer), back at a new
// address under its name, as a pod rescheduled under a headless service's
// name: a loopback address no server had, with the port it had (a TCP
// listener there if it listened before; on systems where only 127.0.0.1
// is a loopback address that fails). It catches up as a server let
// through again does (IsolateServer): it applies the transactions
// committed while it was away, those its delay (SetDelay) makes due at
// once, and serves. It returns an error if server i has not left, or the
// new address cannot be listened on (the server stays away).
func (s *Server) JoinServer(i int) error {
	s.mu.Lock()
	m := s.members[i]
	if !m.down || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("sim: server %d has not left, or the ensemble is closed", i)
	}
	s.joins++
	ip := loopback(len(s.members) + s.joins)
	tcp, port := m.tcp, m.port
	s.mu.Unlock()
	var ln net.Listener
	if tcp {
		var err error
		if ln, err = listenLoopback(net.JoinHostPort(ip, port)); err != nil {
			return fmt.Errorf("sim: server %d joins at a new address: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		if ln != nil {
			ln.Close()
		}
		return fmt.Errorf("sim: server %d: the ensemble is closed", i)
	}
	m.down, m.ip = false, ip
	if ln != nil {
		s.accept(m, ln)
	}
	m.advance(time.Now())
	s.quorumChanged() // regained: nothing to close
	return nil
}

// left reports whether server i has left the ensemble (LeaveServer) and
// not joined again.
func (s *Server) left(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members[i].down
}

// serving reports whether the ensemble serves clients: a majority of its
// servers up and no leader election under way (under the server's lock).
func (s *Server) serving() bool { return !s.noQuorum && s.electing == 0 }

// quorumChanged records whether a majority of the servers is up, after
// one left, joined, was cut off or let through (under the server's
// lock). On losing it, it returns every connection, for the caller to
// close outside the lock: ZooKeeper's leader steps down without a
// quorum, and its followers stop serving. On regaining it, the ensemble
// serves again (resume).
func (s *Server) quorumChanged() []*conn {
	up := 0
	for _, m := range s.members {
		if m.up() {
			up++
		}
	}
	has := 2*up > len(s.members)
	switch {
	case !has && !s.noQuorum:
		s.noQuorum = true
		cut := s.sortedConns(nil) // closed in one order on a replay
		return cut
	case has && s.noQuorum:
		s.noQuorum = false
		s.resume()
	}
	return nil
}

// resume starts every session's timeout afresh once the ensemble serves
// again (after an election, or with a quorum back), as ZooKeeper's new
// leader does: a client that reconnects within it keeps its session
// (under the server's lock).
func (s *Server) resume() {
	if !s.serving() {
		return
	}
	now := time.Now()
	for _, ss := range s.sessions {
		ss.last = now
	}
}
