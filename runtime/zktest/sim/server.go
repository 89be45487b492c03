package sim

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"
)

// Server is a ZooKeeper server in the test process (see the package doc).
// Its methods are safe for concurrent use.
type Server struct {
	cfg config

	mu       sync.Mutex
	tree     *tree
	zxid     int64
	sessions map[int64]*session
	nextID   int64
	conns    map[*conn]struct{}
	nextConn int64          // the id of the last connection opened (conn.id)
	dials    map[string]int // connections opened per named client (DialerFor)
	steps    *stepper       // WithSteps; nil: not stepped
	members  []*member      // the servers of the ensemble (one unless NewEnsemble)
	closed   bool
	faults   faults
	electing int             // leader elections under way (ChangeLeader): nobody serves
	noQuorum bool            // a majority of the servers left or are cut off: nobody serves
	joins    int             // servers that joined again (JoinServer), for their new addresses
	retired  map[string]bool // the addresses of servers that left: they answer no more

	done chan struct{}
	wg   sync.WaitGroup
}

// firstSessionID is the id of the first session a server creates.
const firstSessionID = 0x0100000000000000

type session struct {
	id         int64
	passwd     []byte
	timeout    time.Duration
	conn       *conn
	last       time.Time // when the server last heard from the session
	ephemerals map[string]struct{}
	auth       []identity // addAuth ids
	ordinal    int        // 1 for the first session the server created, ...
	requests   int        // requests counted for the random faults' ids
}

// ids returns the ids the session is known by: its addAuth ids and the
// address it connects from (ZooKeeper's ip scheme).
func (s *session) ids() []identity {
	if s == nil {
		return nil
	}
	out := append([]identity(nil), s.auth...)
	if s.conn != nil {
		out = append(out, identity{"ip", s.conn.ip})
	}
	return out
}

// New returns a server that serves no listener yet: Dial connects to it
// in memory, Listen adds a loopback TCP listener.
func New(opts ...Option) *Server { return NewEnsemble(1, opts...) }

// NewEnsemble returns an ensemble of n servers over one state (see
// member.go): a client connects to one of them (Servers lists their
// addresses, Dial routes by address), reads that server's view of the
// tree, and each server applies the committed transactions after its own
// delay (SetDelay), or not at all while isolated (IsolateServer).
func NewEnsemble(n int, opts ...Option) *Server {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{cfg: cfg, tree: newTree(), sessions: map[int64]*session{}, conns: map[*conn]struct{}{},
		nextID: firstSessionID, done: make(chan struct{}), retired: map[string]bool{}, dials: map[string]int{}}
	for i := range max(n, 1) {
		s.members = append(s.members, &member{s: s, id: i, view: newTree(), ip: loopback(i + 1), port: memPort})
	}
	s.faults.init(cfg)
	if cfg.steps { // before the ticker, whose steps read it
		s.steps = &stepper{wake: make(chan struct{}, 1)}
		s.wg.Add(1)
		go s.stepLoop()
	}
	s.wg.Add(1)
	go s.ticker()
	return s
}

// Start returns a server listening on 127.0.0.1 on a free port, closed when
// the test ends.
func Start(tb testing.TB, opts ...Option) *Server { return StartEnsemble(tb, 1, opts...) }

// StartEnsemble returns an ensemble of n servers (NewEnsemble), each
// listening on 127.0.0.1 on a free port, closed when the test ends.
func StartEnsemble(tb testing.TB, n int, opts ...Option) *Server {
	tb.Helper()
	s := NewEnsemble(n, opts...)
	for i := range s.members {
		if err := s.listen(i, "127.0.0.1:0"); err != nil {
			s.Close()
			tb.Fatalf("sim: %v", err)
		}
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// Listen serves the server on addr, which must be a loopback address
// (127.0.0.1:0 picks a free port): the simulator is a test server and
// refuses to be anything else.
func (s *Server) Listen(addr string) error { return s.listen(0, addr) }

// ListenServer serves server i of the ensemble on addr (see Listen).
func (s *Server) ListenServer(i int, addr string) error { return s.listen(i, addr) }

func (s *Server) listen(i int, addr string) error {
	if i < 0 || i >= len(s.members) {
		return fmt.Errorf("sim: no server %d in an ensemble of %d", i, len(s.members))
	}
	ln, err := listenLoopback(addr)
	if err != nil {
		return err
	}
	m := s.members[i]
	s.mu.Lock()
	if s.closed || m.ln != nil || m.down {
		s.mu.Unlock()
		ln.Close()
		return errors.New("sim: closed, left, or listening already")
	}
	s.accept(m, ln)
	s.mu.Unlock()
	return nil
}

// listenLoopback listens on addr, which must be a loopback address.
func listenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("sim: listen on %q: the simulator serves loopback addresses only", addr)
	}
	return net.Listen("tcp", addr)
}

