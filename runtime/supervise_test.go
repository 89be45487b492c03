package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// superviseTimeout is the session timeout of the supervised sessions: short,
// so that expiries come quickly.
const superviseTimeout = 2 * time.Second

// supervised runs runtime.Supervise on its own goroutine; its events come on
// a channel, and stop cancels it and returns Supervise's result.
type supervised struct {
	events chan runtime.SessionEvent
	cancel context.CancelFunc
	ret    chan error
}

func supervise(t *testing.T, ctx context.Context, servers []string, fn func(context.Context, *runtime.Session) error) *supervised {
	return superviseWith(t, ctx, servers, fn, runtime.WithSessionTimeout(superviseTimeout))
}

// superviseWith is supervise with opts instead of its session timeout.
func superviseWith(t *testing.T, ctx context.Context, servers []string, fn func(context.Context, *runtime.Session) error, opts ...runtime.Option) *supervised {
	ctx, cancel := context.WithCancel(ctx)
	sv := &supervised{events: make(chan runtime.SessionEvent, 16), cancel: cancel, ret: make(chan error, 1)}
	opts = append(opts, runtime.WithLogger(slog.New(slog.DiscardHandler)),
		runtime.WithSessionEvents(func(ev runtime.SessionEvent) { sv.events <- ev }))
	go func() { sv.ret <- runtime.Supervise(ctx, servers, fn, opts...) }()
	t.Cleanup(func() { cancel(); <-sv.ret })
	return sv
}

// next waits for the next session event.
func (sv *supervised) next(t *testing.T, ctx context.Context) runtime.SessionEvent {
	t.Helper()
	select {
	case ev := <-sv.events:
		return ev
	case <-ctx.Done():
		t.Fatal("no new session")
	}
	return runtime.SessionEvent{}
}

func (sv *supervised) stop(t *testing.T, ctx context.Context) error {
	t.Helper()
	sv.cancel()
	select {
	case err := <-sv.ret:
		sv.ret <- err // for the cleanup
		return err
	case <-ctx.Done():
		t.Fatal("Supervise did not return after its ctx ended")
	}
	return nil
}

// expireVia makes the server expire session id, whose client is behind p;
// the proxy holds the client's reconnection meanwhile.
func expireVia(t *testing.T, srv *zktest.Server, p *zktest.Proxy, id int64) {
	t.Helper()
	p.Pause(true)
	defer p.Pause(false)
	creds, ok := p.Session(id)
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
}

// A leader under Supervise + Election.Run is cut off from ZooKeeper: its
// work's context ends before the other candidate's work starts (checked
// causally: when a leader's fn starts, every other leader's context has
// ended), and once it can reach ZooKeeper again it campaigns on a new
// session and leads when the other steps down.
func TestSuperviseElectionRun(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	var mu sync.Mutex
	var live []context.Context // contexts of leaders' fns, in start order
	started := make(chan string, 16)
	leader := func(who string) func(context.Context, *runtime.Session) error {
		return func(ctx context.Context, s *runtime.Session) error {
			e := runtime.NewElection(s, runtime.At(dir), runtime.StringCodec())
			return e.Run(ctx, who, func(lctx context.Context, l *runtime.Leadership[string]) error {
				mu.Lock()
				for i, o := range live {
					if o.Err() == nil {
						t.Errorf("%s leads (epoch %d) while leader #%d's work still runs", who, l.Epoch(), i)
					}
				}
				live = append(live, lctx)
				mu.Unlock()
				started <- who
				<-lctx.Done()
				return nil
			})
		}
	}
	pa := zktest.NewProxy(t, srv.Addr())
	a := supervise(t, ctx, viaProxy(pa), leader("a"))
	a.next(t, ctx)
	if who := <-started; who != "a" {
		t.Fatalf("first leader %s", who)
	}
	b := supervise(t, ctx, srv.Servers(), leader("b"))
	b.next(t, ctx)

	pa.Blackhole(true) // a gives its session up, then the server expires it
	if who := <-started; who != "b" {
		t.Fatalf("after a was cut off, %s leads", who)
	}
	pa.Blackhole(false)
	ev := a.next(t, ctx)
	if ev.Generation != 2 || !errors.Is(ev.PrevErr, runtime.ErrSessionExpired) {
		t.Fatalf("a's second session: %+v", ev)
	}
	if err := b.stop(t, ctx); err != nil {
		t.Fatalf("b's Supervise = %v", err)
	}
	if who := <-started; who != "a" {
		t.Fatalf("after b stopped, %s leads", who)
	}
	if err := a.stop(t, ctx); err != nil {
		t.Fatalf("a's Supervise = %v", err)
	}
	admin := connect(t, srv.Servers())
	if st, err := runtime.NewElection(admin, runtime.At(dir), runtime.StringCodec()).State(ctx); err != nil || st.Elected {
		t.Fatalf("after both stopped: %+v, %v", st, err)
	}
}

