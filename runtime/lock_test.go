package runtime_test

import (
	"bufio"
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// 8 sessions × 100 lock cycles on one path: never two holders at once, the
// fencing token grows strictly from holder to holder, and nothing stalls
// (the context bounds the run).
func TestLockMutualExclusion(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	const clients, cycles = 8, 100
	ctx := testCtx(t, 3*time.Minute)

	var inside atomic.Int32
	var mu sync.Mutex // guards tokens; taken only inside the critical section
	var tokens []int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		s := connect(t, srv.Servers())
		l := runtime.NewLock(s, runtime.At(dir))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < cycles; n++ {
				if err := l.Lock(ctx); err != nil {
					errs <- err
					return
				}
				if got := inside.Add(1); got != 1 {
					errs <- errors.New("two holders at once")
				}
				mu.Lock()
				tokens = append(tokens, l.Token())
				mu.Unlock()
				inside.Add(-1)
				if err := l.Unlock(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(tokens) != clients*cycles {
		t.Fatalf("%d cycles ran, want %d", len(tokens), clients*cycles)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("token %d after %d: fencing tokens must grow strictly", tokens[i], tokens[i-1])
		}
	}
	s := connect(t, srv.Servers())
	if kids := childrenOf(t, s, dir); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}

// parseWchp reads the server's watches-by-path report: a path line followed
// by one indented line per watching session.
func parseWchp(out string) map[string][]string {
	m := map[string][]string{}
	var cur string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "/"):
			cur = line
			m[cur] = m[cur][:0:0]
		case strings.TrimSpace(line) != "" && cur != "":
			m[cur] = append(m[cur], strings.TrimSpace(line))
		}
	}
	return m
}

// While 8 clients wait, each waiting contender node is watched by at most one
// session (its successor) — no herd — and a release wakes the next in line:
// for the exclusive lock in both layouts and for the write side of the
// read/write lock.
func TestLockNoHerd(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t)
	for _, tc := range []struct {
		name string
		new  func(s *runtime.Session, p runtime.Path) runtime.LockHandle
	}{
		{"mutex", func(s *runtime.Session, p runtime.Path) runtime.LockHandle { return runtime.NewLock(s, p) }},
		{"kazoo mutex", func(s *runtime.Session, p runtime.Path) runtime.LockHandle {
			return runtime.NewLock(s, p, runtime.WithLayout(runtime.LayoutKazoo))
		}},
		{"write lock", func(s *runtime.Session, p runtime.Path) runtime.LockHandle { return runtime.NewRWLock(s, p).Write() }},
	} {
		t.Run(tc.name, func(t *testing.T) { checkNoHerd(t, srv, tc.new) })
	}
}

func checkNoHerd(t *testing.T, srv *zktest.Server, newLock func(*runtime.Session, runtime.Path) runtime.LockHandle) {
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)

	hs := connect(t, srv.Servers())
	holder := newLock(hs, runtime.At(dir))
	if err := holder.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 8
	acquired := make(chan int, waiters)
	locks := make([]runtime.LockHandle, waiters)
	for i := range locks {
		locks[i] = newLock(connect(t, srv.Servers()), runtime.At(dir))
		go func() {
			if err := locks[i].Lock(ctx); err != nil {
				t.Error(err)
				return
			}
			acquired <- i
		}()
	}
	waitChildren(t, ctx, hs, dir, waiters+1)

	// The waiters set their watches right after reading the children; the
	// server's report is the only view of that, so poll it with a deadline.
	var watched map[string][]string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := zktest.FourLetter(srv.Addr(), "wchp", 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		watched = map[string][]string{}
		n := 0
		for p, sessions := range parseWchp(out) {
			if strings.HasPrefix(p, dir+"/") {
				watched[p] = sessions
				n += len(sessions)
			}
		}
		// One predecessor watch per waiter.
		if n >= waiters || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	list, err := holder.Holders(ctx)
	if err != nil || len(list) != waiters+1 || !list[0].Holds {
		t.Fatalf("holders: %v %v", list, err)
	}
	total := 0
	for p, sessions := range watched {
		if len(sessions) > 1 {
			t.Errorf("herd: %s watched by %d sessions %v", p, len(sessions), sessions)
		}
		total += len(sessions)
	}
	if total != waiters || len(watched) != waiters {
		t.Fatalf("want %d watched contender nodes, one watcher each; wchp shows %v", waiters, watched)
	}
	// The waiter in position i watches the node in position i-1, and the
	// last node in line is watched by nobody.
	if _, ok := watched[list[waiters].Node]; ok {
		t.Fatalf("the last waiter's node %s is watched", list[waiters].Node)
	}

	// Release: the waiters get the lock one at a time, in order.
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for n := 0; n < waiters; n++ {
		select {
		case i := <-acquired:
			if err := locks[i].Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatalf("only %d of %d waiters got the lock: stalled", n, waiters)
		}
	}
}

