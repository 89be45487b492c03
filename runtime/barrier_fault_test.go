package runtime_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// barEnv is one barrier, a faulty client f and plain clients on sessions
// of their own.
type barEnv struct {
	t       *testing.T
	srv     *zktest.Server
	ctx     context.Context
	dir     string
	node    string           // the barrier node, dir/b
	tree    *runtime.Session // no faults: for looking at the nodes
	f       faultyClient
	fb      *runtime.Barrier // f's handle
	lowered atomic.Bool      // set just before the test lowers the barrier
}

func (e *barEnv) plain() *runtime.Barrier {
	return runtime.NewBarrier(connect(e.t, e.srv.Servers()), runtime.At(e.node))
}

// wait runs b.Wait in the background. Wait must not return nil before
// the test lowered the barrier.
func (e *barEnv) wait(who string, b *runtime.Barrier) <-chan error {
	got := make(chan error, 1)
	go func() {
		err := b.Wait(e.ctx)
		if err == nil && !e.lowered.Load() {
			e.t.Errorf("%s passed the barrier before it was lowered", who)
		}
		got <- err
	}()
	return got
}

// passed requires a started Wait to return nil.
func (e *barEnv) passed(who string, got <-chan error) {
	e.t.Helper()
	select {
	case err := <-got:
		if err != nil {
			e.t.Fatalf("%s: Wait: %v", who, err)
		}
	case <-e.ctx.Done():
		e.t.Fatalf("%s: Wait still blocked after Lower", who)
	}
}

// pending fails the test if a started Wait has returned.
func (e *barEnv) pending(who string, got <-chan error) {
	e.t.Helper()
	select {
	case err := <-got:
		e.t.Fatalf("%s: Wait returned (%v) while the barrier is up", who, err)
	default:
	}
}

func (e *barEnv) lower(b *runtime.Barrier) {
	e.t.Helper()
	e.lowered.Store(true)
	if err := b.Lower(e.ctx); err != nil {
		e.t.Fatalf("Lower: %v", err)
	}
}

func (e *barEnv) raise(b *runtime.Barrier) {
	e.t.Helper()
	if err := b.Raise(e.ctx); err != nil {
		e.t.Fatalf("Raise: %v", err)
	}
}

// requireUp checks the barrier node is there, a persistent node written
// once.
func (e *barEnv) requireUp() {
	e.t.Helper()
	_, st, err := e.tree.Conn().Get(e.node)
	if err != nil || st.EphemeralOwner != 0 || st.Version != 0 {
		e.t.Fatalf("barrier node: %+v, %v; want a persistent node, never rewritten", st, err)
	}
}