// A worker under Supervise holds a lock and stays in a group; the server
// expires its session behind its back. Before the work's context ends the
// lock has reported Lost; the work never runs twice at once; a new session
// runs it again, and the member is back. A member node reaped by an
// operator is joined again on the same session.
func TestSuperviseExpiryStayAndLost(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	admin := connect(t, srv.Servers())
	group := runtime.NewGroup(admin, runtime.At(dir+"/group"), runtime.StringCodec())
	var running atomic.Int32
	var runs atomic.Int32
	p := zktest.NewProxy(t, srv.Addr())
	w := supervise(t, ctx, viaProxy(p), func(ctx context.Context, s *runtime.Session) error {
		if running.Add(1) != 1 {
			t.Error("fn runs twice at once")
		}
		defer running.Add(-1)
		runs.Add(1)
		// Several tenures, each told by its own goroutine.
		var locks []*runtime.Lock
		for i := range 8 {
			l := runtime.NewLock(s, runtime.At(fmt.Sprintf("%s/lock/%d", dir, i)))
			if err := l.Lock(ctx); err != nil {
				return err
			}
			locks = append(locks, l)
		}
		stay := make(chan error, 1)
		go func() { stay <- runtime.NewGroup(s, runtime.At(dir+"/group"), runtime.StringCodec()).Stay(ctx, "w") }()
		<-ctx.Done()
		for i, l := range locks {
			select {
			case <-l.Lost():
			default:
				if s.Err() != nil {
					t.Errorf("the work's context ended before lock %d reported Lost", i)
				}
			}
		}
		if err := <-stay; s.Err() != nil && !errors.Is(err, runtime.ErrSessionExpired) {
			t.Errorf("Stay on an expired session = %v", err)
		}
		return context.Cause(ctx)
	})
	ev := w.next(t, ctx)
	members := group.Watch(ctx)
	waitMembers := func(want ...string) {
		t.Helper()
		for {
			select {
			case ms := <-members:
				if slices.Equal(ms.Members, want) {
					return
				}
			case <-ctx.Done():
				t.Fatalf("members never became %v", want)
			}
		}
	}
	waitMembers("w")

	// An operator reaps the member node: Stay joins again.
	nodes := childrenOf(t, admin, dir+"/group")
	if err := admin.Conn().Delete(dir+"/group/"+nodes[0], -1); err != nil {
		t.Fatal(err)
	}
	for {
		kids := waitChildren(t, ctx, admin, dir+"/group", 1)
		if kids[0] != nodes[0] {
			break
		}
	}

	// The server expires the session behind the client's back.
	expireVia(t, srv, p, ev.ID)
	ev2 := w.next(t, ctx)
	if ev2.Generation != 2 || ev2.PrevID != ev.ID || !errors.Is(ev2.PrevErr, runtime.ErrSessionExpired) {
		t.Fatalf("second session: %+v (first 0x%x)", ev2, ev.ID)
	}
	waitMembers("w")
	if err := w.stop(t, ctx); err != nil {
		t.Fatalf("Supervise = %v", err)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("fn ran %d times, want 2", n)
	}
	if ms, err := group.Members(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("after Supervise returned: members %v, %v", ms, err)
	}
	for i := range 8 {
		if kids := childrenOf(t, admin, fmt.Sprintf("%s/lock/%d", dir, i)); len(kids) != 0 {
			t.Fatalf("lock nodes left: %v", kids)
		}
	}
}

