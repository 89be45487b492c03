package sim

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing/synctest"
)

// Steps (WithSteps). Inside a testing/synctest bubble the clock stands
// still while any goroutine can run, but the goroutines that can run at
// one virtual instant run in whatever order Go's scheduler picks: two
// clients' requests reach the server in either order, a reply and an
// expiry race, and a replay of one seed may not repeat its history. A
// stepped server takes what it does one step at a time, each step only
// once every goroutine of the bubble is blocked (synctest.Wait), so that
// the clients' reaction to one step is over before the next begins:
//
//   - executing one request (or a handshake) read from a connection;
//   - writing one frame (a reply, a watch event) to a connection;
//   - one of its own timed actions: applying transactions on a lagging
//     server, the session and container sweep, the end of a leader
//     election, an event of the chaos schedule and its undoing.
//
// Of the steps waiting at once, the one that has waited since the
// earliest step goes first (none waits forever), then the one with the
// least key: its kind, then its connection's client (DialerFor), the
// connections of one client in the order it dialled them. A client's own
// goroutines woken by one step would reach its request queue in the order
// Go's scheduler runs them; so a session of the runtime asks for a turn
// before each request (a step of kind "send", keyed by where the
// goroutine stands in the code, see clientEnd), and they send one at a
// time in that order. What a client does between two steps without a
// request (a select among ready channels, say) is still its own.

// WithSteps makes the server take one step at a time (see above), for
// replays that repeat their history. The server must be made inside a
// testing/synctest bubble, whose synctest.Wait only the server may then
// call. A goroutine of the bubble waiting for a sync.Mutex is not
// durably blocked: while one waits for a mutex another holds across a
// request, no step is taken and the run hangs — hold no mutex across a
// call to the server. Default: off, each connection served as its
// goroutines run.
func WithSteps() Option {
	return func(c *config) { c.steps = true }
}

// WithStepLog makes a stepped server (WithSteps) tell log each step as it
// takes it: its number and what it is ("request p2/000001": a request from
// client p2's first connection, "write ...": a frame to it, "timer sweep",
// ...). log is called while every other goroutine of the bubble is
// blocked; it must not block.
func WithStepLog(log func(step uint64, what string)) Option {
	return func(c *config) { c.stepLog = log }
}

// stepper orders a stepped server's steps.
type stepper struct {
	mu      sync.Mutex
	waiting []*turn
	taken   uint64        // steps taken so far
	wake    chan struct{} // a step arrived (capacity 1)
}

// turn is one step waiting for its turn.
type turn struct {
	since uint64 // the steps taken when it arrived
	key   string
	what  func() string // what it is, for the step log (nil: its key says)
	gone  *atomic.Bool  // a client's turn to send: set once its connection is closed
	none  bool          // let go without a step: its connection was closed (set before go_ closes)
	go_   chan struct{} // closed: its turn
}

// Step keys: a kind, then what the step is of.
const (
	keyTimer   = "0 timer "   // the server's own timed actions
	keyRequest = "1 request " // + the connection's key: a request to execute
	keySend    = "1 send "    // + the connection's key and a place: a client's turn to send
	keyWrite   = "2 write "   // + the connection's key: a frame to write
	keyLast    = "~"          // connections of no named client (Dial)
)

// Steps returns how many steps a stepped server (WithSteps) has taken:
// what a test records between two steps has one count. 0 for a server
// that is not stepped.
func (s *Server) Steps() uint64 {
	if s.steps == nil {
		return 0
	}
	s.steps.mu.Lock()
	defer s.steps.mu.Unlock()
	return s.steps.taken
}

// turn waits for the turn of a step of key (at once on a server that is
// not stepped); false: the server closed meanwhile, and the step is not
// to be taken. Never called under a lock: every goroutine must be able to
// block while it waits.
func (s *Server) turn(key string) bool { return s.turnOf(&turn{key: key}) }

// turnOf waits for the turn of step t (its key, and what or gone if set);
// see turn.
func (s *Server) turnOf(t *turn) bool {
	st := s.steps
	if st == nil {
		return true
	}
	t.go_ = make(chan struct{})
	st.mu.Lock()
	t.since = st.taken
	st.waiting = append(st.waiting, t)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
	select {
	case <-t.go_:
		return true
	case <-s.done:
		return false
	}
}