// accept makes ln member m's listener, its address m's, and serves the
// connections it accepts (under the server's lock).
func (s *Server) accept(m *member, ln net.Listener) {
	m.ln, m.tcp = ln, true
	m.ip, m.port, _ = net.SplitHostPort(ln.Addr().String())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.serve(nc, m, "") // a listener's connections take no turns
		}
	}()
}

// Addr returns the address of the first server's listener
// ("127.0.0.1:port"; a new one after it joined again, see JoinServer), or
// "" before Listen.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.members[0].tcp {
		return ""
	}
	return s.members[0].addr()
}

// Servers returns the addresses of the ensemble's servers: their
// listeners', or for a server without one the loopback address by which
// Dial reaches it in memory (127.0.0.<i+1>:2181 at first). A server that
// left (LeaveServer) is listed at the address it had, which answers no
// more; once it joined again, at its new one.
func (s *Server) Servers() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.members))
	for i, m := range s.members {
		out[i] = m.addr()
	}
	return out
}

// Dial connects in memory to the server whose address (see Servers) is
// address, or to the first one if no server ever had it: a dialer for
// go-zookeeper's zk.WithDialer and runtime.WithDialer. The address of a
// server that left (LeaveServer) refuses the connection.
func (s *Server) Dial(network, address string, timeout time.Duration) (net.Conn, error) {
	return s.dial(network, address, "")
}

// dial connects in memory to the server at address for the named client
// (DialerFor; "": none).
func (s *Server) dial(network, address, name string) (net.Conn, error) {
	s.mu.Lock()
	closed, retired := s.closed, s.retired[address]
	m := s.members[0]
	for _, x := range s.members {
		if x.addr() == address {
			m = x
		}
	}
	s.mu.Unlock()
	switch {
	case closed:
		return nil, errors.New("sim: server closed")
	case retired:
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("sim: %s: connection refused: its server left", address)}
	}
	client, server := net.Pipe()
	key := s.serve(server, m, name)
	switch {
	case s.steps == nil:
		return client, nil
	case key == "":
		// Closed at once (its server is down or serves nobody, in an
		// election say): still an end whose turns to send are let go the
		// way a closed connection's are, once every goroutine is blocked
		// and without a step. A plain pipe takes no turns, and a request
		// sent on it in that instant would race go-zookeeper's loop, which
		// fails its queue when a round of dials fails (ensemble-cache
		// seed=8000 under the race detector's shuffle).
		ce := &clientEnd{Conn: client, srv: s, key: refusedKey(name)}
		ce.closed.Store(true)
		return ce, nil
	}
	return &clientEnd{Conn: client, srv: s, key: key}, nil
}

// refusedKey is the key of a connection closed as it was dialled: its
// client's name (it counts as none of the client's connections).
func refusedKey(client string) string {
	if client == "" {
		return keyLast
	}
	return client + "/refused"
}

// DialContext is Dial with a context, for runtime.WithDialer.
func (s *Server) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Dial(network, address, 0)
}

// Close stops the server: every connection is closed and nothing is kept.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for _, m := range s.members {
		if m.ln != nil {
			m.ln.Close()
		}
		if m.timer != nil {
			m.timer.Stop()
		}
	}
	conns := s.sortedConns(nil)
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return nil
}

// ExpireSession expires the session id as the server does when it has not
// heard from it for its timeout: its ephemeral nodes are deleted (their
// watches fire) and its connection is closed; the client learns it is
// expired when it reconnects. It reports whether the session was live.
func (s *Server) ExpireSession(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return false
	}
	s.endSession(ss)
	return true
}

// Sessions returns the ids of the live sessions, ascending.
func (s *Server) Sessions() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessionIDs()
}

// ticker expires sessions and reaps containers and TTL nodes.
func (s *Server) ticker() {
	defer s.wg.Done()
	tick := time.NewTicker(s.cfg.tick / 2)
	defer tick.Stop()
	lastReap := time.Now() // the first sweep comes one interval after the start
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
			if !s.turn(keyTimer + "sweep") {
				return
			}
			now := time.Now()
			s.mu.Lock()
			s.report(now)                       // the followers' reports reach the leader first
			for _, id := range s.sessionIDs() { // expired in one order on a replay
				if ss := s.sessions[id]; s.serving() && now.Sub(ss.last) > ss.timeout {
					s.endSession(ss)
				}
			}
			if s.serving() && now.Sub(lastReap) >= s.cfg.checkInterval {
				lastReap = now
				s.reap(now)
			}
			s.mu.Unlock()
		}
	}
}

// nextZxid returns the zxid of a new transaction.
func (s *Server) nextZxid() int64 {
	s.zxid++
	return s.zxid
}

func (s *Server) newTxn(ss *session) *txn {
	return &txn{t: s.tree, s: s, zxid: s.nextZxid(), now: time.Now().UnixMilli(), session: ss}
}

