package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A second shared server, with TTL nodes enabled and a short reaping
// interval, started by the first test that needs it (closed in TestMain).
var (
	ttlOnce   sync.Once
	ttlShared *zktest.Server
	ttlErr    error
)

// ttlCheckInterval is the TTL server's znode.container.checkIntervalMs.
const ttlCheckInterval = 100 * time.Millisecond

func ttlServer(t *testing.T) *zktest.Server {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	ttlOnce.Do(func() { ttlShared, ttlErr = zktest.StartProcess(zktest.WithTTLNodes(ttlCheckInterval)) })
	return zktest.Shared(t, ttlShared, ttlErr)
}

// waitGone blocks until node does not exist, with an exists watch.
func waitGone(t *testing.T, ctx context.Context, s *runtime.Session, node string) {
	t.Helper()
	for {
		ok, _, ch, err := s.Conn().ExistsW(node)
		if err != nil {
			t.Fatalf("exists %s: %v", node, err)
		}
		if !ok {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s still there: %v", node, ctx.Err())
		}
	}
}

// A server without extended types refuses TTL nodes: Acquire says so at
// once (ErrTTLDisabled), and leaves no slot node.
func TestTTLLeaseServerWithoutTTL(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	_, err := runtime.NewTTLLeases(s, runtime.At(dir), 2, time.Second).Acquire(ctx, "h1")
	if !errors.Is(err, runtime.ErrTTLDisabled) {
		t.Fatalf("Acquire on a server without TTL nodes = %v, want ErrTTLDisabled", err)
	}
	if kids := childrenOf(t, s, dir); len(kids) != 0 {
		t.Fatalf("left %v", kids)
	}
}

// Bad parameters are refused without I/O.
func TestTTLLeaseBadParameters(t *testing.T) {
	srv := ttlServer(t)
	s := connect(t, srv.Servers())
	ctx := testCtx(t, time.Minute)
	for _, c := range []struct {
		n      int
		ttl    time.Duration
		holder string
	}{{0, time.Second, "h"}, {1, 0, "h"}, {1, time.Second, ""}} {
		if _, err := runtime.NewTTLLeases(s, runtime.At(testRoot(t)), c.n, c.ttl).Acquire(ctx, c.holder); err == nil {
			t.Errorf("leases %d ttl %v holder %q accepted", c.n, c.ttl, c.holder)
		}
	}
}

