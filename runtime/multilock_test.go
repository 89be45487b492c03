package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// LockAll takes its members in path order whatever order they are passed:
// while x holds {A, B}, y asking for {B, A} waits in A's queue and has no
// node in B's; after x unlocks, y holds both.
func TestLockAllCanonicalOrder(t *testing.T) {
	srv := server(t)
	root := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a, b := root+"/a", root+"/b"
	sx, sy := connect(t, srv.Servers()), connect(t, srv.Servers())
	x, err := runtime.LockAll(ctx, runtime.NewLock(sx, runtime.At(a)), runtime.NewLock(sx, runtime.At(b)))
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var y *runtime.LockGroup
	go func() {
		var err error
		y, err = runtime.LockAll(ctx, runtime.NewLock(sy, runtime.At(b)), runtime.NewLock(sy, runtime.At(a)))
		got <- err
	}()
	waitChildren(t, ctx, sx, a, 2) // y queues behind x on A ...
	if kids := childrenOf(t, sx, b); len(kids) != 1 {
		t.Fatalf("y contends for B before holding A: %v", kids) // ... and not on B
	}
	if err := x.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if p := y.Paths(); p[0] != a || p[1] != b {
		t.Fatalf("taken in order %v, want [%s %s]", p, a, b)
	}
	if err := y.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := y.Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("second Unlock = %v, want ErrNotHeld", err)
	}
	requireTree(t, sx, root, a, b)
	if len(childrenOf(t, sx, a))+len(childrenOf(t, sx, b)) != 0 {
		t.Fatal("lock nodes left after Unlock")
	}
}

