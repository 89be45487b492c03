package sim

import (
	"fmt"
	"net"
	"slices"
	"time"
)

// An ensemble (NewEnsemble) is several servers over one state: writes are
// ordered and committed by the leader (the Server's own tree and zxid),
// and each server applies the committed transactions to its own view of
// the tree, in order, a delay after they were committed (0 by default;
// SetDelay). A client is connected to one server: it reads that server's
// view, its watches fire when that server applies a change, and the reply
// to its write (or sync) comes once its server has applied it — so a read
// on a lagging server may be stale, as ZooKeeper's sequential consistency
// allows, yet a client never sees its own writes or its own history go
// backwards: its later requests wait behind its pending reply, and a
// server that has applied less than a client has seen refuses the client's
// connection (the zxid check). A standalone Server is an ensemble of one.

// member is one server of the ensemble.
type member struct {
	s        *Server
	id       int
	view     *tree
	applied  int64 // the last zxid applied to view
	delay    time.Duration
	isolated bool         // cut off: no clients, nothing applied (IsolateServer)
	down     bool         // left the ensemble: no address, nothing applied (LeaveServer)
	ip, port string       // its address (see addr)
	tcp      bool         // it listens on TCP (Listen): it does again at a new address
	ln       net.Listener // nil while down
	queue    []*entry     // committed, not applied yet, in zxid order
	timer    *time.Timer
	pending  []pendingReply // replies waiting for their zxid to be applied
	// heard holds the sessions this follower heard from since its last
	// report to the leader (see Server.heard).
	heard map[int64]bool
}

// entry is one committed transaction, as the servers apply it.
type entry struct {
	zxid    int64
	at      time.Time // when it was committed
	effects []effect
	events  []watchEvent
}

type pendingReply struct {
	zxid  int64
	c     *conn
	frame []byte
}

// addr is the member's address: its listener's, or a loopback address
// of its own for in-memory connections (Dial routes by it), at first
// 127.0.0.<id+1>:2181; a new one each time it joins again (JoinServer).
func (m *member) addr() string { return net.JoinHostPort(m.ip, m.port) }

// up reports whether the member takes part in the ensemble: neither left
// (LeaveServer) nor cut off (IsolateServer).
func (m *member) up() bool { return !m.down && !m.isolated }

// enqueue takes a committed transaction and applies what is due.
func (m *member) enqueue(e *entry) {
	m.queue = append(m.queue, e)
	m.advance(time.Now())
}

// advance applies the queued transactions that are due by now, in order,
// and arms a timer for the next one (under the server's lock).
func (m *member) advance(now time.Time) {
	for len(m.queue) > 0 && m.up() && !now.Before(m.queue[0].at.Add(m.delay)) {
		e := m.queue[0]
		m.queue = m.queue[1:]
		m.apply(e)
	}
	if m.timer != nil {
		m.timer.Stop()
		m.timer = nil
	}
	if len(m.queue) > 0 && m.up() {
		m.timer = time.AfterFunc(time.Until(m.queue[0].at.Add(m.delay)), func() {
			if !m.s.turn(fmt.Sprintf("%sapply %d", keyTimer, m.id)) {
				return
			}
			m.s.mu.Lock()
			defer m.s.mu.Unlock()
			if !m.s.closed {
				m.advance(time.Now())
			}
		})
	}
}

// apply replays e on the member's view, fires its watches there, and
// sends the replies that waited for it.
func (m *member) apply(e *entry) {
	t := m.view
	for _, ef := range e.effects {
		parentPath, name := parentOf(ef.path)
		switch ef.kind {
		case effCreate:
			t.nodes[ef.path] = &node{data: ef.data, acl: ef.acl, stat: ef.stat, children: map[string]struct{}{}}
			if p := t.nodes[parentPath]; p != nil {
				p.children[name] = struct{}{}
				p.stat.Cversion++
				p.stat.Pzxid = e.zxid
			}
		case effDelete:
			delete(t.nodes, ef.path)
			if p := t.nodes[parentPath]; p != nil {
				delete(p.children, name)
				p.stat.Pzxid = e.zxid
			}
		case effSetData:
			if n := t.nodes[ef.path]; n != nil {
				n.data, n.stat = ef.data, ef.stat
			}
		case effSetACL:
			if n := t.nodes[ef.path]; n != nil {
				n.acl, n.stat = ef.acl, ef.stat
			}
		}
	}
	for _, ev := range e.events {
		m.trigger(ev)
	}
	m.applied = e.zxid
	m.flush()
}

