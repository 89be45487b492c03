package runtime_test

import (
	"context"
	"errors"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// Readers run together; a writer excludes everyone; a waiting writer is not
// starved by readers that arrive after it.
func TestRWLockSemantics(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	rw := func() *runtime.RWLock { return runtime.NewRWLock(connect(t, srv.Servers()), runtime.At(dir)) }

	// Three readers hold at once.
	r1, r2, r3 := rw().Read(), rw().Read(), rw().Read()
	for _, r := range []runtime.LockHandle{r1, r2, r3} {
		if err := r.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// A writer must wait for them.
	w := rw().Write()
	if ok, err := w.TryLock(ctx); ok || err != nil {
		t.Fatalf("writer TryLock with readers holding = %v, %v", ok, err)
	}
	wGot := make(chan error, 1)
	go func() { wGot <- w.Lock(ctx) }()
	waitChildren(t, ctx, obs, dir, 4)

	// A reader arriving after the waiting writer queues behind it.
	late := rw().Read()
	if ok, err := late.TryLock(ctx); ok || err != nil {
		t.Fatalf("late reader TryLock while a writer waits = %v, %v; want false (no writer starvation)", ok, err)
	}
	lateGot := make(chan error, 1)
	go func() { lateGot <- late.Lock(ctx) }()
	waitChildren(t, ctx, obs, dir, 5)

	for _, r := range []runtime.LockHandle{r1, r2, r3} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-wGot; err != nil {
		t.Fatalf("writer: %v", err)
	}
	select {
	case err := <-lateGot:
		t.Fatalf("late reader got the lock while the writer holds it (%v)", err)
	default:
	}
	hs, err := w.Holders(ctx)
	if err != nil || len(hs) != 2 || !hs[0].Holds || hs[0].Read || hs[1].Holds || !hs[1].Read {
		t.Fatalf("holders while the writer holds: %+v, %v", hs, err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-lateGot; err != nil {
		t.Fatalf("late reader: %v", err)
	}
	if late.Token() <= hs[0].Token {
		t.Fatalf("reader token %d not above the writer's %d", late.Token(), hs[0].Token)
	}
	if err := late.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Mixed readers and writers hammer one path: a writer is never inside with
// anyone else, and readers do share.
func TestRWLockStress(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 3*time.Minute)
	const readers, writers, cycles = 4, 2, 40
	var readersIn, writersIn, maxReaders atomic.Int32
	var violations atomic.Int32
	var wg sync.WaitGroup
	run := func(l runtime.LockHandle, write bool) {
		defer wg.Done()
		for n := 0; n < cycles; n++ {
			if err := l.Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			if write {
				if writersIn.Add(1) != 1 || readersIn.Load() != 0 {
					violations.Add(1)
				}
				writersIn.Add(-1)
			} else {
				r := readersIn.Add(1)
				if writersIn.Load() != 0 {
					violations.Add(1)
				}
				for {
					m := maxReaders.Load()
					if r <= m || maxReaders.CompareAndSwap(m, r) {
						break
					}
				}
				time.Sleep(time.Millisecond) // work under the lock, so readers can overlap
				readersIn.Add(-1)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}
	for i := 0; i < readers+writers; i++ {
		rw := runtime.NewRWLock(connect(t, srv.Servers()), runtime.At(dir))
		wg.Add(1)
		if i < writers {
			go run(rw.Write(), true)
		} else {
			go run(rw.Read(), false)
		}
	}
	wg.Wait()
	if v := violations.Load(); v != 0 {
		t.Fatalf("%d exclusion violations", v)
	}
	t.Logf("max readers inside at once: %d", maxReaders.Load())
	if kids := childrenOf(t, connect(t, srv.Servers()), dir); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}

// Node names follow the chosen layout.
func TestLockLayouts(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	for _, tc := range []struct {
		name string
		lock runtime.LockHandle
		re   string
	}{
		{"curator mutex", runtime.NewLock(s, runtime.At(testRoot(t))), `^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-\d{10}$`},
		{"curator read", runtime.NewRWLock(s, runtime.At(testRoot(t))).Read(), `^_c_[0-9a-f-]{36}-__READ__\d{10}$`},
		{"curator write", runtime.NewRWLock(s, runtime.At(testRoot(t))).Write(), `^_c_[0-9a-f-]{36}-__WRIT__\d{10}$`},
		{"kazoo mutex", runtime.NewLock(s, runtime.At(testRoot(t)), runtime.WithLayout(runtime.LayoutKazoo)), `^[0-9a-f]{32}__lock__\d{10}$`},
		{"kazoo read", runtime.NewRWLock(s, runtime.At(testRoot(t)), runtime.WithLayout(runtime.LayoutKazoo)).Read(), `^[0-9a-f]{32}__rlock__\d{10}$`},
		{"kazoo write", runtime.NewRWLock(s, runtime.At(testRoot(t)), runtime.WithLayout(runtime.LayoutKazoo)).Write(), `^[0-9a-f]{32}__lock__\d{10}$`},
	} {
		if err := tc.lock.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		kids := childrenOf(t, s, tc.lock.Path())
		if len(kids) != 1 || !regexp.MustCompile(tc.re).MatchString(kids[0]) {
			t.Errorf("%s: nodes %v, want one matching %s", tc.name, kids, tc.re)
		}
		if err := tc.lock.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRevocationWithConsent(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir), runtime.WithRevocation(0))
	b := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir), runtime.WithRevocation(0))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Revoked():
		t.Fatal("Revoked closed before any request")
	default:
	}
	if err := b.RequestRevoke(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Revoked():
	case <-ctx.Done():
		t.Fatal("holder never saw the revocation request")
	}
	hs, err := b.Holders(ctx)
	if err != nil || len(hs) != 1 || hs[0].Owner.RevokeRequestedAt.IsZero() || hs[0].Owner.PID == 0 {
		t.Fatalf("holder metadata after the request: %+v, %v", hs, err)
	}
	// Consent: the holder is still holding until it decides to unlock.
	select {
	case <-a.Lost():
		t.Fatal("a revocation request without force must not take the lock")
	default:
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	plain := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	if err := plain.RequestRevoke(ctx); !errors.Is(err, runtime.ErrNotRevocable) {
		t.Fatalf("RequestRevoke on a non-revocable lock = %v", err)
	}
}

func TestRevocationForced(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	opt := runtime.WithRevocation(300 * time.Millisecond)
	a := runtime.NewRWLock(connect(t, srv.Servers()), runtime.At(dir), opt).Write()
	b := runtime.NewRWLock(connect(t, srv.Servers()), runtime.At(dir), opt).Write()
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	work := a.Context()
	if err := b.RequestRevoke(ctx); err != nil { // the holder ignores it
		t.Fatal(err)
	}
	select {
	case <-a.Lost():
	case <-ctx.Done():
		t.Fatal("forced revocation did not fire the holder's Lost")
	}
	<-work.Done()
	if !errors.Is(context.Cause(work), runtime.ErrLockLost) {
		t.Fatalf("lock context cause = %v, want ErrLockLost", context.Cause(work))
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Unlock after forced revocation = %v", err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
