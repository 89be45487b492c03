package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Recipes on a 3-server ensemble whose servers are partitioned from each
// other (zktest.WithQuorumFaults) while clients stay connected to the server
// they chose. A client whose server list holds only the server cut off is on
// the minority side: that server stops serving and drops its connections,
// so the client's session runs on its own clock (liveness.go) until the
// majority expires it. Invariants are checked on instants recorded with one
// monotonic clock in the test process, never on durations.

// settleQuorum bounds each wait for the ensemble to settle after a fault:
// an election and a sync take well under a second here; this only guards
// against a hang on a loaded machine.
const settleQuorum = time.Minute

// minorityTimeout is the session timeout of a client cut off with its
// server: it is told of its loss at 35% of it, the majority expires it
// after all of it. Short, so that the tests take seconds; well above the
// ensemble's minimum (2 ticks, 400ms).
const minorityTimeout = 4 * time.Second

// survivorTimeout is the session timeout of clients that must outlive a
// partition or a leader election (they reconnect to another server).
// A disconnected session gives up at 35% of its timeout: 60s (the test
// servers' maximum) rides out 21s.
const survivorTimeout = 60 * time.Second

// clock is the one monotonic clock of a test: instants since its start.
type clock struct{ start time.Time }

func newClock() *clock { return &clock{start: time.Now()} }

func (c *clock) now() time.Duration { return time.Since(c.start) }

// memberAddrs returns the client addresses of the given members.
func memberAddrs(e *zktest.Ensemble, members ...int) []string {
	var out []string
	for _, i := range members {
		out = append(out, e.Server(i).Addr())
	}
	return out
}

// othersThan returns every member but i.
func othersThan(e *zktest.Ensemble, i int) []int {
	var out []int
	for j := range e.Size() {
		if j != i {
			out = append(out, j)
		}
	}
	return out
}

// follower returns a member that serves as a follower.
func follower(t *testing.T, e *zktest.Ensemble) int {
	t.Helper()
	leader, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatal(err)
	}
	return (leader + 1) % e.Size()
}

// isolate cuts member x off from the others and waits until the majority
// serves without it (and x refuses to serve). It returns the majority's
// leader. The partition is healed at the end of the test at the latest.
func isolate(t *testing.T, e *zktest.Ensemble, x int) int {
	t.Helper()
	if err := e.Isolate(x); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Heal() })
	leader, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatalf("after isolating member %d: %v", x, err)
	}
	if leader == x {
		t.Fatalf("isolated member %d still leads", x)
	}
	return leader
}

// heal ends the partition and waits until every member serves again, one
// of them as the leader.
func heal(t *testing.T, e *zktest.Ensemble) int {
	t.Helper()
	if err := e.Heal(); err != nil {
		t.Fatal(err)
	}
	leader, err := e.WaitQuorum(settleQuorum)
	if err != nil {
		t.Fatalf("after healing: %v", err)
	}
	return leader
}

// requireEmptyEverywhere fails the test unless dir has no children as seen
// from every member, each read after a sync: nothing orphaned, and every
// member caught up.
func requireEmptyEverywhere(t *testing.T, e *zktest.Ensemble, dir string) {
	t.Helper()
	for i := range e.Size() {
		s := connect(t, memberAddrs(e, i))
		if _, err := s.Conn().Sync(dir); err != nil {
			t.Fatalf("sync %s on member %d: %v", dir, i, err)
		}
		if kids := childrenOf(t, s, dir); len(kids) != 0 {
			t.Fatalf("member %d: left under %s: %v", i, dir, kids)
		}
		s.Close()
	}
}

// fleet is a set of clients of an ensemble, each with its server list and
// a session that it replaces when it ends.
type fleet struct {
	t   *testing.T
	ctx context.Context
	// anyTimeout is the session timeout of clients that may use any
	// member (survivorTimeout by default); pinned clients get
	// minorityTimeout.
	anyTimeout time.Duration

	mu      sync.Mutex
	clients []*fleetClient
	all     []*runtime.Session
}

// fleetClient is one client: a server list, either one member's (pinned:
// cut off with it, with a short session timeout) or every member's.
type fleetClient struct {
	f       *fleet
	name    string
	servers []string
	member  int // the member it is pinned to; -1: any

	drops disconnects // lost connections, all sessions together

	mu       sync.Mutex
	cur      *runtime.Session
	sessions []*runtime.Session // every one, in order
	gen      int
	fresh    chan struct{} // closed when a new session is established
}