// The barrier's fault matrix. A client behind a proxy has its connection
// cut right after its Raise's create, its Lower's delete or its Wait's read
// (before the watch is set) reaches the server, or while it waits (with
// the barrier lowered while it is cut off, or after it reconnected); in
// the expiry variants the server expires its session at its create, its
// delete or while it waits. Each time:
//   - nobody passes before the barrier is lowered (a waiter whose session
//     expired returns the error, it does not pass), and every waiter
//     passes once it is, none hangs;
//   - Raise and Lower whose reply was lost are idempotent: they report
//     success, and a repeat is no error;
//   - once lowered, nothing is left under the test's root.
func TestBarrierFaultMatrix(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t) // waitWatchers asks the server who watches
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e *barEnv)
	}{
		{"raise create", func(t *testing.T, e *barEnv) {
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			e.raise(e.fb)
			waitFired(t, e.ctx, fired)
			e.requireUp()
			e.raise(e.fb)
			e.requireUp()
			w := e.wait("w", e.plain())
			waitWatchers(t, srv, e.node, 1)
			e.pending("w", w)
			e.lower(e.plain())
			e.passed("w", w)
		}},
		{"lower delete", func(t *testing.T, e *barEnv) {
			e.raise(e.plain())
			w1, w2 := e.wait("w1", e.plain()), e.wait("w2", e.plain())
			waitWatchers(t, srv, e.node, 2)
			fired := e.f.p.CutAfterRequest(zktest.OpDelete)
			e.lower(e.fb)
			waitFired(t, e.ctx, fired)
			e.passed("w1", w1)
			e.passed("w2", w2)
			e.lower(e.fb)
		}},
		{"wait read", func(t *testing.T, e *barEnv) {
			e.raise(e.plain())
			fired := e.f.p.CutAfterRequest(zktest.OpGetData)
			fw := e.wait("faulty", e.fb)
			waitFired(t, e.ctx, fired)
			w := e.wait("w", e.plain())
			// Both parked on a watch: the faulty one read again after
			// the cut, found the barrier up and stayed.
			waitWatchers(t, srv, e.node, 2)
			e.pending("faulty", fw)
			e.lower(e.plain())
			e.passed("faulty", fw)
			e.passed("w", w)
		}},
		{"cut while waiting", func(t *testing.T, e *barEnv) {
			e.raise(e.plain())
			fw, w := e.wait("faulty", e.fb), e.wait("w", e.plain())
			waitWatchers(t, srv, e.node, 2)
			e.f.p.CutAll()
			waitWatchers(t, srv, e.node, 2)
			e.pending("faulty", fw)
			e.lower(e.plain())
			e.passed("faulty", fw)
			e.passed("w", w)
		}},
		{"lowered while the waiter is cut off", func(t *testing.T, e *barEnv) {
			e.raise(e.plain())
			fw := e.wait("faulty", e.fb)
			waitWatchers(t, srv, e.node, 1)
			e.f.p.Pause(true) // the faulty one cannot reconnect yet
			e.f.p.CutAll()
			e.lower(e.plain())
			e.f.p.Pause(false)
			e.passed("faulty", fw)
		}},
		{"raise create, expiry", func(t *testing.T, e *barEnv) {
			err := e.f.inject(t, e.ctx, srv, zktest.OpCreate, cutThenExpire, nil, func() error { return e.fb.Raise(e.ctx) })
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Raise = %v, want ErrSessionExpired", err)
			}
			// The create took effect, and the node is not ephemeral: the
			// barrier is up.
			e.requireUp()
			w := e.wait("w", e.plain())
			waitWatchers(t, srv, e.node, 1)
			e.pending("w", w)
			e.lower(e.plain())
			e.passed("w", w)
		}},
		{"lower delete, expiry", func(t *testing.T, e *barEnv) {
			e.raise(e.plain())
			w := e.wait("w", e.plain())
			waitWatchers(t, srv, e.node, 1)
			e.lowered.Store(true)
			err := e.f.inject(t, e.ctx, srv, zktest.OpDelete, cutThenExpire, nil, func() error { return e.fb.Lower(e.ctx) })
			if err != nil && !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Lower = %v, want nil or ErrSessionExpired", err)
			}
			e.passed("w", w)
		}},
		{"waiting, expiry", func(t *testing.T, e *barEnv) {
			e.raise(e.plain())
			fw, w := e.wait("faulty", e.fb), e.wait("w", e.plain())
			waitWatchers(t, srv, e.node, 2)
			e.f.expire(t, srv)
			select {
			case err := <-fw:
				if !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("Wait on an expired session = %v, want ErrSessionExpired", err)
				}
			case <-e.ctx.Done():
				t.Fatal("Wait did not return after its session expired")
			}
			e.pending("w", w)
			e.lower(e.plain())
			e.passed("w", w)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testRoot(t)
			e := &barEnv{t: t, srv: srv, ctx: testCtx(t, time.Minute), dir: dir, node: dir + "/b",
				tree: connect(t, srv.Servers())}
			// The parent exists, so a cut Raise does create the node.
			makeDirs(t, e.tree, "/zkgen-test", dir)
			e.f = newFaulty(t, srv)
			e.fb = runtime.NewBarrier(e.f.s, runtime.At(e.node))
			tc.run(t, e)
			e.f.s.Close()
			requireTree(t, e.tree, dir)
		})
	}
}

// dbEnv is one double barrier of size participants: a faulty client f
// and plain participants on sessions of their own.
type dbEnv struct {
	t    *testing.T
	srv  *zktest.Server
	ctx  context.Context
	dir  string
	size int
	tree *runtime.Session // no faults: for looking at the nodes
	f    faultyClient
	fd   *runtime.DoubleBarrier // f's participant
	// began counts the participants that started Enter and whose session
	// lives; leaving those that started Leave (or whose session ended
	// after they entered). Nobody may pass Enter before began reaches
	// size, nor Leave before leaving does.
	began, leaving atomic.Int32
}