// flush sends the replies whose transaction the member has applied, and
// lets the connections that waited for one go on with their requests.
func (m *member) flush() {
	n := 0
	for _, p := range m.pending {
		if p.zxid > m.applied {
			break
		}
		p.c.send(p.frame)
		n++
	}
	m.pending = m.pending[n:]
	waiting := func(c *conn) bool { return c.m == m && len(c.backlog) > 0 && c.waitZxid <= m.applied }
	for _, c := range m.s.sortedConns(waiting) {
		if waiting(c) { // still: a drain before it may have drained it
			m.s.drain(c)
		}
	}
}

// replyAt sends c's reply once the member has applied zxid: at once if it
// has, else when it does; c's later requests wait until then.
func (m *member) replyAt(c *conn, zxid int64, frame []byte) {
	if zxid <= m.applied {
		c.send(frame)
		return
	}
	m.pending = append(m.pending, pendingReply{zxid: zxid, c: c, frame: frame})
	c.waitZxid = max(c.waitZxid, zxid)
}

// SetDelay makes server i apply each committed transaction d after it was
// committed (a lagging follower): its clients' reads may be stale, their
// watches fire late, and their writes and syncs are answered once it has
// caught up with them. 0 (the default) applies at once.
func (s *Server) SetDelay(i int, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.members[i]
	m.delay = max(d, 0)
	m.advance(time.Now())
}

// IsolateServer cuts server i off from the ensemble while on, as a
// follower that lost the leader: it closes its clients' connections and
// refuses new ones (they move to another server, or their sessions expire
// on the leader's clock), and applies nothing. Off, it catches up and
// serves again. A majority of the servers cut off or left stops the
// whole ensemble until one comes back (see quorumChanged).
func (s *Server) IsolateServer(i int, on bool) {
	s.mu.Lock()
	m := s.members[i]
	m.isolated = on
	var cut []*conn
	if on {
		cut = s.connsOf(m)
	} else {
		m.advance(time.Now())
	}
	cut = append(cut, s.quorumChanged()...)
	s.mu.Unlock()
	for _, c := range cut {
		c.close()
	}
}

// sessionsOn returns the sessions connected to server i now, in id order.
func (s *Server) sessionsOn(i int) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []int64
	for _, c := range s.connsOf(s.members[i]) {
		if id := c.sessID(); id != 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// connsOf returns the connections to member m (under the server's lock).
func (s *Server) connsOf(m *member) []*conn {
	return s.sortedConns(func(c *conn) bool { return c.m == m })
}

// ChangeLeader runs a leader election that lasts d, as when the leader
// fails: no server serves meanwhile (every client connection is closed,
// new ones are refused; a request sent is lost, executed or not as the
// faults say: a committed one stays committed), and no session expires.
// Then every server serves again (if a quorum is up), caught up, and —
// as ZooKeeper's new leader does — every session's timeout starts
// afresh: a client that reconnects within it keeps its session, though
// its own clock may have given it up. The call returns at once.
func (s *Server) ChangeLeader(d time.Duration) {
	s.mu.Lock()
	s.electing++
	cut := s.sortedConns(nil)
	s.mu.Unlock()
	for _, c := range cut {
		c.close()
	}
	time.AfterFunc(d, func() {
		if !s.turn(keyTimer + "elected") {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.electing--
		s.resume()
	})
}

// Applied returns the zxid server i has applied: the ensemble's latest
// (Zxid) unless it lags or is isolated.
func (s *Server) Applied(i int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.members[i].applied
}

// Zxid returns the zxid of the latest transaction the ensemble committed.
func (s *Server) Zxid() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.zxid
}

// Session activity and the leader's clock. The ensemble's leader expires
// sessions; it hears from a client connected to a follower only through
// that follower's reports, sent each time the leader pings it (every half
// tick), and it counts the session alive from the report's arrival. A
// follower cut off from the leader (IsolateServer) or gone (LeaveServer)
// takes the activity it has not reported yet with it: the leader's clock
// then starts at the session's earlier report, up to a half tick (or, for
// a quiet client, a ping interval) before the client last heard from its
// server. Server 0 is the leader's seat: what it hears counts at once.

// heard records that member m heard from session ss now (under the
// server's lock).
func (s *Server) heard(m *member, ss *session) {
	if m == s.members[0] {
		ss.last = time.Now()
		return
	}
	if m.heard == nil {
		m.heard = map[int64]bool{}
	}
	m.heard[ss.id] = true
}

// report delivers each follower's report of the sessions it heard from to
// the leader at now; a follower that is not up reports nothing, and what
// it had heard is lost (under the server's lock).
func (s *Server) report(now time.Time) {
	for _, m := range s.members[1:] {
		if m.up() {
			for id := range m.heard { // each set to now: the order is not seen
				if ss := s.sessions[id]; ss != nil && ss.last.Before(now) {
					ss.last = now
				}
			}
		}
		m.heard = nil
	}
}