func newFleet(t *testing.T, ctx context.Context) *fleet {
	return &fleet{t: t, ctx: ctx, anyTimeout: survivorTimeout}
}

// client adds a client pinned to member m, or to any member if m < 0.
func (f *fleet) client(name string, e *zktest.Ensemble, m int) *fleetClient {
	servers := e.Servers()
	if m >= 0 {
		servers = memberAddrs(e, m)
	}
	c := &fleetClient{f: f, name: name, servers: servers, member: m, drops: newDisconnects(), fresh: make(chan struct{})}
	f.mu.Lock()
	f.clients = append(f.clients, c)
	f.mu.Unlock()
	return c
}

// pinnedTo waits until every client pinned to member m has a live session,
// and returns those sessions.
func (f *fleet) pinnedTo(m int) []*runtime.Session {
	f.mu.Lock()
	cs := slices.Clone(f.clients)
	f.mu.Unlock()
	var out []*runtime.Session
	for _, c := range cs {
		if c.member != m {
			continue
		}
		for {
			c.mu.Lock()
			cur, fresh := c.cur, c.fresh
			c.mu.Unlock()
			if cur != nil && cur.Err() == nil {
				out = append(out, cur)
				break
			}
			select {
			case <-fresh:
			case <-f.ctx.Done():
				f.t.Fatalf("%s: no live session on member %d", c.name, m)
			}
		}
	}
	return out
}

// awaitEnd waits until every session in ss has ended.
func (f *fleet) awaitEnd(ss []*runtime.Session, why string) {
	f.t.Helper()
	for _, s := range ss {
		select {
		case <-s.Done():
		case <-f.ctx.Done():
			f.t.Fatalf("a session never ended: %s", why)
		}
	}
}

// closeAll closes every session the clients opened.
func (f *fleet) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.all {
		s.Close()
	}
}

// fewestDrops returns the fewest lost connections of any client, and the
// client's name.
func (f *fleet) fewestDrops() (int64, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	least, who := int64(-1), ""
	for _, c := range f.clients {
		if n := c.drops.count(); least < 0 || n < least {
			least, who = n, c.name
		}
	}
	return least, who
}

// gaveUp reports whether id is a session of the fleet that ended otherwise
// than by Close: its client gave it up (or the server expired it), and the
// server may hold it, and its ephemeral nodes, until its timeout.
func (f *fleet) gaveUp(id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.all {
		if s.ID() == id {
			return errors.Is(s.Err(), runtime.ErrSessionExpired)
		}
	}
	return false
}

// awaitExpired waits, with child watches, until no child of the dirs is an
// ephemeral node of a session its client gave up on (gaveUp): the server
// expires such a session only at its timeout after it last heard from it,
// which can be well after the client gave up (a client gives up at 35% of
// the timeout after the last bytes it received, and an idle client hears
// from the server only once a ping interval, a third of the timeout). It
// fails the test if a node outlives its owner's session timeout plus
// margin, counted from the start of the wait: the server heard from the
// session last before that (the fleet's sessions had all ended).
func awaitExpired(t *testing.T, ctx context.Context, s *runtime.Session, f *fleet, members []string, margin time.Duration, dirs ...string) {
	t.Helper()
	start := time.Now()
	for _, dir := range dirs {
		for {
			kids, _, w, err := s.Conn().ChildrenW(dir)
			if errors.Is(err, zk.ErrNoNode) {
				break
			}
			if err != nil {
				t.Fatalf("children %s: %v", dir, err)
			}
			waiting, owner := "", int64(0)
			for _, k := range kids {
				if _, st, err := s.Conn().Get(dir + "/" + k); err == nil && st.EphemeralOwner != 0 && f.gaveUp(st.EphemeralOwner) {
					waiting, owner = k, st.EphemeralOwner
					break
				}
			}
			if waiting == "" {
				break
			}
			bound := f.timeoutOf(owner) + margin
			deadline := time.NewTimer(time.Until(start.Add(bound)))
			select {
			case <-w:
				deadline.Stop()
			case <-deadline.C:
				t.Fatalf("%s/%s: the server did not expire its session 0x%x (%s) within %v; the check's session is on %s; %s",
					dir, waiting, owner, f.owner(owner), bound, s.Conn().Server(), nodeOnMembers(t, members, dir+"/"+waiting))
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			}
		}
	}
}