func (e *dbEnv) plain() *runtime.DoubleBarrier {
	return runtime.NewDoubleBarrier(connect(e.t, e.srv.Servers()), runtime.At(e.dir), e.size)
}

func (e *dbEnv) enter(who string, d *runtime.DoubleBarrier) <-chan error {
	e.began.Add(1)
	got := make(chan error, 1)
	go func() {
		err := d.Enter(e.ctx)
		if n := e.began.Load(); err == nil && n < int32(e.size) {
			e.t.Errorf("%s passed Enter with %d of %d participants", who, n, e.size)
		}
		got <- err
	}()
	return got
}

func (e *dbEnv) leave(who string, d *runtime.DoubleBarrier) <-chan error {
	e.leaving.Add(1)
	got := make(chan error, 1)
	go func() {
		err := d.Leave(e.ctx)
		if n := e.leaving.Load(); err == nil && n < int32(e.size) {
			e.t.Errorf("%s passed Leave with %d of %d participants gone", who, n, e.size)
		}
		got <- err
	}()
	return got
}

func (e *dbEnv) ready() string { return e.dir + "/ready" }

// done requires a started Enter or Leave to return nil.
func (e *dbEnv) done(who string, got <-chan error) {
	e.t.Helper()
	select {
	case err := <-got:
		if err != nil {
			e.t.Fatalf("%s: %v", who, err)
		}
	case <-e.ctx.Done():
		e.t.Fatalf("%s: still blocked", who)
	}
}

// pending fails the test if a started Enter or Leave has returned.
func (e *dbEnv) pending(who string, got <-chan error) {
	e.t.Helper()
	select {
	case err := <-got:
		e.t.Fatalf("%s returned (%v) before the others", who, err)
	default:
	}
}

// requireOwn checks the faulty session owns exactly one node, d's
// participant node: a create whose reply was lost was found by its GUID,
// not made twice.
func (e *dbEnv) requireOwn() {
	e.t.Helper()
	var own []string
	for _, k := range childrenOf(e.t, e.tree, e.dir) {
		_, st, err := e.tree.Conn().Get(e.dir + "/" + k)
		if err == nil && st.EphemeralOwner == e.f.s.ID() {
			own = append(own, e.dir+"/"+k)
		}
	}
	if len(own) != 1 || own[0] != e.fd.Node() {
		e.t.Fatalf("the faulty session owns %v; want exactly its participant node %q", own, e.fd.Node())
	}
}

// enterFirst has the faulty participant enter, then two plain ones, so its
// node is the lowest; fired (nil: no fault) is the fault armed for its
// Enter.
func (e *dbEnv) enterFirst(fired <-chan struct{}) (a, b *runtime.DoubleBarrier) {
	e.t.Helper()
	fe := e.enter("faulty", e.fd)
	if fired != nil {
		waitFired(e.t, e.ctx, fired)
	}
	waitChildren(e.t, e.ctx, e.tree, e.dir, 1)
	waitWatchers(e.t, e.srv, e.ready(), 1)
	e.pending("faulty", fe)
	a, b = e.plain(), e.plain()
	ae := e.enter("a", a)
	waitChildren(e.t, e.ctx, e.tree, e.dir, 2)
	waitWatchers(e.t, e.srv, e.ready(), 2)
	e.pending("faulty", fe)
	e.pending("a", ae)
	be := e.enter("b", b)
	e.done("faulty", fe)
	e.done("a", ae)
	e.done("b", be)
	return a, b
}

// enterLast has two plain participants enter, then the faulty one, so its
// node is the highest; arm (nil: no fault) arms the faults for its Enter.
func (e *dbEnv) enterLast(arm func() []<-chan struct{}) (a, b *runtime.DoubleBarrier) {
	e.t.Helper()
	a, b = e.plain(), e.plain()
	ae := e.enter("a", a)
	waitChildren(e.t, e.ctx, e.tree, e.dir, 1)
	be := e.enter("b", b)
	waitChildren(e.t, e.ctx, e.tree, e.dir, 2)
	waitWatchers(e.t, e.srv, e.ready(), 2)
	e.pending("a", ae)
	e.pending("b", be)
	var fired []<-chan struct{}
	if arm != nil {
		fired = arm()
	}
	fe := e.enter("faulty", e.fd)
	for _, f := range fired {
		waitFired(e.t, e.ctx, f)
	}
	e.done("faulty", fe)
	e.done("a", ae)
	e.done("b", be)
	return a, b
}