// Two callers asking for the same three members (a lock, a read/write
// lock's write side, a one-lease semaphore) in opposite orders, over and
// over: with the caller's order this deadlocks; with LockAll's it finishes,
// and the two never hold the set at once.
func TestLockAllOppositeOrdersNoDeadlock(t *testing.T) {
	srv := server(t)
	root := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const rounds = 20
	var mu sync.Mutex
	holding := 0
	run := func(reverse bool) error {
		s := connect(t, srv.Servers())
		for i := 0; i < rounds; i++ {
			ms := []runtime.Locker{
				runtime.NewLock(s, runtime.At(root+"/lock")),
				runtime.NewRWLock(s, runtime.At(root+"/rw")).Write(),
				runtime.NewSemaphore(s, runtime.At(root+"/sem"), 1),
			}
			if reverse {
				ms[0], ms[2] = ms[2], ms[0]
			}
			g, err := runtime.LockAll(ctx, ms...)
			if err != nil {
				return err
			}
			mu.Lock()
			holding++
			if holding > 1 {
				t.Errorf("both callers hold the set")
			}
			mu.Unlock()
			mu.Lock()
			holding--
			mu.Unlock()
			if err := g.Unlock(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make(chan error, 2)
	go func() { errs <- run(false) }()
	go func() { errs <- run(true) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	obs := connect(t, srv.Servers())
	requireTree(t, obs, root, root+"/lock", root+"/rw", root+"/sem", root+"/sem/locks", root+"/sem/leases")
	for _, d := range []string{root + "/lock", root + "/rw", root + "/sem/locks", root + "/sem/leases"} {
		if kids := childrenOf(t, obs, d); len(kids) != 0 {
			t.Fatalf("%s: nodes left: %v", d, kids)
		}
	}
}

// A LockAll whose ctx ends while it waits for its second member releases
// the first: nothing of it is left.
func TestLockAllCancelReleasesTaken(t *testing.T) {
	srv := server(t)
	root := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a, b := root+"/a", root+"/b"
	other := runtime.NewLock(connect(t, srv.Servers()), runtime.At(b))
	if err := other.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	s := connect(t, srv.Servers())
	cctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := runtime.LockAll(cctx, runtime.NewLock(s, runtime.At(b)), runtime.NewLock(s, runtime.At(a)))
		got <- err
	}()
	waitChildren(t, ctx, s, b, 2) // holds A, waits for B
	if kids := childrenOf(t, s, a); len(kids) != 1 {
		t.Fatalf("A not held while waiting for B: %v", kids)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("LockAll after cancel = %v, want context.Canceled", err)
	}
	if kids := childrenOf(t, s, a); len(kids) != 0 {
		t.Fatalf("A still held after a cancelled LockAll: %v", kids)
	}
	if kids := childrenOf(t, s, b); len(kids) != 1 {
		t.Fatalf("B: want only the other holder's node, have %v", kids)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Bad input is refused before any I/O.
func TestLockAllRefusesDuplicates(t *testing.T) {
	srv := server(t)
	root := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	rw := runtime.NewRWLock(s, runtime.At(root+"/rw"))
	if _, err := runtime.LockAll(ctx, rw.Read(), rw.Write()); !errors.Is(err, runtime.ErrDuplicateMember) {
		t.Fatalf("read and write of one lock = %v, want ErrDuplicateMember", err)
	}
	if _, err := runtime.LockAll(ctx); err == nil {
		t.Fatal("LockAll of nothing succeeded")
	}
	if kids := childrenOf(t, s, root); len(kids) != 0 {
		t.Fatalf("refused LockAll created %v", kids)
	}
}

// The group is lost when any member is: a member node deleted by someone
// else (Reap), or the session of a member expired.
func TestLockAllLostWhenAMemberIsLost(t *testing.T) {
	srv := server(t)
	root := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a, b := root+"/a", root+"/b"

	s := connect(t, srv.Servers())
	g, err := runtime.LockAll(ctx, runtime.NewLock(s, runtime.At(a)), runtime.NewLock(s, runtime.At(b)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtime.NewLock(connect(t, srv.Servers()), runtime.At(b)).Reap(ctx, -time.Hour); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.Lost():
	case <-ctx.Done():
		t.Fatal("group Lost did not fire after a member was reaped")
	}
	if c := context.Cause(g.Context()); !errors.Is(c, runtime.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", c)
	}
	if err := g.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Unlock of a lost group = %v, want ErrLockLost for the lost member", err)
	}
	if kids := childrenOf(t, s, a); len(kids) != 0 {
		t.Fatalf("A still held after Unlock of a lost group: %v", kids)
	}

	f := newFaulty(t, srv)
	g, err = runtime.LockAll(ctx, runtime.NewLock(s, runtime.At(a)), runtime.NewLock(f.s, runtime.At(b)))
	if err != nil {
		t.Fatal(err)
	}
	f.expire(t, srv)
	select {
	case <-g.Lost():
	case <-ctx.Done():
		t.Fatal("group Lost did not fire after a member's session expired")
	}
	if err := g.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Unlock = %v, want ErrLockLost", err)
	}
	requireTree(t, s, root, a, b)
	if len(childrenOf(t, s, a))+len(childrenOf(t, s, b)) != 0 {
		t.Fatal("lock nodes left")
	}
}

// The fault matrix: the connection of the session holding one member (the
// first or the second taken) is cut right after a request of LockAll or of
// Unlock reaches the server; with cut the client reconnects to its session,
// with cutThenExpire the session is gone. LockAll either holds every member
// (exactly one node each) or none; after Unlock nothing is left.
func TestLockAllFaultMatrix(t *testing.T) {
	srv := server(t)
	ops := []struct {
		name string
		op   int32
	}{{"create", zktest.OpCreate}, {"children", zktest.OpGetChildren2}, {"delete", zktest.OpDelete}}
	for _, step := range []string{"first", "second"} {
		for _, op := range ops {
			for _, kind := range []fault{cut, cutThenExpire} {
				name := fmt.Sprintf("%s/%s/%v", step, op.name, kind == cut)
				t.Run(name, func(t *testing.T) {
					root := testRoot(t)
					ctx := testCtx(t, time.Minute)
					a, b := root+"/a", root+"/b"
					plain := connect(t, srv.Servers())
					f := newFaulty(t, srv)
					makeDirs(t, plain, "/zkgen-test", root)
					// Warm up: the directories and their spec records exist,
					// so the only requests left are the contenders'.
					for _, s := range []*runtime.Session{plain, f.s} {
						g, err := runtime.LockAll(ctx, runtime.NewLock(s, runtime.At(a)), runtime.NewLock(s, runtime.At(b)))
						if err != nil {
							t.Fatal(err)
						}
						if err := g.Unlock(ctx); err != nil {
							t.Fatal(err)
						}
					}
					la, lb := runtime.NewLock(f.s, runtime.At(a)), runtime.NewLock(plain, runtime.At(b))
					if step == "second" {
						la, lb = runtime.NewLock(plain, runtime.At(a)), runtime.NewLock(f.s, runtime.At(b))
					}
					var g *runtime.LockGroup
					lockAll := func() error {
						var err error
						g, err = runtime.LockAll(ctx, lb, la)
						return err
					}
					var err error
					if op.op == zktest.OpDelete {
						if err := lockAll(); err != nil {
							t.Fatal(err)
						}
						err = f.inject(t, ctx, srv, op.op, kind, nil, func() error { return g.Unlock(ctx) })
						if kind == cut && err != nil {
							t.Fatalf("Unlock across a cut: %v", err)
						}
						if kind == cutThenExpire && err != nil && !errors.Is(err, runtime.ErrLockLost) {
							t.Fatalf("Unlock across an expiry: %v", err)
						}
					} else {
						err = f.inject(t, ctx, srv, op.op, kind, nil, lockAll)
						switch {
						case kind == cut && err != nil:
							t.Fatalf("LockAll across a cut: %v", err)
						case kind == cut:
							for _, d := range []string{a, b} {
								if kids := childrenOf(t, plain, d); len(kids) != 1 {
									t.Fatalf("%s: want one node, have %v", d, kids)
								}
							}
							if err := g.Unlock(ctx); err != nil {
								t.Fatal(err)
							}
						case err == nil:
							// The expiry came after the request was answered
							// in full; the group must then be lost.
							<-g.Lost()
							_ = g.Unlock(ctx)
						case !errors.Is(err, runtime.ErrSessionExpired):
							t.Fatalf("LockAll across an expiry = %v, want ErrSessionExpired", err)
						}
					}
					requireTree(t, plain, root, a, b)
					for _, d := range []string{a, b} {
						if kids := childrenOf(t, plain, d); len(kids) != 0 {
							t.Fatalf("%s: orphan nodes: %v", d, kids)
						}
					}
				})
			}
		}
	}
}