// At most N holders: the (N+1)th waits until one releases, then takes the
// freed slot. Release leaves nothing behind.
func TestTTLLeaseAtMostN(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	handle := func() *runtime.TTLLeases {
		return runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 2, time.Minute)
	}
	a, err := handle().Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := handle().Acquire(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if a.Node() == b.Node() {
		t.Fatalf("two holders on %s", a.Node())
	}
	p := zktest.NewProxy(t, srv.Addr())
	hc := runtime.NewTTLLeases(connect(t, viaProxy(p)), runtime.At(dir), 2, time.Minute)
	got := make(chan *runtime.TTLLease, 1)
	go func() {
		le, err := hc.Acquire(ctx, "c")
		if err != nil {
			t.Error(err)
		}
		got <- le
	}()
	// c has listed the two taken slots (polled: the proxy's count is the
	// only view of it) and holds none.
	for p.Requests(zktest.OpGetChildren2) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("c never listed the slots")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 2 {
		t.Fatalf("slots %v while two hold", kids)
	}
	select {
	case <-got:
		t.Fatal("a third holder got a lease while two hold both")
	default:
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-got
	if c == nil {
		t.FailNow()
	}
	if c.Node() != a.Node() {
		t.Fatalf("c took %s, want the freed %s", c.Node(), a.Node())
	}
	hs, err := hc.Holders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 2 || hs[0].Holder+hs[1].Holder != "cb" && hs[0].Holder+hs[1].Holder != "bc" {
		t.Fatalf("holders %+v, want b and c", hs)
	}
	for _, le := range []*runtime.TTLLease{b, c} {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Release(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("second Release = %v, want ErrNotHeld", err)
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("orphans after Release: %v", kids)
	}
}

// Many acquirers racing for few slots: never more than N at once.
func TestTTLLeaseConcurrentAcquirers(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const n, workers, rounds = 2, 5, 4
	var mu sync.Mutex
	live := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), n, time.Minute)
			for r := range rounds {
				le, err := m.Acquire(ctx, fmt.Sprintf("w%d-%d", w, r))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				live++
				if live > n {
					t.Errorf("%d holders at once", live)
				}
				live--
				mu.Unlock()
				if err := le.Release(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if kids := childrenOf(t, connect(t, srv.Servers()), dir); len(kids) != 0 {
		t.Fatalf("orphans: %v", kids)
	}
}

// The lease outlives its holder's session: after the session is closed the
// node stays; a new session with the same holder id re-attaches to the very
// node; not renewed, it is removed by the server, never before Expires, and
// the waiting holder gets the slot only then.
func TestTTLLeaseOutlivesSessionAndExpires(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const ttl = 2 * time.Second
	obs := connect(t, srv.Servers())
	s1 := connect(t, srv.Servers())
	first, err := runtime.NewTTLLeases(s1, runtime.At(dir), 1, ttl).Acquire(ctx, "worker-1")
	if err != nil {
		t.Fatal(err)
	}
	_, st1, err := obs.Conn().Get(first.Node())
	if err != nil {
		t.Fatal(err)
	}
	s1.Close()
	_, st, err := obs.Conn().Get(first.Node())
	if err != nil {
		t.Fatalf("the lease did not outlive its session: %v", err)
	}
	if st.EphemeralOwner == s1.ID() {
		t.Fatal("the lease node is ephemeral")
	}
	// Restart: re-attach by holder id.
	le, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, ttl).Acquire(ctx, "worker-1")
	if err != nil {
		t.Fatal(err)
	}
	_, st2, err := obs.Conn().Get(le.Node())
	if err != nil || st2.Czxid != st1.Czxid {
		t.Fatalf("re-attach made a new node (czxid %x, was %x): %v", st2.Czxid, st1.Czxid, err)
	}
	// Another holder waits; nobody renews.
	other := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, ttl)
	got := make(chan error, 1)
	var next *runtime.TTLLease
	go func() {
		var err error
		next, err = other.Acquire(ctx, "worker-2")
		got <- err
	}()
	waitGone(t, ctx, obs, le.Node())
	if now := time.Now(); now.Before(le.Expires()) {
		t.Fatalf("the server removed the lease %v before its holder's deadline", le.Expires().Sub(now))
	} else {
		t.Logf("removed %v after the holder's deadline (TTL %v, check interval %v)", now.Sub(le.Expires()), ttl, ttlCheckInterval)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := le.Renew(ctx); !errors.Is(err, runtime.ErrLeaseExpired) {
		t.Fatalf("Renew after expiry = %v, want ErrLeaseExpired", err)
	}
	if err := le.Release(ctx); !errors.Is(err, runtime.ErrLeaseExpired) {
		t.Fatalf("Release after expiry = %v, want ErrLeaseExpired", err)
	}
	if _, _, err := obs.Conn().Get(next.Node()); err != nil {
		t.Fatalf("the expired holder's Release removed the new holder's node: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("orphans: %v", kids)
	}
}

// Renewals keep the lease past its TTL: the same node, over several TTLs.
func TestTTLLeaseRenewKeepsIt(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const ttl = time.Second
	obs := connect(t, srv.Servers())
	le, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, ttl).Acquire(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	_, st0, err := obs.Conn().Get(le.Node())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for time.Since(start) < 3*ttl {
		// The holder's schedule: renew a third of the TTL before its end.
		time.Sleep(time.Until(le.Expires().Add(-ttl / 3)))
		before := le.Expires()
		if err := le.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if !le.Expires().After(before) {
			t.Fatal("Renew did not move Expires")
		}
	}
	_, st, err := obs.Conn().Get(le.Node())
	if err != nil || st.Czxid != st0.Czxid {
		t.Fatalf("the renewed lease's node was replaced or removed: %v", err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("orphans: %v", kids)
	}
}

// Renewing a lease whose node sat idle past most of its TTL (a holder that
// re-attaches late) gives it up: the server may have picked it already.
func TestTTLLeaseLateReattachStartsAfresh(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	// A slot written by hand long ago (mtime far in the past is impossible
	// to fake, so use a TTL far longer than the node has lived... and a
	// handle whose TTL is shorter than the node's age).
	makeDirs(t, obs, "/zkgen-test", dir)
	node := dir + "/slot-0"
	if _, err := obs.Conn().CreateTTL(node, []byte(`{"holder":"h"}`), zk.FlagTTL, zk.WorldACL(zk.PermAll), time.Minute); err != nil {
		t.Fatal(err)
	}
	_, st0, _ := obs.Conn().Get(node)
	time.Sleep(300 * time.Millisecond) // the node's age, which the check measures
	le, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, 200*time.Millisecond).Acquire(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := obs.Conn().Get(le.Node())
	if err != nil {
		t.Fatal(err)
	}
	if st.Czxid == st0.Czxid {
		t.Fatal("re-attached to a node idle for longer than the TTL")
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// The fault matrix: the holder's connection is cut right after its create,
// renewal or delete reached the server (the reply is lost); with cut the
// client reconnects to its session, with cutThenExpire the session is gone
// and the holder restarts on a new session with the same holder id. Either
// way the holder ends up with exactly one node, the same across the fault,
// and after Release nothing is left.
func TestTTLLeaseFaultMatrix(t *testing.T) {
	srv := ttlServer(t)
	for _, step := range []struct {
		name string
		op   int32
	}{{"create", zktest.OpCreateTTL}, {"renew", zktest.OpSetData}, {"release", zktest.OpDelete}} {
		for _, kind := range []fault{cut, cutThenExpire} {
			t.Run(fmt.Sprintf("%s/expire=%v", step.name, kind == cutThenExpire), func(t *testing.T) {
				dir := testRoot(t)
				ctx := testCtx(t, time.Minute)
				obs := connect(t, srv.Servers())
				makeDirs(t, obs, "/zkgen-test")
				f := newFaulty(t, srv)
				m := runtime.NewTTLLeases(f.s, runtime.At(dir), 2, time.Minute)
				// Warm up: the directory and its record exist.
				if le, err := m.Acquire(ctx, "warm"); err != nil {
					t.Fatal(err)
				} else if err := le.Release(ctx); err != nil {
					t.Fatal(err)
				}
				restart := func() *runtime.TTLLease {
					le, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 2, time.Minute).Acquire(ctx, "h")
					if err != nil {
						t.Fatal(err)
					}
					return le
				}
				var le *runtime.TTLLease
				var err error
				switch step.name {
				case "create":
					err = f.inject(t, ctx, srv, step.op, kind, nil, func() error {
						var err error
						le, err = m.Acquire(ctx, "h")
						return err
					})
				default:
					if le, err = m.Acquire(ctx, "h"); err != nil {
						t.Fatal(err)
					}
					call := le.Renew
					if step.name == "release" {
						call = le.Release
					}
					err = f.inject(t, ctx, srv, step.op, kind, nil, func() error { return call(ctx) })
				}
				switch {
				case kind == cut && err != nil:
					t.Fatalf("%s across a cut: %v", step.name, err)
				case kind == cutThenExpire && err == nil:
				case kind == cutThenExpire && !errors.Is(err, runtime.ErrSessionExpired):
					t.Fatalf("%s across an expiry = %v, want ErrSessionExpired", step.name, err)
				}
				kids := childrenOf(t, obs, dir)
				if step.name == "release" && (kind == cut || err == nil) {
					if len(kids) != 0 {
						t.Fatalf("left after Release: %v", kids)
					}
					return
				}
				if len(kids) > 1 {
					t.Fatalf("one holder, several nodes: %v", kids)
				}
				if kind == cutThenExpire {
					// The lease is not the session's: a restart re-attaches.
					before := kids
					le = restart()
					if len(before) == 1 && le.Node() != dir+"/"+before[0] {
						t.Fatalf("restart took %s, not its node %v", le.Node(), before)
					}
				}
				if kids := childrenOf(t, obs, dir); len(kids) != 1 || dir+"/"+kids[0] != le.Node() {
					t.Fatalf("want exactly the holder's node %s, have %v", le.Node(), kids)
				}
				if err := le.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if kids := childrenOf(t, obs, dir); len(kids) != 0 {
					t.Fatalf("orphans: %v", kids)
				}
			})
		}
	}
}

// An Acquire waiting for a slot and cancelled leaves nothing: once the
// holder releases, the directory is empty.
func TestTTLLeaseAcquireCancelled(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	a, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, time.Minute).Acquire(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	p := zktest.NewProxy(t, srv.Addr())
	b := runtime.NewTTLLeases(connect(t, viaProxy(p)), runtime.At(dir), 1, time.Minute)
	cctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := b.Acquire(cctx, "b")
		got <- err
	}()
	// b waits once it has listed the taken slots (the proxy's count is the
	// only view of that: polled with the test's deadline).
	for p.Requests(zktest.OpGetChildren2) == 0 && p.Requests(zktest.OpGetChildren) == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("b never listed the slots")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v, want context.Canceled", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("left after a cancelled Acquire: %v", kids)
	}
}

// Holders that crash (never renew nor release) one after another on one
// slot: each next holder gets the slot only after the previous lease's end
// by its holder's clock, and the server removes each node by itself.
func TestTTLLeaseSuccessionAfterExpiry(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const ttl, rounds = 300 * time.Millisecond, 5
	m := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, ttl)
	var prev *runtime.TTLLease
	for r := range rounds {
		le, err := m.Acquire(ctx, fmt.Sprintf("crashing-%d", r))
		if err != nil {
			t.Fatal(err)
		}
		if prev != nil {
			if now := time.Now(); now.Before(prev.Expires()) {
				t.Fatalf("round %d: the slot was handed on %v before the previous lease's end", r, prev.Expires().Sub(now))
			}
		}
		prev = le
	}
	obs := connect(t, srv.Servers())
	waitGone(t, ctx, obs, prev.Node())
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("left: %v", kids)
	}
}