// commit hands a transaction, committed or rolled back (a failed write is a
// transaction too: it has a zxid, which the servers must reach before they
// answer it), to every server of the ensemble.
func (s *Server) commit(x *txn) {
	e := &entry{zxid: x.zxid, at: time.Now(), effects: x.effects, events: x.events}
	x.events, x.undo, x.effects = nil, nil, nil
	for _, m := range s.members {
		m.enqueue(e)
	}
}

// trigger fires the watches an event concerns (ZooKeeper's DataTree and
// WatchManager): a created node fires its data and exist watches, a
// deleted one its data and child watches, a changed child list its
// parent's child watches, changed data its data watches — each one-shot
// watch used up — and the persistent watches on the path, and the
// recursive ones on the path and its ancestors (those see no child-list
// changes). A connection gets one event per trigger, and only if it may
// read the node.
func (m *member) trigger(ev watchEvent) {
	t := m.view
	notify := map[*conn]struct{}{}
	var order []*conn
	add := func(c *conn) {
		if _, ok := notify[c]; !ok {
			notify[c] = struct{}{}
			order = append(order, c)
		}
	}
	take := func(table map[string]map[*conn]struct{}) {
		for c := range table[ev.path] {
			add(c)
		}
		delete(table, ev.path)
	}
	switch ev.typ {
	case eventNodeCreated, eventNodeDataChanged:
		take(t.dataWatches)
	case eventNodeDeleted:
		take(t.dataWatches)
		take(t.childWatches)
	case eventNodeChildrenChanged:
		take(t.childWatches)
	}
	for c, recursive := range t.persistent[ev.path] {
		if !recursive || ev.typ != eventNodeChildrenChanged {
			add(c)
		}
	}
	if ev.typ != eventNodeChildrenChanged {
		for p := ev.path; p != "/"; {
			p, _ = parentOf(p)
			for c, recursive := range t.persistent[p] {
				if recursive {
					add(c)
				}
			}
		}
	}
	slices.SortFunc(order, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
	for _, c := range order {
		if c.sess != nil && allowed(ev.acl, permRead, c.sess.ids()) {
			c.event(ev.typ, ev.path)
		}
	}
}

func (s *Server) watch(table map[string]map[*conn]struct{}, path string, c *conn) {
	if table[path] == nil {
		table[path] = map[*conn]struct{}{}
	}
	table[path][c] = struct{}{}
}

// dropWatches forgets the watches of a closed connection.
func (s *Server) dropWatches(c *conn) {
	t := c.m.view
	for p, ws := range t.persistent {
		delete(ws, c)
		if len(ws) == 0 {
			delete(t.persistent, p)
		}
	}
	for _, table := range []map[string]map[*conn]struct{}{t.dataWatches, t.childWatches} {
		for p, ws := range table {
			delete(ws, c)
			if len(ws) == 0 {
				delete(table, p)
			}
		}
	}
}

// endSession closes a session (expiry or closeSession): a transaction that
// deletes its ephemeral nodes, in path order.
func (s *Server) endSession(ss *session) {
	delete(s.sessions, ss.id)
	x := s.newTxn(ss)
	paths := make([]string, 0, len(ss.ephemerals))
	for p := range ss.ephemerals {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if n := s.tree.nodes[p]; n != nil && n.stat.EphemeralOwner == ss.id {
			parent, name := parentOf(p)
			x.remove(p, parent, name, n)
		}
	}
	s.commit(x)
	if ss.conn != nil {
		c := ss.conn
		ss.conn = nil
		c.closeLocked()
	}
}

// reap deletes the containers that had children and have none, and the
// TTL nodes without children whose TTL has passed since their last
// change (ZooKeeper's ContainerManager), each in a transaction of its own.
func (s *Server) reap(now time.Time) {
	var due []string
	for p := range s.tree.reapable {
		n := s.tree.nodes[p]
		switch {
		case len(n.children) > 0:
		case n.isContainer() && n.stat.Cversion > 0: // it had children
			due = append(due, p)
		case n.isTTL() && now.UnixMilli()-n.stat.Mtime > n.ttl():
			due = append(due, p)
		}
	}
	sort.Strings(due)
	for _, p := range due {
		n := s.tree.nodes[p]
		if n == nil || len(n.children) > 0 {
			continue
		}
		x := s.newTxn(nil)
		parent, name := parentOf(p)
		x.remove(p, parent, name, n)
		s.commit(x)
	}
}

// newPasswd returns a session password.
func newPasswd() []byte {
	p := make([]byte, 16)
	_, _ = crand.Read(p)
	return p
}

// readFrame reads one length-prefixed frame of at most max bytes.
func readFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 0 || n > max {
		return nil, fmt.Errorf("sim: frame of %d bytes (jute.maxbuffer %d)", n, max)
	}
	p := make([]byte, n)
	_, err := io.ReadFull(r, p)
	return p, err
}
