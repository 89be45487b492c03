package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// kazoo's layout without kazoo: the node names and formats that
// runtime/interop shares with the real kazoo are checked here too, so a
// machine without python3-kazoo still catches a change to them.

var kazooLayout = runtime.WithLayout(runtime.LayoutKazoo)

// An election in kazoo's layout: candidates are <hex>__lock__<seq>, the
// first leads, and its resignation hands on to the next.
func TestKazooLayoutElection(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a := runtime.NewElection(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec(), kazooLayout)
	b := runtime.NewElection(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec(), kazooLayout)
	la, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}__lock__[0-9]{10}$`).MatchString(la.Node()[len(dir)+1:]) {
		t.Fatalf("candidate node %s is not in kazoo's layout", la.Node())
	}
	got := make(chan *runtime.Leadership[string], 1)
	go func() {
		lb, err := b.Campaign(ctx, "b")
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	s := connect(t, srv.Servers())
	waitWatchers(t, srv, la.Node(), 1) // b waits on a's node
	if leader, err := a.Leader(ctx); err != nil || leader != "a" {
		t.Fatalf("leader %q, %v; want a", leader, err)
	}
	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	lb := <-got
	if lb == nil {
		t.FailNow()
	}
	if lb.Epoch() != la.Epoch()+1 {
		t.Errorf("epochs %d then %d", la.Epoch(), lb.Epoch())
	}
	if err := lb.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, s, dir); len(kids) != 1 || kids[0] != "epoch" {
		t.Errorf("left under %s: %v", dir, kids)
	}
}

// A semaphore in kazoo's layout: never more holders than leases under 8
// competing sessions; the directory records the leases as kazoo does, lease
// nodes are bare hex names, the internal lock is the sibling
// <dir>-__lock__; a handle with other leases, or on a directory holding
// something else, is refused.
func TestKazooLayoutSemaphore(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const leases, clients, cycles = 3, 8, 10
	var inside, peak, violations atomic.Int32
	var names sync.Map
	var wg sync.WaitGroup
	for range clients {
		m := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), leases, kazooLayout)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				le, err := m.Acquire(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				names.Store(le.Node(), true)
				v := inside.Add(1)
				if v > leases {
					violations.Add(1)
				}
				for p := peak.Load(); v > p && !peak.CompareAndSwap(p, v); p = peak.Load() {
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
	hex := regexp.MustCompile(`^[0-9a-f]{32}$`)
	names.Range(func(k, _ any) bool {
		if n := k.(string); !strings.HasPrefix(n, dir+"/") || !hex.MatchString(n[len(dir)+1:]) {
			t.Errorf("lease node %s is not in kazoo's layout", n)
		}
		return true
	})
	s := connect(t, srv.Servers())
	data, _, err := s.Conn().Get(dir)
	if err != nil || string(data) != "3" {
		t.Fatalf("directory data %q, %v; want kazoo's max_leases 3", data, err)
	}
	for _, d := range []string{dir, dir + "-__lock__"} {
		if kids := childrenOf(t, s, d); len(kids) != 0 {
			t.Errorf("left behind in %s: %v", d, kids)
		}
	}

	_, err = runtime.NewSemaphore(s, runtime.At(dir), 4, kazooLayout).Acquire(ctx)
	if !errors.Is(err, runtime.ErrSpecMismatch) {
		t.Errorf("a 4-lease handle on a 3-lease directory: %v, want ErrSpecMismatch", err)
	}
	other := testRoot(t)
	if _, err := runtime.NewSemaphore(s, runtime.At(other), 3).Acquire(ctx); err != nil { // Curator's layout records JSON
		t.Fatal(err)
	}
	_, err = runtime.NewSemaphore(s, runtime.At(other), 3, kazooLayout).Acquire(ctx)
	if !errors.Is(err, runtime.ErrSpecMismatch) || !strings.Contains(err.Error(), "not kazoo's number of leases") {
		t.Errorf("kazoo layout on a Curator-layout semaphore: %v, want ErrSpecMismatch", err)
	}
	_, err = runtime.NewSemaphore(s, runtime.At(dir), 3).Acquire(ctx)
	if !errors.Is(err, runtime.ErrSpecMismatch) || !strings.Contains(err.Error(), "layout kazoo") {
		t.Errorf("Curator layout on a kazoo-layout semaphore: %v, want ErrSpecMismatch", err)
	}
	if kids := childrenOf(t, s, dir); len(kids) != 0 {
		t.Errorf("the refused handle left %v in %s", kids, dir)
	}
}

// A counter in kazoo's layout is 4 bytes big-endian; concurrent adds lose
// nothing; an add beyond int32 fails and writes nothing.
func TestKazooLayoutCounter(t *testing.T) {
	srv := server(t)
	p := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const clients, adds = 4, 25
	var wg sync.WaitGroup
	for range clients {
		k := runtime.NewCounter(connect(t, srv.Servers()), runtime.At(p), kazooLayout)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range adds {
				if _, err := k.Add(ctx, 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	s := connect(t, srv.Servers())
	k := runtime.NewCounter(s, runtime.At(p), kazooLayout)
	if n, err := k.Get(ctx); err != nil || n != clients*adds {
		t.Fatalf("counter %d, %v; want %d", n, err, clients*adds)
	}
	data, _, err := s.Conn().Get(p)
	if err != nil || len(data) != 4 || data[3] != clients*adds {
		t.Fatalf("node data %x, %v; want 4 bytes big-endian", data, err)
	}
	if _, err := k.Add(ctx, math.MaxInt32); err == nil {
		t.Fatal("an add beyond int32 succeeded")
	}
	if n, _ := k.Get(ctx); n != clients*adds {
		t.Errorf("after the refused add the counter is %d", n)
	}
	if _, err := runtime.NewCounter(s, runtime.At(p)).Get(ctx); !errors.Is(err, runtime.ErrDecode) {
		t.Errorf("the 8-byte layout reading 4 bytes: %v, want ErrDecode", err)
	}
}

// A kazoo-layout acquire that waits for a lease and is cancelled leaves
// nothing behind: no lease, no node in the sibling lock.
func TestKazooLayoutSemaphoreCancel(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 1, kazooLayout)
	b := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 1, kazooLayout)
	la, err := a.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := b.Acquire(bctx)
		done <- err
	}()
	// b's node in the sibling lock: b queues there, then holds it and waits
	// for a lease (a children watch, which wchp does not list). Cancelling
	// at either point must leave nothing.
	s := connect(t, srv.Servers())
	for {
		kids, _, ch, err := s.Conn().ChildrenW(dir + "-__lock__")
		if err == nil && len(kids) > 0 {
			break
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			t.Fatal(err)
		}
		if err != nil { // no directory yet: wait for it
			var ok bool
			ok, _, ch, err = s.Conn().ExistsW(dir + "-__lock__")
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				continue // created in between: list it
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("b never queued")
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	if kids := childrenOf(t, s, dir); len(kids) != 1 || dir+"/"+kids[0] != la.Node() {
		t.Errorf("leases %v, want only a's", kids)
	}
	if kids := childrenOf(t, s, dir+"-__lock__"); len(kids) != 0 {
		t.Errorf("left in the sibling lock: %v", kids)
	}
	// Holders shows the lease with its owner; Reap takes it away.
	hs, err := b.Holders(ctx)
	if err != nil || len(hs) != 1 || hs[0].Node != la.Node() || !hs[0].Holds || !hs[0].Known {
		t.Fatalf("Holders = %+v, %v; want a's lease, held, with metadata", hs, err)
	}
	lost := la.Lost()
	if removed, err := b.Reap(ctx, 0); err != nil || len(removed) != 1 {
		t.Fatalf("Reap = %+v, %v; want a's lease", removed, err)
	}
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("the reaped lease's Lost never closed")
	}
}

// A kazoo-layout lease whose session expires is lost (Lost closes) and its
// lease goes to the participant waiting for it.
func TestKazooLayoutSemaphoreExpiry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	f := newFaulty(t, srv)
	la, err := runtime.NewSemaphore(f.s, runtime.At(dir), 1, kazooLayout).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lost := la.Lost()
	got := make(chan error, 1)
	b := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 1, kazooLayout)
	go func() {
		lb, err := b.Acquire(ctx)
		if err == nil {
			err = lb.Release(ctx)
		}
		got <- err
	}()
	f.expire(t, srv)
	select {
	case <-lost:
	case <-ctx.Done():
		t.Fatal("the expired holder's Lost never closed")
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiting participant: %v", err)
	}
}

// A lock of layout kazoo creates its directory persistent, as kazoo does:
// kazoo's Lock creates its path once and counts on it staying, and a
// container directory reaped while empty failed kazoo's next acquisition
// with NoNodeError (seen in the interop suite against zkgen sim, whose
// reaper ran during TestKazooMutex). A curator-layout lock keeps its
// container, which the server removes once unused: the test waits for
// that removal (a watch), so the reaper has run, and then finds the
// kazoo-layout directory still there.
func TestKazooLayoutLockDirIsPersistent(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t, zktest.WithTTLNodes(100*time.Millisecond)) // containers reaped every 100ms
	ctx := testCtx(t, 30*time.Second)
	s := connect(t, srv.Servers())
	root := testRoot(t)
	kazooDir := root + "/kazoo"
	cycle := func(l *runtime.Lock) {
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	cycle(runtime.NewLock(s, runtime.At(kazooDir), runtime.WithLayout(runtime.LayoutKazoo)))
	// Two curator-layout containers emptied one after the other, each
	// waited for until reaped: the second is reaped by a later pass than
	// the one that saw the kazoo directory empty, so that pass is over.
	for i := range 2 {
		dir := fmt.Sprintf("%s/curator-%d", root, i)
		cycle(runtime.NewLock(s, runtime.At(dir)))
		for {
			ok, _, ch, err := s.Conn().ExistsW(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				t.Fatalf("the container %s was never reaped", dir)
			}
		}
	}
	if ok, _, err := s.Conn().Exists(kazooDir); err != nil || !ok {
		t.Errorf("the kazoo-layout lock's directory after a reap: exists %v, %v; want it kept", ok, err)
	}
}