// stepLoop gives the turns, one whenever every other goroutine of the
// bubble is blocked, until the server closes.
func (s *Server) stepLoop() {
	defer s.wg.Done()
	st := s.steps
	for {
		synctest.Wait()
		st.mu.Lock()
		// Turns to send on connections closed since they were asked for
		// are no steps: nothing will be sent on that connection. But
		// what their goroutines do next (hand a request to go-zookeeper,
		// which sends it on the next connection) comes in the order they
		// are let go: so they are let go one at a time, in the order of
		// turns, each once what the one before did is over. Let go
		// together, two of them would queue their requests in the order
		// Go's scheduler ran them (service seed=214238293: a session's
		// read of its configuration and a registration, both waiting
		// while their connection was cut, replayed to two histories).
		if i := slices.IndexFunc(st.waiting, gone); i >= 0 {
			for k, t := range st.waiting {
				if gone(t) && byTurn(t, st.waiting[i]) < 0 {
					i = k
				}
			}
			t := st.waiting[i]
			st.waiting = slices.Delete(st.waiting, i, i+1)
			t.none = true
			st.mu.Unlock()
			close(t.go_)
			continue
		}
		var next *turn
		if len(st.waiting) > 0 {
			i := 0
			for k, t := range st.waiting {
				if byTurn(t, st.waiting[i]) < 0 {
					i = k
				}
			}
			next = st.waiting[i]
			st.waiting = slices.Delete(st.waiting, i, i+1)
			st.taken++
		}
		st.mu.Unlock()
		if next != nil {
			if log := s.cfg.stepLog; log != nil {
				what := next.key[2:]
				if next.what != nil {
					what += ": " + next.what()
				}
				log(st.taken, what)
			}
			close(next.go_)
			continue
		}
		select {
		case <-st.wake:
		case <-s.done:
			return
		}
	}
}

// gone reports whether t is a turn to send on a connection its client
// has closed since.
func gone(t *turn) bool { return t.gone != nil && t.gone.Load() }

func byTurn(a, b *turn) int {
	if c := cmp.Compare(a.since, b.since); c != 0 {
		return c
	}
	return cmp.Compare(a.key, b.key)
}

// clientEnd is a client's end of a connection to a stepped server. Its
// SendTurn is the turn a session of the runtime (runtime/internal/client)
// asks for before each request: the goroutines of one process that one
// step woke send in the order of where they stand, not of how Go's
// scheduler ran them, so that a replay sends what the run sent.
type clientEnd struct {
	net.Conn
	srv    *Server
	key    string      // the connection's key (connKey)
	closed atomic.Bool // the client closed its end
}

// Close closes the client's end.
func (c *clientEnd) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// SendTurn waits for the turn of the goroutine standing at place to send
// its next request: a step of the server's; false: no step was taken (the
// connection or the server closed). On
// a connection its client has closed, by the time it asks or by the time
// its turn would come, it takes no step: nothing can be sent on it, and
// whether a goroutine woken as the connection was lost asks before its
// session ends or after (the end may come with the loss, at the same
// instant) would otherwise put a step in the history of some runs only.
// It still waits until every goroutine is blocked, as for a step: let go
// at once, it would race its session's reconnection (reap-ackqueue
// seed=18387830 then replayed to two histories).
func (c *clientEnd) SendTurn(place string) bool {
	t := &turn{key: keySend + c.key + " " + place, gone: &c.closed}
	return c.srv.turnOf(t) && !t.none
}

// DialerFor returns DialContext for the client named client: on a stepped
// server (WithSteps) the steps of its connections are ordered by that
// name, then by the order the client dialled them — not by the order they
// happened to arrive in — so give each simulated process a name of its
// own. On a server that is not stepped it is DialContext.
func (s *Server) DialerFor(client string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return s.dial(network, address, client)
	}
}

// connKey is the key of a connection's steps: its client's name and its
// place among that client's connections, or, with no name, its place
// among the server's (under the server's lock).
func (s *Server) connKey(client string) string {
	if client == "" {
		return fmt.Sprintf("%s%012d", keyLast, s.nextConn)
	}
	s.dials[client]++
	return fmt.Sprintf("%s/%06d", client, s.dials[client])
}

// describeRequest says what a request frame (without its length) is, for
// the step log: "op 1 /a/b".
func describeRequest(f []byte) string {
	r := &reader{b: f}
	r.int32() // xid: a client's own numbering, not what the request is
	op := r.int32()
	s := fmt.Sprintf("op %d", op)
	switch op {
	case opPing, opAuth, opSetWatches, opSetWatches2, opCloseSession, opMulti:
	default:
		if p := r.string(); r.err == nil {
			s += " " + p
		}
	}
	return s
}

// describeFrame says what a frame to the client (with its length) is, for
// the step log: "reply zxid 12 err 0", or a watch event's "event 3 /a/b".
func describeFrame(f []byte) string {
	r := &reader{b: f}
	r.int32() // length
	xid, zxid, code := r.int32(), r.int64(), r.int32()
	if xid == xidNotification {
		typ, _ := r.int32(), r.int32()
		return fmt.Sprintf("event %d %s", typ, r.string())
	}
	return fmt.Sprintf("reply zxid %d err %d", zxid, code)
}