// A renewal whose ctx ends after its write reached the server (the reply is
// never seen) leaves the lease unsure, not broken: the next Renew finds the
// write applied and carries on, and Release removes the node.
func TestTTLLeaseRenewCancelledInFlight(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	p := zktest.NewProxy(t, srv.Addr())
	le, err := runtime.NewTTLLeases(connect(t, viaProxy(p)), runtime.At(dir), 1, time.Minute).Acquire(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	p.Pause(true) // hold the reconnection
	fired := p.CutAfterRequest(zktest.OpSetData)
	cctx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() { got <- le.Renew(cctx) }()
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatal("the renewal never passed the proxy")
	}
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("Renew with its ctx cancelled in flight = %v, want context.Canceled", err)
	}
	p.Pause(false)
	_, st, err := obs.Conn().Get(le.Node())
	if err != nil || st.Version != 1 {
		t.Fatalf("the cancelled renewal did not apply (version %d): %v", st.Version, err)
	}
	if err := le.Renew(ctx); err != nil {
		t.Fatalf("Renew after a cancelled one: %v", err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("left: %v", kids)
	}
}

// An acquirer waiting for a slot across a connection cut still gets the slot
// when it frees; one whose session expires while waiting returns
// ErrSessionExpired and leaves nothing.
func TestTTLLeaseWaitAcrossFaults(t *testing.T) {
	srv := ttlServer(t)
	for _, expire := range []bool{false, true} {
		t.Run(fmt.Sprintf("expire=%v", expire), func(t *testing.T) {
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			obs := connect(t, srv.Servers())
			holder, err := runtime.NewTTLLeases(obs, runtime.At(dir), 1, time.Minute).Acquire(ctx, "holder")
			if err != nil {
				t.Fatal(err)
			}
			f := newFaulty(t, srv)
			got := make(chan error, 1)
			var le *runtime.TTLLease
			go func() {
				var err error
				le, err = runtime.NewTTLLeases(f.s, runtime.At(dir), 1, time.Minute).Acquire(ctx, "waiter")
				got <- err
			}()
			for f.p.Requests(zktest.OpGetChildren2) == 0 { // polled: the proxy's count is the only view
				select {
				case <-ctx.Done():
					t.Fatal("the waiter never listed the slots")
				case <-time.After(10 * time.Millisecond):
				}
			}
			if expire {
				f.expire(t, srv)
				if err := <-got; !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("Acquire across an expiry = %v, want ErrSessionExpired", err)
				}
			} else {
				f.p.CutAll()
			}
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if !expire {
				if err := <-got; err != nil {
					t.Fatalf("Acquire across a cut: %v", err)
				}
				if err := le.Release(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if kids := childrenOf(t, obs, dir); len(kids) != 0 {
				t.Fatalf("left: %v", kids)
			}
		})
	}
}

// The promise: Release "never removes a node another holder created since",
// and a holder stops acting on its lease at Expires. The schedule that broke
// it: a holder stops renewing, the server removes its slot node, a waiter
// creates the same slot (a fresh node, data version 0, like a never-renewed
// one) and holds it, and then the first holder calls Release. The late
// Release must report the expiry and leave the new holder's node alone, so
// a third contender is not granted a lease while two others still hold:
// with 2 leases, never 3 holders.
func TestTTLLeaseLateReleaseKeepsNextHolder(t *testing.T) {
	srv := ttlServer(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const ttl = 500 * time.Millisecond
	m := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 2, ttl)
	stale, err := m.Acquire(ctx, "stale")
	if err != nil {
		t.Fatal(err)
	}
	other, err := m.Acquire(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	// "other" keeps renewing; "stale" lapses, and "next" takes its slot.
	renewCtx, stopRenew := context.WithCancel(ctx)
	renewed := make(chan error, 1)
	go func() {
		tick := time.NewTicker(ttl / 4)
		defer tick.Stop()
		for {
			select {
			case <-renewCtx.Done():
				renewed <- nil
				return
			case <-tick.C:
				if err := other.Renew(renewCtx); err != nil && renewCtx.Err() == nil {
					renewed <- err
					return
				}
			}
		}
	}()
	next, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 2, ttl).Acquire(ctx, "next")
	if err != nil {
		t.Fatal(err)
	}
	if next.Node() != stale.Node() {
		t.Fatalf("next holds %s, want the lapsed slot %s", next.Node(), stale.Node())
	}
	err = stale.Release(ctx)
	if !errors.Is(err, runtime.ErrLeaseExpired) {
		t.Fatalf("late Release = %v, want ErrLeaseExpired", err)
	}
	obs := connect(t, srv.Servers())
	data, _, err := obs.Conn().Get(next.Node())
	if err != nil {
		t.Fatalf("the next holder's node after the late Release: %v (the late Release deleted it)", err)
	}
	if !strings.Contains(string(data), `"holder":"next"`) {
		t.Fatalf("slot %s holds %s, want next's node", next.Node(), data)
	}
	// A third contender is not granted a lease while next and other hold.
	third := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 2, ttl)
	tctx, cancel := context.WithTimeout(ctx, ttl/2)
	le, err := third.Acquire(tctx, "third")
	cancel()
	if err == nil && time.Now().Before(next.Expires()) {
		t.Fatalf("a third holder got %s while next (until %v) and other held", le.Node(), next.Expires())
	}
	stopRenew()
	if err := <-renewed; err != nil {
		t.Fatalf("other's renewal: %v", err)
	}
}
