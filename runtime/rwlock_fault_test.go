package runtime_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// rwLedger is the test's view of who holds a read/write lock. A holder
// counts from Lock's return until the test gives the lock up (just before
// Unlock, or before it forces the session's expiry) or until its Lost
// fires. A new writer must find nobody counting, a new reader no writer:
// so a writer is never inside with anyone, and a holder cut off from the
// server has been told (Lost) before a conflicting holder gets the lock.
type rwLedger struct {
	t    *testing.T
	mu   sync.Mutex
	live map[runtime.LockHandle]rwHolder
}

type rwHolder struct {
	who   string
	write bool
}

func (l *rwLedger) acquired(h runtime.LockHandle, me rwHolder) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var conflicts []string
	for o, other := range l.live {
		select {
		case <-o.Lost():
			delete(l.live, o)
			continue
		default:
		}
		if me.write || other.write {
			conflicts = append(conflicts, other.who)
		}
	}
	if len(conflicts) > 0 {
		slices.Sort(conflicts)
		l.t.Errorf("%s (writer: %v) got the lock while %v hold it", me.who, me.write, conflicts)
	}
	l.live[h] = me
}

func (l *rwLedger) drop(h runtime.LockHandle) {
	l.mu.Lock()
	delete(l.live, h)
	l.mu.Unlock()
}

// rwEnv is one read/write lock, a faulty client f and plain contenders on
// sessions of their own.
type rwEnv struct {
	t        *testing.T
	srv      *zktest.Server
	ctx      context.Context
	dir      string
	tree     *runtime.Session // no faults: for looking at the nodes
	ledger   *rwLedger
	f        faultyClient
	sessions []*runtime.Session
	held     []runtime.LockHandle // held locks the test has not unlocked
	who      map[runtime.LockHandle]rwHolder
}

// contender returns a new contender on s (a fresh plain session if nil).
func (e *rwEnv) contender(s *runtime.Session, who string, write bool) runtime.LockHandle {
	if s == nil {
		s = connect(e.t, e.srv.Servers())
		e.sessions = append(e.sessions, s)
	}
	rw := runtime.NewRWLock(s, runtime.At(e.dir))
	h := rw.Read()
	if write {
		h = rw.Write()
	}
	e.who[h] = rwHolder{who, write}
	return h
}

func (e *rwEnv) reader(who string) runtime.LockHandle { return e.contender(nil, who, false) }
func (e *rwEnv) writer(who string) runtime.LockHandle { return e.contender(nil, who, true) }

// start runs h.Lock in the background; the holder is entered in the
// ledger as soon as Lock returns.
func (e *rwEnv) start(h runtime.LockHandle) <-chan error {
	got := make(chan error, 1)
	me := e.who[h]
	go func() {
		err := h.Lock(e.ctx)
		if err == nil {
			e.ledger.acquired(h, me)
		}
		got <- err
	}()
	return got
}

// locked waits for a started Lock, which must succeed.
func (e *rwEnv) locked(h runtime.LockHandle, got <-chan error) {
	e.t.Helper()
	select {
	case err := <-got:
		if err != nil {
			e.t.Fatalf("%s: Lock: %v", e.who[h].who, err)
		}
		e.held = append(e.held, h)
	case <-e.ctx.Done():
		e.t.Fatalf("%s: Lock never returned", e.who[h].who)
	}
}

func (e *rwEnv) lock(h runtime.LockHandle) runtime.LockHandle {
	e.t.Helper()
	e.locked(h, e.start(h))
	return h
}

// parked waits until n contenders watch the nodes that block them: the
// server holds their data watches.
func (e *rwEnv) parked(n int) {
	e.t.Helper()
	waitWatchersUnder(e.t, e.srv, e.dir, n)
}

// pending fails the test if a started Lock has returned.
func (e *rwEnv) pending(h runtime.LockHandle, got <-chan error) {
	e.t.Helper()
	select {
	case err := <-got:
		e.t.Fatalf("%s: Lock returned (%v) while a conflicting holder holds", e.who[h].who, err)
	default:
	}
}

// unlock releases h; it stops counting first.
func (e *rwEnv) unlock(h runtime.LockHandle) {
	e.t.Helper()
	e.forget(h)
	if err := h.Unlock(e.ctx); err != nil {
		e.t.Fatalf("%s: Unlock: %v", e.who[h].who, err)
	}
}

// forget stops counting h and leaves it out of the final unlocking.
func (e *rwEnv) forget(h runtime.LockHandle) {
	e.ledger.drop(h)
	e.held = slices.DeleteFunc(e.held, func(x runtime.LockHandle) bool { return x == h })
}