// leaveAll has a and b leave (the faulty one is leaving or has left) and
// waits for everyone.
func (e *dbEnv) leaveAll(fl <-chan error, a, b *runtime.DoubleBarrier) {
	e.t.Helper()
	al := e.leave("a", a)
	bl := e.leave("b", b)
	e.done("faulty", fl)
	e.done("a", al)
	e.done("b", bl)
}

// The double barrier's fault matrix, for 3 participants. A participant
// behind a proxy has its connection cut right after each request of the
// protocol reaches the server — the exists watch on ready, its participant
// create (first or last to arrive), the children read and the ready create
// of the last to arrive, its delete and its watch in Leave, the last
// leaver's deletes — or while it waits in Enter
// or in Leave; in the expiry variants the server expires its session at
// its create in Enter or while it waits in Leave. Each time:
//   - nobody passes Enter before all 3 participants entered, nor Leave
//     before all left (a participant whose session ended counts as
//     neither entered nor there);
//   - a cut create leaves exactly one participant node (GUID recovery);
//   - nobody is blocked by the faulty participant;
//   - once all left, nothing is left in the barrier directory, and nothing
//     under the test's root once every client closed.
func TestDoubleBarrierFaultMatrix(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t) // waitWatchers asks the server who watches
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e *dbEnv)
	}{
		{"ready watch", func(t *testing.T, e *dbEnv) {
			a, b := e.enterFirst(e.f.p.CutAfterRequest(zktest.OpExists))
			e.leaveAll(e.leave("faulty", e.fd), a, b)
		}},
		{"enter create", func(t *testing.T, e *dbEnv) {
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			a, b := e.enterFirst(fired)
			e.requireOwn()
			e.leaveAll(e.leave("faulty", e.fd), a, b)
		}},
		{"enter create, last", func(t *testing.T, e *dbEnv) {
			a, b := e.enterLast(func() []<-chan struct{} {
				return []<-chan struct{}{e.f.p.CutAfterRequest(zktest.OpCreate)}
			})
			e.requireOwn()
			e.leaveAll(e.leave("faulty", e.fd), a, b)
		}},
		{"enter children read, last", func(t *testing.T, e *dbEnv) {
			a, b := e.enterLast(func() []<-chan struct{} {
				return []<-chan struct{}{e.f.p.CutAfterRequest(zktest.OpGetChildren2)}
			})
			e.requireOwn()
			e.leaveAll(e.leave("faulty", e.fd), a, b)
		}},
		{"participant and ready creates", func(t *testing.T, e *dbEnv) {
			a, b := e.enterLast(func() []<-chan struct{} {
				return []<-chan struct{}{e.f.p.CutAfterRequest(zktest.OpCreate), e.f.p.CutAfterRequest(zktest.OpCreate)}
			})
			e.requireOwn()
			e.leaveAll(e.leave("faulty", e.fd), a, b)
		}},
		{"cut while waiting in Enter", func(t *testing.T, e *dbEnv) {
			fe := e.enter("faulty", e.fd)
			waitChildren(t, e.ctx, e.tree, e.dir, 1)
			e.f.p.CutAll()
			a, b := e.plain(), e.plain()
			ae, be := e.enter("a", a), e.enter("b", b)
			e.done("faulty", fe)
			e.done("a", ae)
			e.done("b", be)
			e.requireOwn()
			e.leaveAll(e.leave("faulty", e.fd), a, b)
		}},
		{"leave delete", func(t *testing.T, e *dbEnv) {
			a, b := e.enterLast(nil)
			fired := e.f.p.CutAfterRequest(zktest.OpDelete)
			fl := e.leave("faulty", e.fd)
			waitFired(t, e.ctx, fired)
			waitChildren(t, e.ctx, e.tree, e.dir, 3) // ready, a's and b's nodes
			waitWatchers(t, srv, a.Node(), 1)        // it waits for the lowest
			e.pending("faulty", fl)
			e.leaveAll(fl, a, b)
		}},
		{"leave watch", func(t *testing.T, e *dbEnv) {
			a, b := e.enterLast(nil)
			fired := e.f.p.CutAfterRequest(zktest.OpGetData)
			fl := e.leave("faulty", e.fd)
			waitFired(t, e.ctx, fired)
			waitWatchers(t, srv, a.Node(), 1)
			e.pending("faulty", fl)
			e.leaveAll(fl, a, b)
		}},
		{"cut while waiting in Leave", func(t *testing.T, e *dbEnv) {
			a, b := e.enterFirst(nil) // the faulty node is the lowest
			fl := e.leave("faulty", e.fd)
			waitWatchers(t, srv, b.Node(), 1) // the lowest waits for the highest
			e.f.p.CutAll()
			e.pending("faulty", fl)
			e.leaveAll(fl, a, b)
		}},
		{"last leaver's deletes", func(t *testing.T, e *dbEnv) {
			a, b := e.enterFirst(nil)
			al, bl := e.leave("a", a), e.leave("b", b)
			waitChildren(t, e.ctx, e.tree, e.dir, 2) // ready and the faulty node
			waitWatchers(t, srv, e.fd.Node(), 2)     // a and b wait for the lowest
			e.pending("a", al)
			e.pending("b", bl)
			// Its first two deletes are cut: its node's, then its retry
			// (or ready's, if the retry came first).
			fired := []<-chan struct{}{e.f.p.CutAfterRequest(zktest.OpDelete), e.f.p.CutAfterRequest(zktest.OpDelete)}
			fl := e.leave("faulty", e.fd)
			e.done("faulty", fl)
			e.done("a", al)
			e.done("b", bl)
			for _, f := range fired {
				waitFired(t, e.ctx, f)
			}
		}},
		{"enter create, expiry", func(t *testing.T, e *dbEnv) {
			e.began.Add(1)
			err := e.f.inject(t, e.ctx, srv, zktest.OpCreate, cutThenExpire, nil, func() error { return e.fd.Enter(e.ctx) })
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Enter = %v, want ErrSessionExpired", err)
			}
			e.began.Add(-1) // its node went with its session
			a, b, c := e.plain(), e.plain(), e.plain()
			ae := e.enter("a", a)
			waitChildren(t, e.ctx, e.tree, e.dir, 1)
			be := e.enter("b", b)
			waitChildren(t, e.ctx, e.tree, e.dir, 2)
			waitWatchers(t, srv, e.ready(), 2)
			e.pending("a", ae)
			e.pending("b", be)
			ce := e.enter("c", c)
			e.done("a", ae)
			e.done("b", be)
			e.done("c", ce)
			al, bl, cl := e.leave("a", a), e.leave("b", b), e.leave("c", c)
			e.done("a", al)
			e.done("b", bl)
			e.done("c", cl)
		}},
		{"waiting in Leave, expiry", func(t *testing.T, e *dbEnv) {
			a, b := e.enterFirst(nil) // the faulty node is the lowest
			fl := e.leave("faulty", e.fd)
			waitWatchers(t, srv, b.Node(), 1)
			e.f.expire(t, srv)
			select {
			case err := <-fl:
				if !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("Leave on an expired session = %v, want ErrSessionExpired", err)
				}
			case <-e.ctx.Done():
				t.Fatal("Leave did not return after its session expired")
			}
			// The others are not blocked by the gone participant.
			al, bl := e.leave("a", a), e.leave("b", b)
			e.done("a", al)
			e.done("b", bl)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &dbEnv{t: t, srv: srv, ctx: testCtx(t, time.Minute), dir: testRoot(t), size: 3,
				tree: connect(t, srv.Servers())}
			makeDirs(t, e.tree, "/zkgen-test", e.dir)
			e.f = newFaulty(t, srv)
			e.fd = runtime.NewDoubleBarrier(e.f.s, runtime.At(e.dir), e.size)
			tc.run(t, e)
			if kids := childrenOf(t, e.tree, e.dir); len(kids) != 0 {
				t.Fatalf("left in the barrier once all left: %v", kids)
			}
			e.f.s.Close()
			requireTree(t, e.tree, e.dir)
		})
	}
}
