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

// leaseLedger is the test's view of who holds a lease. A lease counts from
// Acquire's return until the test gives it up (just before Release, or
// before it forces the session's expiry) or until its Lost fires. A new
// holder must find fewer than n others counting: so never more than n
// holders at once, and a holder cut off from the server must have been
// told (Lost) before anyone else gets its lease.
type leaseLedger struct {
	t    *testing.T
	n    int
	mu   sync.Mutex
	live map[*runtime.Lease]string
}

func (l *leaseLedger) acquired(who string, le *runtime.Lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var others []string
	for o, name := range l.live {
		select {
		case <-o.Lost():
			delete(l.live, o)
		default:
			others = append(others, name)
		}
	}
	if len(others) >= l.n {
		slices.Sort(others)
		l.t.Errorf("%s got a lease while %v hold all %d (none was told Lost)", who, others, l.n)
	}
	l.live[le] = who
}

func (l *leaseLedger) drop(le *runtime.Lease) {
	l.mu.Lock()
	delete(l.live, le)
	l.mu.Unlock()
}

// semEnv is one semaphore of n leases, a faulty participant f and plain
// participants on sessions of their own.
type semEnv struct {
	t        *testing.T
	srv      *zktest.Server
	ctx      context.Context
	dir      string
	n        int
	tree     *runtime.Session // no faults: for looking at the nodes
	ledger   *leaseLedger
	f        faultyClient
	fm       *runtime.Semaphore // f's handle
	sessions []*runtime.Session // every participant's
	held     []*runtime.Lease   // leases the test has not released
}

type leaseResult struct {
	le  *runtime.Lease
	err error
}

// plain returns a participant on a fresh session without faults.
func (e *semEnv) plain() *runtime.Semaphore {
	s := connect(e.t, e.srv.Servers())
	e.sessions = append(e.sessions, s)
	return runtime.NewSemaphore(s, runtime.At(e.dir), e.n)
}

// start runs m.Acquire in the background; a lease is entered in the ledger
// as soon as Acquire returns it.
func (e *semEnv) start(who string, m *runtime.Semaphore) <-chan leaseResult {
	got := make(chan leaseResult, 1)
	go func() {
		le, err := m.Acquire(e.ctx)
		if err == nil {
			e.ledger.acquired(who, le)
		}
		got <- leaseResult{le, err}
	}()
	return got
}

// lease waits for a started Acquire, which must succeed.
func (e *semEnv) lease(who string, got <-chan leaseResult) *runtime.Lease {
	e.t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			e.t.Fatalf("%s: Acquire: %v", who, r.err)
		}
		e.held = append(e.held, r.le)
		return r.le
	case <-e.ctx.Done():
		e.t.Fatalf("%s: Acquire never returned", who)
		return nil
	}
}

func (e *semEnv) acquire(who string, m *runtime.Semaphore) *runtime.Lease {
	e.t.Helper()
	return e.lease(who, e.start(who, m))
}

// pending fails the test if a started Acquire has returned.
func (e *semEnv) pending(who string, got <-chan leaseResult) {
	e.t.Helper()
	select {
	case r := <-got:
		e.t.Fatalf("%s: Acquire returned (%v) while all %d leases are held", who, r.err, e.n)
	default:
	}
}

// release gives le back; it stops counting first.
func (e *semEnv) release(le *runtime.Lease) {
	e.t.Helper()
	e.ledger.drop(le)
	e.held = slices.DeleteFunc(e.held, func(x *runtime.Lease) bool { return x == le })
	if err := le.Release(e.ctx); err != nil {
		e.t.Fatalf("Release %s: %v", le.Node(), err)
	}
}

func (e *semEnv) leases() string { return e.dir + "/leases" }
func (e *semEnv) locks() string  { return e.dir + "/locks" }

// requireOwn checks that the faulty session owns exactly one node under the
// semaphore, le's lease node: a create whose reply was lost was found by
// its GUID, not made twice, and the internal lock's node is gone.
func (e *semEnv) requireOwn(le *runtime.Lease) {
	e.t.Helper()
	var own []string
	for _, d := range []string{e.leases(), e.locks()} {
		for _, k := range childrenOf(e.t, e.tree, d) {
			_, st, err := e.tree.Conn().Get(d + "/" + k)
			if err == nil && st.EphemeralOwner == e.f.s.ID() {
				own = append(own, d+"/"+k)
			}
		}
	}
	if len(own) != 1 || own[0] != le.Node() {
		e.t.Fatalf("the faulty session owns %v; want exactly its lease node %s", own, le.Node())
	}
}

// expired checks that a started Acquire of the faulty participant ended
// with its session.
func (e *semEnv) expired(got <-chan leaseResult) {
	e.t.Helper()
	var r leaseResult
	select {
	case r = <-got:
	case <-e.ctx.Done():
		e.t.Fatal("Acquire did not return after the session expired")
	}
	if !errors.Is(r.err, runtime.ErrSessionExpired) {
		e.t.Fatalf("Acquire on an expired session = %v, %v; want ErrSessionExpired", r.le, r.err)
	}
}