// requireOwn checks the faulty session owns exactly one node of the lock:
// a create whose reply was lost was found by its GUID, not made twice.
func (e *rwEnv) requireOwn() {
	e.t.Helper()
	var own []string
	for _, k := range childrenOf(e.t, e.tree, e.dir) {
		_, st, err := e.tree.Conn().Get(e.dir + "/" + k)
		if err == nil && st.EphemeralOwner == e.f.s.ID() {
			own = append(own, k)
		}
	}
	if len(own) != 1 {
		e.t.Fatalf("the faulty session owns %v; want exactly one lock node", own)
	}
}

// The read/write lock's fault matrix. A reader or writer behind a proxy
// has its connection cut right after each request of the protocol reaches
// the server — its create (alone, beside a reader, behind a writer, behind
// readers), its children read, the watch on the node that blocks it, its
// release — or while it waits; in the expiry variants the server expires
// its session at its create, while it waits or while it holds, and in one
// a writer is cut off until its session expires. Each time:
//   - a writer is never inside with anyone, readers share (a reader gets
//     the lock while another reader holds it), and a holder cut off is
//     told (Lost) before a conflicting holder gets the lock (rwLedger);
//   - a contender whose create was cut owns exactly one node (GUID
//     recovery) and gets the lock once nothing blocks it;
//   - one whose session expired gets nothing and blocks nobody;
//   - once every lock is released the directory is empty, and nothing is
//     left under the test's root once every client closed.
func TestRWLockFaultMatrix(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t) // parked asks the server who watches
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e *rwEnv)
	}{
		{"reader create beside a reader", func(t *testing.T, e *rwEnv) {
			e.lock(e.reader("r1"))
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			e.lock(e.contender(e.f.s, "faulty reader", false)) // shares with r1
			waitFired(t, e.ctx, fired)
			e.requireOwn()
		}},
		{"writer create", func(t *testing.T, e *rwEnv) {
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			e.lock(e.contender(e.f.s, "faulty writer", true))
			waitFired(t, e.ctx, fired)
			e.requireOwn()
		}},
		{"reader create behind a writer", func(t *testing.T, e *rwEnv) {
			w := e.lock(e.writer("w"))
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			f := e.contender(e.f.s, "faulty reader", false)
			got := e.start(f)
			waitFired(t, e.ctx, fired)
			waitChildren(t, e.ctx, e.tree, e.dir, 2)
			e.parked(1)
			e.pending(f, got)
			e.unlock(w)
			e.locked(f, got)
			e.requireOwn()
		}},
		{"writer create behind readers", func(t *testing.T, e *rwEnv) {
			r1, r2 := e.lock(e.reader("r1")), e.lock(e.reader("r2"))
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			f := e.contender(e.f.s, "faulty writer", true)
			got := e.start(f)
			waitFired(t, e.ctx, fired)
			waitChildren(t, e.ctx, e.tree, e.dir, 3)
			e.parked(1)
			e.pending(f, got)
			e.unlock(r1)
			e.unlock(r2)
			e.locked(f, got)
			e.requireOwn()
		}},
		{"children read", func(t *testing.T, e *rwEnv) {
			w := e.lock(e.writer("w"))
			fired := e.f.p.CutAfterRequest(zktest.OpGetChildren2)
			f := e.contender(e.f.s, "faulty reader", false)
			got := e.start(f)
			waitFired(t, e.ctx, fired)
			e.parked(1)
			e.pending(f, got)
			e.unlock(w)
			e.locked(f, got)
			e.requireOwn()
		}},
		{"blocker watch", func(t *testing.T, e *rwEnv) {
			r := e.lock(e.reader("r"))
			fired := e.f.p.CutAfterRequest(zktest.OpGetData)
			f := e.contender(e.f.s, "faulty writer", true)
			got := e.start(f)
			waitFired(t, e.ctx, fired)
			e.parked(1)
			e.pending(f, got)
			e.unlock(r)
			e.locked(f, got)
			e.requireOwn()
		}},
		{"cut while waiting", func(t *testing.T, e *rwEnv) {
			w := e.lock(e.writer("w"))
			f := e.contender(e.f.s, "faulty writer", true)
			got := e.start(f)
			waitChildren(t, e.ctx, e.tree, e.dir, 2)
			e.f.p.CutAll()
			e.pending(f, got)
			// A reader queues behind the waiting writer.
			r := e.reader("r")
			rgot := e.start(r)
			waitChildren(t, e.ctx, e.tree, e.dir, 3)
			e.parked(2)
			e.pending(f, got)
			e.unlock(w)
			e.locked(f, got)
			e.pending(r, rgot)
			e.unlock(f)
			e.locked(r, rgot)
		}},
		{"release delete", func(t *testing.T, e *rwEnv) {
			f := e.lock(e.contender(e.f.s, "faulty writer", true))
			r1, r2 := e.reader("r1"), e.reader("r2")
			got1, got2 := e.start(r1), e.start(r2)
			waitChildren(t, e.ctx, e.tree, e.dir, 3)
			e.parked(2)
			fired := e.f.p.CutAfterRequest(zktest.OpDelete)
			e.unlock(f)
			waitFired(t, e.ctx, fired)
			e.locked(r1, got1) // readers share
			e.locked(r2, got2)
			if err := f.Unlock(e.ctx); !errors.Is(err, runtime.ErrNotHeld) {
				t.Fatalf("Unlock again = %v, want ErrNotHeld", err)
			}
		}},
		{"reader create, expiry", func(t *testing.T, e *rwEnv) {
			w := e.lock(e.writer("w"))
			f := e.contender(e.f.s, "faulty reader", false)
			err := e.f.inject(t, e.ctx, srv, zktest.OpCreate, cutThenExpire, nil, func() error { return f.Lock(e.ctx) })
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Lock = %v, want ErrSessionExpired", err)
			}
			e.unlock(w)
			e.lock(e.writer("w2"))
		}},
		{"waiting writer, expiry", func(t *testing.T, e *rwEnv) {
			e.lock(e.reader("r1"))
			f := e.contender(e.f.s, "faulty writer", true)
			got := e.start(f)
			waitChildren(t, e.ctx, e.tree, e.dir, 2)
			// A reader queues behind the waiting writer ...
			r2 := e.reader("r2")
			rgot := e.start(r2)
			waitChildren(t, e.ctx, e.tree, e.dir, 3)
			e.parked(2)
			e.pending(r2, rgot)
			e.f.expire(t, srv)
			if err := <-got; !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Lock = %v, want ErrSessionExpired", err)
			}
			// ... and joins r1 once the writer's session is gone.
			e.locked(r2, rgot)
		}},
		{"writer holder expiry", func(t *testing.T, e *rwEnv) {
			f := e.lock(e.contender(e.f.s, "faulty writer", true))
			r1, r2 := e.reader("r1"), e.reader("r2")
			got1, got2 := e.start(r1), e.start(r2)
			waitChildren(t, e.ctx, e.tree, e.dir, 3)
			e.parked(2)
			lost := f.Lost()
			// The server ends the session behind the client's back: the
			// client cannot know first, so it stops counting now.
			e.forget(f)
			e.f.expire(t, srv)
			select {
			case <-lost:
			case <-e.ctx.Done():
				t.Fatal("Lost did not fire after the session expired")
			}
			e.locked(r1, got1)
			e.locked(r2, got2)
			if err := f.Unlock(e.ctx); !errors.Is(err, runtime.ErrLockLost) {
				t.Fatalf("Unlock after expiry = %v, want ErrLockLost", err)
			}
		}},
		{"writer cut off", func(t *testing.T, e *rwEnv) {
			// A writer on a short session is black-holed: the server
			// expires its session and a reader gets the lock. The ledger
			// requires the writer's Lost to have fired by then.
			p := zktest.NewProxy(t, srv.Addr())
			s := connect(t, viaProxy(p), runtime.WithSessionTimeout(2*time.Second))
			e.sessions = append(e.sessions, s)
			f := e.lock(e.contender(s, "cut-off writer", true))
			r := e.reader("r")
			got := e.start(r)
			waitChildren(t, e.ctx, e.tree, e.dir, 2)
			e.parked(1)
			p.Blackhole(true)
			e.locked(r, got)
			p.Blackhole(false)
			e.forget(f)
			if err := f.Unlock(e.ctx); !errors.Is(err, runtime.ErrLockLost) {
				t.Fatalf("Unlock after the session expired = %v, want ErrLockLost", err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &rwEnv{t: t, srv: srv, ctx: testCtx(t, time.Minute), dir: testRoot(t),
				tree: connect(t, srv.Servers()), who: map[runtime.LockHandle]rwHolder{}}
			e.ledger = &rwLedger{t: t, live: map[runtime.LockHandle]rwHolder{}}
			// The directory exists, so a cut create does create a node.
			makeDirs(t, e.tree, "/zkgen-test", e.dir)
			e.f = newFaulty(t, srv)
			e.sessions = append(e.sessions, e.f.s)
			tc.run(t, e)
			for _, h := range slices.Clone(e.held) {
				e.unlock(h)
			}
			if kids := childrenOf(t, e.tree, e.dir); len(kids) != 0 {
				t.Fatalf("left with every lock released: %v", kids)
			}
			if err := e.f.s.Err(); err != nil && !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("faulty session: %v", err)
			}
			for _, s := range e.sessions {
				s.Close()
			}
			requireTree(t, e.tree, e.dir)
		})
	}
}