// inbox holds the requests a stepped connection has read and not yet
// executed.
type inbox struct {
	mu     sync.Mutex
	frames [][]byte
	eof    bool          // nothing more comes: the connection is closed
	wake   chan struct{} // a frame came, or the end (capacity 1)
}

// execSteps executes a stepped connection's requests, each in a step of
// its own, until the connection ends. A goroutine reads them as they come
// (the client's writes never wait for a step), and each step executes, of
// those read, the one with the least xid (pings first). A client's
// requests that are in flight together come from goroutines of its own
// that raced to send them; go-zookeeper numbers them as they are made,
// before the race to its send queue, so their xids keep every order the
// client enforced (one sent after another's frame was written has a
// greater xid) and drop the rest of the race. After a closeSession what
// comes is dropped without a step, as handle would.
func (c *conn) execSteps() {
	in := &inbox{wake: make(chan struct{}, 1)}
	c.srv.wg.Add(1)
	go c.readInto(in)
	for in.await() {
		c.mu.Lock()
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		if c.isClosing() {
			in.take(true)
			continue
		}
		if !c.srv.turnOf(&turn{key: keyRequest + c.key, what: in.describe}) {
			return
		}
		if f := in.take(false); f != nil && !c.srv.handle(c, f) {
			return
		}
	}
}

// readInto reads c's frames into in until the connection ends.
func (c *conn) readInto(in *inbox) {
	defer c.srv.wg.Done()
	for {
		f, err := readFrame(c.nc, c.srv.cfg.maxBuffer)
		in.mu.Lock()
		if err != nil {
			in.eof = true
		} else {
			in.frames = append(in.frames, f)
		}
		in.mu.Unlock()
		select {
		case in.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

// await waits for a frame; false once none will come.
func (in *inbox) await() bool {
	for {
		in.mu.Lock()
		n, eof := len(in.frames), in.eof
		in.mu.Unlock()
		switch {
		case n > 0:
			return true
		case eof:
			return false
		}
		<-in.wake
	}
}

// next is the index of the frame to execute next. A setWatches goes
// first: go-zookeeper sends it on a goroutine of its own as it reconnects,
// racing the requests it queued meanwhile, which no client orders after
// it (beside a closeSession it goes last, dropped with what follows the
// close). Else, in xid order (the earliest of equal xids first), a write goes
// next; reads before the first write go in the order of their bytes after
// the xid — opcode, then path — since reads in flight together come from
// goroutines that raced to number them, and reads change nothing the
// others read: any order of them is one ZooKeeper could have seen.
func (in *inbox) next() int {
	order := make([]int, len(in.frames))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(frameXid(in.frames[a]), frameXid(in.frames[b])) })
	isSetWatches := func(i int) bool { op := frameOp(in.frames[i]); return op == opSetWatches || op == opSetWatches2 }
	if slices.ContainsFunc(in.frames, func(f []byte) bool { return frameOp(f) == opCloseSession }) {
		// The session is closing: what a setWatches would fire reaches a
		// client going away (go-zookeeper, as it closes, sends one or not,
		// as its select picks), so it goes after the close, dropped.
		order = slices.DeleteFunc(order, isSetWatches)
	} else if i := slices.IndexFunc(order, isSetWatches); i >= 0 {
		return order[i]
	}
	k := order[0]
	for _, i := range order {
		if !isRead(in.frames[i]) {
			break
		}
		if string(in.frames[i][4:]) < string(in.frames[k][4:]) {
			k = i
		}
	}
	return k
}

// isRead reports whether a request frame only reads: executed before or
// after another read, it answers the same.
func isRead(f []byte) bool {
	switch frameOp(f) {
	case opExists, opGetData, opGetACL, opGetChildren, opGetChildren2, opPing:
		return true
	}
	return false
}

// frameOp is a request's opcode (a frame without its length; -1 if it is
// too short).
func frameOp(f []byte) int32 {
	if len(f) < 8 {
		return -1
	}
	return int32(binary.BigEndian.Uint32(f[4:]))
}

// take removes and returns the next frame (all of them with all, and nil).
func (in *inbox) take(all bool) []byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	if all || len(in.frames) == 0 {
		in.frames = nil
		return nil
	}
	k := in.next()
	f := in.frames[k]
	in.frames = slices.Delete(in.frames, k, k+1)
	return f
}

// describe says what the next frame is, for the step log.
func (in *inbox) describe() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.frames) == 0 {
		return "nothing"
	}
	return describeRequest(in.frames[in.next()])
}

// frameXid is a request's xid (a frame without its length).
func frameXid(f []byte) int32 {
	if len(f) < 4 {
		return 0
	}
	return int32(binary.BigEndian.Uint32(f))
}