// timeoutOf returns the session timeout the fleet's client asked for the
// session id: minorityTimeout for a pinned client, anyTimeout for the
// others.
func (f *fleet) timeoutOf(id int64) time.Duration {
	if c, _, _ := f.clientOf(id); c != nil && c.member < 0 {
		return f.anyTimeout
	}
	return minorityTimeout
}

// clientOf finds the client whose session has the given id: the client
// (nil if none), the session's index among its sessions and those
// sessions.
func (f *fleet) clientOf(id int64) (*fleetClient, int, []*runtime.Session) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clients {
		c.mu.Lock()
		ss := slices.Clone(c.sessions)
		c.mu.Unlock()
		for i, s := range ss {
			if s.ID() == id {
				return c, i, ss
			}
		}
	}
	return nil, 0, nil
}

// nodeOnMembers tells, for each member, whether it has the node at path
// and its owner, read on a session of its own to that member only.
func nodeOnMembers(t *testing.T, members []string, path string) string {
	var out []string
	for i, m := range members {
		s := connect(t, []string{m})
		switch _, st, err := s.Conn().Get(path); {
		case err != nil:
			out = append(out, fmt.Sprintf("member %d: %v", i, err))
		default:
			out = append(out, fmt.Sprintf("member %d: owner 0x%x, czxid 0x%x", i, st.EphemeralOwner, st.Czxid))
		}
		s.Close()
	}
	return strings.Join(out, "; ")
}

// owner names the client whose session has the given id, with the
// session's state as its client sees it.
func (f *fleet) owner(id int64) string {
	c, i, ss := f.clientOf(id)
	if c == nil {
		return "no client's"
	}
	return fmt.Sprintf("%s's session %d of %d (Err: %v)", c.name, i+1, len(ss), ss[i].Err())
}

// opened counts the sessions opened.
func (f *fleet) opened() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.all)
}

// expired counts the sessions that ended otherwise than by Close.
func (f *fleet) expired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, s := range f.all {
		if errors.Is(s.Err(), runtime.ErrSessionExpired) {
			n++
		}
	}
	return n
}

// session returns the client's live session, opening a new one if there is
// none (blocking while its servers do not serve). It returns nil when ctx
// ends first.
func (c *fleetClient) session(ctx context.Context) *runtime.Session {
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur != nil && cur.Err() == nil {
		return cur
	}
	timeout := minorityTimeout
	if c.member < 0 {
		timeout = c.f.anyTimeout
	}
	for ctx.Err() == nil {
		s, err := runtime.Connect(ctx, c.servers, runtime.WithSessionTimeout(timeout), c.drops.option())
		if err != nil {
			continue // ctx's end, or the session ended at once: again
		}
		c.f.mu.Lock()
		c.f.all = append(c.f.all, s)
		c.f.mu.Unlock()
		c.mu.Lock()
		c.cur = s
		c.sessions = append(c.sessions, s)
		c.gen++
		close(c.fresh)
		c.fresh = make(chan struct{})
		c.mu.Unlock()
		return s
	}
	return nil
}

// generation numbers the client's sessions from 1.
func (c *fleetClient) generation() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// disconnects is a log handler that counts a session's lost connections
// (the session logs each one) and passes every record on to the default
// logger.
type disconnects struct {
	n    *atomic.Int64
	next slog.Handler
}

func newDisconnects() disconnects {
	return disconnects{n: new(atomic.Int64), next: slog.Default().Handler()}
}

func (d disconnects) Enabled(ctx context.Context, l slog.Level) bool { return d.next.Enabled(ctx, l) }

func (d disconnects) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "connection lost") {
		d.n.Add(1)
	}
	return d.next.Handle(ctx, r)
}

func (d disconnects) WithAttrs(as []slog.Attr) slog.Handler {
	return disconnects{n: d.n, next: d.next.WithAttrs(as)}
}

func (d disconnects) WithGroup(g string) slog.Handler {
	return disconnects{n: d.n, next: d.next.WithGroup(g)}
}

// count returns how many lost connections were logged.
func (d disconnects) count() int64 { return d.n.Load() }

// option returns the Connect option that logs through d.
func (d disconnects) option() runtime.Option { return runtime.WithLogger(slog.New(d)) }