// A consumer under Supervise + Consume whose session expires in the middle
// of an item: the item is delivered again on the new session, every item is
// consumed, an item is consumed twice only when its first run was on the
// expired session (its ack was lost with the session: at-least-once), and
// nothing is left.
func TestSuperviseConsumeExpiry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	admin := connect(t, srv.Servers())
	const n = 20
	prod := runtime.NewAckQueue(admin, runtime.At(dir), runtime.StringCodec())
	for i := range n {
		if err := prod.Put(ctx, fmt.Sprintf("item-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	done := map[string][]int64{} // sessions on which fn returned nil for the item
	stuck := make(chan struct{})
	var once sync.Once
	allDone := make(chan struct{})
	p := zktest.NewProxy(t, srv.Addr())
	c := supervise(t, ctx, viaProxy(p), func(ctx context.Context, s *runtime.Session) error {
		q := runtime.NewAckQueue(s, runtime.At(dir), runtime.StringCodec())
		return q.Consume(ctx, func(ctx context.Context, item string) error {
			if item == "item-05" {
				first := false
				once.Do(func() { first = true })
				if first {
					close(stuck)
					<-ctx.Done() // the session ends under it
					return ctx.Err()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			done[item] = append(done[item], s.ID())
			if len(done) == n && s.Err() == nil {
				select {
				case <-allDone:
				default:
					close(allDone)
				}
			}
			return nil
		}, runtime.WithConcurrency(2))
	})
	ev := c.next(t, ctx)
	<-stuck
	expireVia(t, srv, p, ev.ID)
	if ev2 := c.next(t, ctx); ev2.Generation != 2 {
		t.Fatalf("second session: %+v", ev2)
	}
	select {
	case <-allDone:
	case <-ctx.Done():
		t.Fatalf("not every item was consumed: %v", done)
	}
	if err := c.stop(t, ctx); err != nil {
		t.Fatalf("Supervise = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for item, ss := range done {
		for _, id := range ss[:len(ss)-1] {
			if id != ev.ID {
				t.Errorf("%s consumed again after a run on live session 0x%x (runs on %x)", item, id, ss)
			}
		}
	}
	if len(done["item-05"]) != 1 || done["item-05"][0] == ev.ID {
		t.Errorf("item-05, interrupted by the expiry, consumed on sessions %x; want once, on the new session", done["item-05"])
	}
	if l, err := prod.Len(ctx); err != nil || l != 0 {
		t.Fatalf("Len = %d, %v after every item was consumed", l, err)
	}
}

// With ZooKeeper down, Supervise keeps trying and starts once it is up;
// cancelling its ctx returns and leaves no node behind.
func TestSuperviseServerDownAtStart(t *testing.T) {
	srv := zktest.Start(t)
	srv.RequireLocal(t)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	joined := make(chan struct{}, 4)
	sv := supervise(t, ctx, srv.Servers(), func(ctx context.Context, s *runtime.Session) error {
		g := runtime.NewGroup(s, runtime.At(dir), runtime.StringCodec())
		m, err := g.Join(ctx, "w")
		if err != nil {
			return err
		}
		joined <- struct{}{}
		<-ctx.Done()
		_ = m
		return nil
	})
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	if ev := sv.next(t, ctx); ev.Generation != 1 {
		t.Fatalf("first session: %+v", ev)
	}
	<-joined
	if err := sv.stop(t, ctx); err != nil {
		t.Fatalf("Supervise = %v", err)
	}
	admin := connect(t, srv.Servers())
	if ms, err := runtime.NewGroup(admin, runtime.At(dir), runtime.StringCodec()).Members(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("after Supervise returned: members %v, %v", ms, err)
	}
}
