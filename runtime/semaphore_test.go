package runtime_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// A semaphore with 3 leases never has 4 holders, under 10 competing sessions.
func TestSemaphoreBound(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 3*time.Minute)
	const leases, clients, cycles = 3, 10, 15
	var inside, peak, violations atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		m := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), leases)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < cycles; n++ {
				le, err := m.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				v := inside.Add(1)
				if v > leases {
					violations.Add(1)
				}
				for {
					p := peak.Load()
					if v <= p || peak.CompareAndSwap(p, v) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond) // hold the lease a little, so holders overlap
				inside.Add(-1)
				if err := le.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d times more than %d holders", v, leases)
	}
	t.Logf("peak holders: %d of %d", peak.Load(), leases)
	s := connect(t, srv.Servers())
	for _, d := range []string{dir + "/leases", dir + "/locks"} {
		if kids := childrenOf(t, s, d); len(kids) != 0 {
			t.Fatalf("left behind in %s: %v", d, kids)
		}
	}
}

func TestSemaphoreLeaseLifecycle(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	as := connect(t, srv.Servers())
	a := runtime.NewSemaphore(as, runtime.At(dir), 1)
	b := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 1)
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Acquire(ctx); !errors.Is(err, runtime.ErrAlreadyHeld) {
		t.Fatalf("second Acquire on one handle = %v", err)
	}
	// b waits; cancelling its wait leaves nothing behind.
	bctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() { _, err := b.Acquire(bctx); got <- err }()
	waitChildren(t, ctx, as, dir+"/leases", 2)
	hs, err := a.Holders(ctx)
	if err != nil || len(hs) != 2 || !hs[0].Holds || hs[1].Holds {
		t.Fatalf("Holders = %+v, %v", hs, err)
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	if kids := childrenOf(t, as, dir+"/leases"); len(kids) != 1 {
		t.Fatalf("after cancel: %v", kids)
	}
	// The holder's session ends: its lease is gone and b gets one.
	lbCh := make(chan *runtime.Lease, 1)
	go func() {
		lb, err := b.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		lbCh <- lb
	}()
	waitChildren(t, ctx, as, dir+"/leases", 2)
	as.Close()
	<-la.Lost()
	if !errors.Is(context.Cause(la.Context()), runtime.ErrLockLost) {
		t.Fatalf("lease context cause %v", context.Cause(la.Context()))
	}
	lb := <-lbCh
	if lb == nil {
		t.FailNow()
	}
	if err := la.Release(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Release of a lost lease = %v", err)
	}
	if err := lb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Release(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("double Release = %v", err)
	}
}

// Exactly `leases` participants hold at once: the next one waits until a
// lease is released.
func TestSemaphoreAdmitsN(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	var held []*runtime.Lease
	for i := 0; i < 3; i++ {
		le, err := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 3).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, le)
	}
	fourth := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 3)
	got := make(chan *runtime.Lease, 1)
	go func() {
		le, err := fourth.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	waitChildren(t, ctx, obs, dir+"/leases", 4)
	select {
	case <-got:
		t.Fatal("a fourth participant got one of 3 leases")
	default:
	}
	hs, err := fourth.Holders(ctx)
	if err != nil || len(hs) != 4 || !hs[2].Holds || hs[3].Holds {
		t.Fatalf("Holders = %+v, %v", hs, err)
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	le := <-got
	if le == nil {
		t.FailNow()
	}
	for _, l := range []*runtime.Lease{held[0], held[2], le} {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// Semaphore.LockHolders names the participant that holds the semaphore's
// internal lock, in either layout (inspect and reap rely on it instead of
// the layouts' paths): with the one lease taken, the next participant
// waits for it holding that lock.
func TestSemaphoreLockHolders(t *testing.T) {
	srv := server(t)
	for _, c := range []struct {
		name   string
		layout runtime.Layout
		lock   string // the internal lock's directory, relative to the semaphore's
	}{{"curator", runtime.LayoutCurator, "/locks"}, {"kazoo", runtime.LayoutKazoo, "-__lock__"}} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			dir := testRoot(t)
			s := connect(t, srv.Servers())
			a := runtime.NewSemaphore(s, runtime.At(dir), 1, runtime.WithLayout(c.layout))
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			if hs, err := a.LockHolders(ctx); err != nil || len(hs) != 0 {
				t.Fatalf("LockHolders with nobody waiting: %v, %v", hs, err)
			}
			bctx, cancel := context.WithCancel(ctx)
			defer cancel()
			b := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 1, runtime.WithLayout(c.layout))
			go b.Acquire(bctx)
			waitChildren(t, ctx, s, dir+c.lock, 1)
			if hs, err := a.LockHolders(ctx); err != nil || len(hs) != 1 || !hs[0].Holds {
				t.Fatalf("LockHolders with b waiting for the lease: %+v, %v", hs, err)
			}
		})
	}
}