// Closing the holder's session hands the lock to the next waiter and fires
// the holder's Lost; Unlock then reports the loss.
func TestLockHandoffOnSessionClose(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	as := connect(t, srv.Servers())
	a := runtime.NewLock(as, runtime.At(dir))
	b := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	lost := a.Lost()
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	waitChildren(t, ctx, connect(t, srv.Servers()), dir, 2)
	select {
	case <-lost:
		t.Fatal("Lost fired while the lock was held")
	default:
	}
	as.Close()
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("holder's Lost did not fire after its session closed")
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Unlock after loss = %v, want ErrLockLost", err)
	}
	if b.Token() <= 0 {
		t.Fatalf("token %d", b.Token())
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A Lock whose context is cancelled while waiting removes its own node.
func TestLockCancelRemovesNode(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	a := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	b := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() { got <- b.Lock(bctx) }()
	waitChildren(t, ctx, obs, dir, 2)
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Lock = %v, want context.Canceled", err)
	}
	// Cancelled while waiting, b removes its node before returning; a cancel
	// that overtakes the create's reply (the observer can see the node
	// before b's session has the reply) removes it in the background. Either
	// way only the holder's node remains: wait for that (bounded by ctx).
	waitChildren(t, ctx, obs, dir, 1)
	// The handle is usable again.
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestTryLockAndReentry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	a := runtime.NewLock(s, runtime.At(dir))
	b := runtime.NewLock(s, runtime.At(dir)) // same session, another contender
	if ok, err := a.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock on a free lock = %v, %v", ok, err)
	}
	if err := a.Lock(ctx); !errors.Is(err, runtime.ErrAlreadyHeld) {
		t.Fatalf("second Lock on a holding handle = %v, want ErrAlreadyHeld", err)
	}
	if ok, err := b.TryLock(ctx); ok || err != nil {
		t.Fatalf("TryLock on a held lock = %v, %v", ok, err)
	}
	if kids := childrenOf(t, s, dir); len(kids) != 1 {
		t.Fatalf("failed TryLock left a node: %v", kids)
	}
	if err := b.Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Unlock without holding = %v, want ErrNotHeld", err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("double Unlock = %v, want ErrNotHeld", err)
	}
	select {
	case <-a.Lost():
	default:
		t.Fatal("Lost of a handle that holds nothing must be closed")
	}
	if ok, err := b.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after release = %v, %v", ok, err)
	}
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// Children that are not lock nodes (Curator's or anyone's litter) are ignored.
func TestLockIgnoresForeignChildren(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	for _, p := range []string{"/zkgen-test", dir} {
		if _, err := s.Conn().Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"readme", "lock-", "x-lock-12", "config"} {
		if _, err := s.Conn().Create(dir+"/"+name, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l := runtime.NewLock(s, runtime.At(dir))
	if ok, err := l.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock with foreign children = %v, %v", ok, err)
	}
	hs, err := l.Holders(ctx)
	if err != nil || len(hs) != 1 {
		t.Fatalf("Holders = %v, %v", hs, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestLockHoldersAndReap(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	as := connect(t, srv.Servers())
	a := runtime.NewLock(as, runtime.At(dir))
	a.SetPurpose("nightly export")
	if err := a.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	b := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir))
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go b.Lock(bctx)
	waitChildren(t, ctx, as, dir, 2)

	hs, err := a.Holders(ctx)
	if err != nil || len(hs) != 2 {
		t.Fatalf("Holders = %+v, %v", hs, err)
	}
	if !hs[0].Holds || hs[1].Holds || a.Token() < hs[0].Token {
		t.Fatalf("holder first, then waiter: %+v (token %d)", hs, a.Token())
	}
	if !hs[0].Known || hs[0].Owner.Purpose != "nightly export" || hs[0].Owner.PID == 0 || hs[0].Owner.Session != "0x"+strconv.FormatInt(as.ID(), 16) {
		t.Fatalf("owner metadata: %+v", hs[0].Owner)
	}
	cancel()

	// Reap with a cutoff in the future of every node removes the holder's
	// node too; the holder is told through Lost and Unlock.
	removed, err := runtime.NewLock(connect(t, srv.Servers()), runtime.At(dir)).Reap(ctx, -time.Hour)
	if err != nil || len(removed) == 0 {
		t.Fatalf("Reap = %v, %v", removed, err)
	}
	select {
	case <-a.Lost():
	case <-ctx.Done():
		t.Fatal("reaped holder's Lost did not fire")
	}
	if err := a.Unlock(ctx); !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Unlock after reap = %v, want ErrLockLost", err)
	}
	none, err := a.Reap(ctx, time.Hour)
	if err != nil || len(none) != 0 {
		t.Fatalf("Reap of young nodes = %v, %v", none, err)
	}
}

func TestLockInvalidPathTouchesNothing(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	for _, bad := range []string{"..", "a/b", "", "nul\x00", strings.Repeat("x", 2<<20)} {
		l := runtime.NewLock(s, runtime.At("/zkgen-test/hostile").Str("name", bad))
		if err := l.Lock(ctx); !errors.Is(err, runtime.ErrInvalidPath) {
			t.Fatalf("Lock with %.10q = %v, want ErrInvalidPath", bad, err)
		}
		if _, err := l.Holders(ctx); !errors.Is(err, runtime.ErrInvalidPath) {
			t.Fatalf("Holders: %v", err)
		}
	}
	if ok, _, _ := s.Conn().Exists("/zkgen-test/hostile"); ok {
		t.Fatal("an invalid path created nodes")
	}
}