func waitFired(t *testing.T, ctx context.Context, fired <-chan struct{}) {
	t.Helper()
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatal("the fault never fired")
	}
}

// The semaphore's fault matrix, for a semaphore of 2 leases. A participant
// behind a proxy has its connection cut right after each request of the
// protocol reaches the server — the internal lock's create, its
// predecessor watch, the lease create, the lease directory's read and
// watch, the internal lock's delete, the lease's delete — or while it waits
// for the internal lock or for a lease; in the expiry variants the server
// expires its session at such a step or while it holds a lease, and in one
// a holder is cut off until its session expires. Each time:
//   - never more than 2 holders at once, and a holder whose session cannot
//     be kept is told (Lost) before another gets its lease (leaseLedger);
//   - a participant whose create was cut ends up owning exactly one node,
//     its lease (GUID recovery), and gets its lease once one is free;
//   - one whose session expired gets no lease, and blocks nobody;
//   - once all leases are released nothing is left in the lease and lock
//     directories, and once every client closed only those directories.
func TestSemaphoreFaultMatrix(t *testing.T) {
	srv := server(t)
	const n = 2
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, e *semEnv)
	}{
		{"lock create", func(t *testing.T, e *semEnv) {
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			le := e.acquire("faulty", e.fm)
			waitFired(t, e.ctx, fired)
			e.requireOwn(le)
			e.release(le)
		}},
		{"lock create while contended", func(t *testing.T, e *semEnv) {
			h1, _ := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			got := e.start("faulty", e.fm)
			waitFired(t, e.ctx, fired)
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.pending("faulty", got)
			e.release(h1)
			e.requireOwn(e.lease("faulty", got))
		}},
		{"lock predecessor watch", func(t *testing.T, e *semEnv) {
			h1, h2 := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1) // w holds the internal lock
			fired := e.f.p.CutAfterRequest(zktest.OpGetData)
			got := e.start("faulty", e.fm)
			waitFired(t, e.ctx, fired)
			e.release(h1)
			e.lease("w", w)
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.pending("faulty", got)
			e.release(h2)
			e.requireOwn(e.lease("faulty", got))
		}},
		{"lease create", func(t *testing.T, e *semEnv) {
			h1, h2 := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			got := e.start("faulty", e.fm)
			waitChildren(t, e.ctx, e.tree, e.locks(), 2) // faulty waits behind w
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			e.release(h1)
			e.lease("w", w)
			waitFired(t, e.ctx, fired) // the faulty one's lease create
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.pending("faulty", got)
			e.release(h2)
			e.requireOwn(e.lease("faulty", got))
		}},
		{"lease directory read", func(t *testing.T, e *semEnv) {
			h1, _ := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			got := e.start("faulty", e.fm)
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			// The next children read of the waiting participant is cut:
			// its first read of the lease directory, or the one after
			// its watch fired.
			fired := e.f.p.CutAfterRequest(zktest.OpGetChildren2)
			e.release(h1)
			waitFired(t, e.ctx, fired)
			e.requireOwn(e.lease("faulty", got))
		}},
		{"cut while waiting for a lease", func(t *testing.T, e *semEnv) {
			h1, _ := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			got := e.start("faulty", e.fm)
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.f.p.CutAll()
			e.pending("faulty", got)
			e.release(h1)
			e.requireOwn(e.lease("faulty", got))
		}},
		{"cut while waiting for the internal lock", func(t *testing.T, e *semEnv) {
			h1, h2 := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			got := e.start("faulty", e.fm)
			waitChildren(t, e.ctx, e.tree, e.locks(), 2)
			e.f.p.CutAll()
			e.release(h1)
			e.lease("w", w)
			e.pending("faulty", got)
			e.release(h2)
			e.requireOwn(e.lease("faulty", got))
		}},
		{"internal lock delete", func(t *testing.T, e *semEnv) {
			fired := e.f.p.CutAfterRequest(zktest.OpDelete)
			le := e.acquire("faulty", e.fm)
			waitFired(t, e.ctx, fired)
			e.requireOwn(le) // the internal lock's node is gone
			// The internal lock is free: others get the other lease,
			// and queue for a third.
			e.acquire("h1", e.plain())
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.pending("w", w)
			e.release(le)
			e.lease("w", w)
		}},
		{"lease delete", func(t *testing.T, e *semEnv) {
			e.acquire("h1", e.plain())
			le := e.acquire("faulty", e.fm)
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			fired := e.f.p.CutAfterRequest(zktest.OpDelete)
			e.release(le)
			waitFired(t, e.ctx, fired)
			e.lease("w", w)
			if err := le.Release(e.ctx); !errors.Is(err, runtime.ErrNotHeld) {
				t.Fatalf("Release again = %v, want ErrNotHeld", err)
			}
		}},
		{"lock create, expiry", func(t *testing.T, e *semEnv) {
			err := e.f.inject(t, e.ctx, srv, zktest.OpCreate, cutThenExpire, nil, func() error {
				_, err := e.fm.Acquire(e.ctx)
				return err
			})
			if !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Acquire = %v, want ErrSessionExpired", err)
			}
			e.acquire("h1", e.plain())
			e.acquire("h2", e.plain())
		}},
		{"lease create, expiry", func(t *testing.T, e *semEnv) {
			h1, h2 := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			got := e.start("faulty", e.fm)
			waitChildren(t, e.ctx, e.tree, e.locks(), 2)
			e.f.p.Pause(true) // hold the reconnection until the session is expired
			fired := e.f.p.CutAfterRequest(zktest.OpCreate)
			e.release(h1)
			e.lease("w", w)
			waitFired(t, e.ctx, fired)
			e.f.expire(t, srv)
			e.expired(got)
			// Its lease node went with its session: the next one in
			// line gets h2's lease.
			x := e.start("x", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.pending("x", x)
			e.release(h2)
			e.lease("x", x)
		}},
		{"waiting for a lease, expiry", func(t *testing.T, e *semEnv) {
			h1, _ := e.acquire("h1", e.plain()), e.acquire("h2", e.plain())
			got := e.start("faulty", e.fm)
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1) // faulty holds the internal lock
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.locks(), 2)
			e.f.expire(t, srv)
			e.expired(got)
			// The internal lock went with the session: w is not blocked.
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			e.pending("w", w)
			e.release(h1)
			e.lease("w", w)
		}},
		{"holder expiry", func(t *testing.T, e *semEnv) {
			e.acquire("h1", e.plain())
			le := e.acquire("faulty", e.fm)
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			// The server ends the session behind the client's back: the
			// client cannot know first, so its lease stops counting now.
			e.ledger.drop(le)
			e.f.expire(t, srv)
			select {
			case <-le.Lost():
			case <-e.ctx.Done():
				t.Fatal("Lost did not fire after the session expired")
			}
			if !errors.Is(context.Cause(le.Context()), runtime.ErrLockLost) {
				t.Fatalf("lease context cause %v", context.Cause(le.Context()))
			}
			e.lease("w", w)
			e.held = slices.DeleteFunc(e.held, func(x *runtime.Lease) bool { return x == le })
			if err := le.Release(e.ctx); !errors.Is(err, runtime.ErrLockLost) {
				t.Fatalf("Release of an expired lease = %v, want ErrLockLost", err)
			}
			if _, err := e.fm.Acquire(e.ctx); !errors.Is(err, runtime.ErrSessionExpired) {
				t.Fatalf("Acquire on the expired session = %v, want ErrSessionExpired", err)
			}
		}},
		{"holder cut off", func(t *testing.T, e *semEnv) {
			// A holder on a short session is black-holed: the server
			// expires its session and the waiter gets its lease. The
			// ledger requires the holder's Lost to have fired by then.
			p := zktest.NewProxy(t, srv.Addr())
			s := connect(t, viaProxy(p), runtime.WithSessionTimeout(2*time.Second))
			e.sessions = append(e.sessions, s)
			e.acquire("h1", e.plain())
			le := e.acquire("cut-off", runtime.NewSemaphore(s, runtime.At(e.dir), e.n))
			w := e.start("w", e.plain())
			waitChildren(t, e.ctx, e.tree, e.leases(), n+1)
			p.Blackhole(true)
			e.lease("w", w)
			p.Blackhole(false)
			e.held = slices.DeleteFunc(e.held, func(x *runtime.Lease) bool { return x == le })
			if err := le.Release(e.ctx); !errors.Is(err, runtime.ErrLockLost) {
				t.Fatalf("Release of a lease whose session expired = %v, want ErrLockLost", err)
			}
			if !errors.Is(s.Err(), runtime.ErrSessionExpired) {
				t.Fatalf("cut-off session: Err = %v", s.Err())
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &semEnv{t: t, srv: srv, ctx: testCtx(t, time.Minute), dir: testRoot(t), n: n,
				tree: connect(t, srv.Servers())}
			e.ledger = &leaseLedger{t: t, n: n, live: map[*runtime.Lease]string{}}
			// The directories exist, so a cut create does create a node.
			makeDirs(t, e.tree, "/zkgen-test", e.dir, e.locks(), e.leases())
			e.f = newFaulty(t, srv)
			e.sessions = append(e.sessions, e.f.s)
			e.fm = runtime.NewSemaphore(e.f.s, runtime.At(e.dir), n)
			tc.run(t, e)
			for _, le := range slices.Clone(e.held) {
				e.release(le)
			}
			for _, d := range []string{e.leases(), e.locks()} {
				if kids := childrenOf(t, e.tree, d); len(kids) != 0 {
					t.Fatalf("left in %s with every lease released: %v", d, kids)
				}
			}
			if s := e.f.s.Err(); s != nil && !errors.Is(s, runtime.ErrSessionExpired) {
				t.Fatalf("faulty session: %v", s)
			}
			for _, s := range e.sessions {
				s.Close()
			}
			requireTree(t, e.tree, e.dir, e.locks(), e.leases())
		})
	}
}
