package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Held and Context().Err() consult the session's clock when asked (see
// TestPause* for the frozen process). The other side of that promise: a
// healthy session never reads as over. An idle holder on a 2 s session
// (pings every 667 ms), its replies delayed 100 ms each way, is asked every
// 2 ms for six ping intervals: Held is true and the context alive at every
// call, and the clock's age stays under a third of the timeout plus the
// round trip.
func TestHeldStaysTrueOnIdleSession(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	const timeout = 2 * time.Second
	s := connect(t, []string{p.Addr()}, runtime.WithSessionTimeout(timeout))
	l := runtime.NewLock(s, runtime.At(testRoot(t)))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	p.Delay(100 * time.Millisecond)
	lctx := l.Context()
	var worst time.Duration
	for end := time.Now().Add(3 * timeout); time.Now().Before(end); {
		if !l.Held() || lctx.Err() != nil {
			t.Fatalf("a healthy idle session read as over: Held %v, ctx %v, last answer sent %v ago",
				l.Held(), lctx.Err(), runtime.AnsweredAgo(s))
		}
		worst = max(worst, runtime.AnsweredAgo(s))
		time.Sleep(2 * time.Millisecond) // the asking cadence, not a synchronisation
	}
	t.Logf("oldest answer seen: sent %v before the check (timeout %v, ends at %v)", worst, timeout, timeout*2/3)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// A guarded write whose reply is lost (the server applied it, the
// connection was cut before the reply) says the outcome is unknown, not
// that the lock was lost; the lock is still held, and the write applied.
// One refused because the lock is gone says ErrLockLost, whatever the
// transport did on the way.
func TestGuardedOutcomeUnknown(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	obs := connect(t, srv.Servers())
	data := dir + "-data"
	if _, err := obs.Conn().Create("/zkgen-test", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := obs.Conn().Create(data, []byte("v0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := zktest.NewProxy(t, srv.Addr())
	l := runtime.NewLock(connect(t, []string{p.Addr()}), runtime.At(dir))
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	cut := p.CutAfterRequest(zktest.OpMulti)
	_, err := l.Guarded(ctx, &zk.SetDataRequest{Path: data, Data: []byte("v1"), Version: -1})
	<-cut
	if !errors.Is(err, runtime.ErrOutcomeUnknown) || errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("Guarded with its reply lost = %v, want ErrOutcomeUnknown (not ErrLockLost)", err)
	}
	if b, _, gerr := obs.Conn().Get(data); gerr != nil || string(b) != "v1" {
		t.Fatalf("data after the lost reply: %q, %v (the server applied it)", b, gerr)
	}
	if !l.Held() {
		t.Fatal("the lock reads as lost after a connection cut")
	}
	t.Log(err)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// fencedData creates a node for guarded writes and returns its path and a
// reader of its data.
func fencedData(t *testing.T, obs *runtime.Session, path string) func() string {
	t.Helper()
	if _, err := obs.Conn().Create("/zkgen-test", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := obs.Conn().Create(path, []byte("v0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return func() string {
		b, _, err := obs.Conn().Get(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
}

func setTo(path, v string) *zk.SetDataRequest {
	return &zk.SetDataRequest{Path: path, Data: []byte(v), Version: -1}
}

// Every tenure fences writes (Guarded): applied while it holds; once its
// node is deleted by someone else (an operator, a forced revocation) a
// write is refused with the tenure's own sentinel and changes nothing, and
// Held says false; after the tenure is given up, ErrNotHeld.
func TestGuardedEveryTenure(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	type tenure interface {
		Node() string
		Held() bool
		Lost() <-chan struct{}
	}
	cases := []struct {
		name     string
		sentinel error
		take     func(s *runtime.Session, dir string) (tenure, func(ops ...any) error, func() error)
	}{
		{"leadership", runtime.ErrLeadershipLost, func(s *runtime.Session, dir string) (tenure, func(ops ...any) error, func() error) {
			l, err := runtime.NewElection(s, runtime.At(dir), runtime.StringCodec()).Campaign(ctx, "me")
			if err != nil {
				t.Fatal(err)
			}
			return l, func(ops ...any) error { _, err := l.Guarded(ctx, ops...); return err }, func() error { return l.Resign(ctx) }
		}},
		{"membership", runtime.ErrMembershipLost, func(s *runtime.Session, dir string) (tenure, func(ops ...any) error, func() error) {
			m, err := runtime.NewGroup(s, runtime.At(dir), runtime.StringCodec()).Join(ctx, "me")
			if err != nil {
				t.Fatal(err)
			}
			return m, func(ops ...any) error { _, err := m.Guarded(ctx, ops...); return err }, func() error { return m.Leave(ctx) }
		}},
		{"semaphore", runtime.ErrLockLost, func(s *runtime.Session, dir string) (tenure, func(ops ...any) error, func() error) {
			le, err := runtime.NewSemaphore(s, runtime.At(dir), 2).Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return le, func(ops ...any) error { _, err := le.Guarded(ctx, ops...); return err }, func() error { return le.Release(ctx) }
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := testRoot(t)
			value := fencedData(t, obs, dir+"-data")
			s := connect(t, srv.Servers())
			te, guarded, giveUp := c.take(s, dir)
			if !te.Held() {
				t.Fatal("Held is false right after taking the tenure")
			}
			if err := guarded(setTo(dir+"-data", "v1")); err != nil || value() != "v1" {
				t.Fatalf("Guarded while held = %v, value %q", err, value())
			}
			if err := obs.Conn().Delete(te.Node(), -1); err != nil {
				t.Fatalf("deleting %s: %v", te.Node(), err)
			}
			<-te.Lost()
			err := guarded(setTo(dir+"-data", "stale"))
			if !errors.Is(err, c.sentinel) || value() != "v1" {
				t.Fatalf("Guarded after the node was deleted = %v (want %v), value %q", err, c.sentinel, value())
			}
			if te.Held() {
				t.Fatal("Held after the node was deleted")
			}
			_ = giveUp()

			// Given up: ErrNotHeld, nothing sent.
			te, guarded, giveUp = c.take(s, dir)
			if err := giveUp(); err != nil {
				t.Fatal(err)
			}
			if err := guarded(setTo(dir+"-data", "late")); !errors.Is(err, runtime.ErrNotHeld) || value() != "v1" {
				t.Fatalf("Guarded after giving up = %v (want ErrNotHeld), value %q", err, value())
			}
			if te.Held() {
				t.Fatal("Held after giving up")
			}
		})
	}
}

// A partition's fencing: Guarded(i) writes while the member owns i; once a
// rebalance gave i to another member, the old owner's Guarded(i) is refused
// with ErrPartitionLost and changes nothing, Owns(i) is false, and the new
// owner's Token(i) is above the old owner's.
func TestGuardedPartition(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t) + "/p"
	obs := connect(t, srv.Servers())
	dataPath := testRoot(t) + "-data"
	value := fencedData(t, obs, dataPath)
	const n = 2
	pa := runtime.NewPartitioner(connect(t, srv.Servers()), runtime.At(dir), n, runtime.StringCodec())
	if pa.Owns(0) || pa.Token(0) != 0 {
		t.Fatal("a handle that has not joined owns partition 0")
	}
	if _, err := pa.Guarded(ctx, 0, setTo(dataPath, "x")); !errors.Is(err, runtime.ErrPartitionLost) {
		t.Fatalf("Guarded on a handle that has not joined = %v, want ErrPartitionLost", err)
	}
	a, err := pa.Join(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	owned := a.Owned()
	for set := range owned {
		if len(set) == n {
			break
		}
	}
	go func() {
		for range owned { // a reader that keeps up: releases need not wait
		}
	}()
	tokens := map[int]int64{}
	for i := range n {
		if !a.Owns(i) || a.Token(i) == 0 || !pa.Owns(i) || pa.Token(i) != a.Token(i) {
			t.Fatalf("partition %d: Owns %v, Token %d; the handle's %v, %d", i, a.Owns(i), a.Token(i), pa.Owns(i), pa.Token(i))
		}
		tokens[i] = a.Token(i)
		if _, err := a.Guarded(ctx, i, setTo(dataPath, "a")); err != nil || value() != "a" {
			t.Fatalf("Guarded(%d) while owned = %v, value %q", i, err, value())
		}
	}
	acquiredB := make(chan int, n)
	b, err := runtime.NewPartitioner(connect(t, srv.Servers()), runtime.At(dir), n, runtime.StringCodec()).Join(ctx, "b",
		runtime.WithPartitionHooks(func(i int) { acquiredB <- i }, nil), runtime.WithRebalanceDelay(0))
	if err != nil {
		t.Fatal(err)
	}
	moved := <-acquiredB
	if a.Owns(moved) || pa.Owns(moved) {
		t.Fatalf("a still owns partition %d, which b acquired", moved)
	}
	if _, err := pa.Guarded(ctx, moved, setTo(dataPath, "stale")); !errors.Is(err, runtime.ErrPartitionLost) || value() != "a" {
		t.Fatalf("the old owner's handle Guarded(%d) = %v, value %q", moved, err, value())
	}
	if _, err := a.Guarded(ctx, moved, setTo(dataPath, "stale")); !errors.Is(err, runtime.ErrPartitionLost) || errors.Is(err, runtime.ErrMembershipLost) || value() != "a" {
		t.Fatalf("the old owner's Guarded(%d) = %v (want ErrPartitionLost only), value %q", moved, err, value())
	}
	if _, err := b.Guarded(ctx, moved, setTo(dataPath, "b")); err != nil || value() != "b" {
		t.Fatalf("the new owner's Guarded(%d) = %v, value %q", moved, err, value())
	}
	if tb := b.Token(moved); tb <= tokens[moved] {
		t.Fatalf("partition %d: the new owner's token %d is not above the old owner's %d", moved, tb, tokens[moved])
	}
	t.Logf("partition %d moved: token %d -> %d", moved, tokens[moved], b.Token(moved))
}

// A TTL lease fences writes on its slot node's version: applied while
// held; from Expires on refused with ErrLeaseExpired without being sent
// (Held false), even though the server has not removed the node yet.
func TestGuardedTTLLease(t *testing.T) {
	srv := ttlServer(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	obs := connect(t, srv.Servers())
	dataPath := dir + "-data"
	value := fencedData(t, obs, dataPath)
	const ttl = 300 * time.Millisecond
	le, err := runtime.NewTTLLeases(connect(t, srv.Servers()), runtime.At(dir), 1, ttl).Acquire(ctx, "h")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := le.Guarded(ctx, setTo(dataPath, "v1")); err != nil || value() != "v1" || !le.Held() {
		t.Fatalf("Guarded while held = %v, value %q, Held %v", err, value(), le.Held())
	}
	if le.Token() == 0 {
		t.Fatal("Token is 0 while held")
	}
	time.Sleep(time.Until(le.Expires())) // the lease's own end, by its clock
	if le.Held() {
		t.Fatal("Held after Expires")
	}
	if _, err := le.Guarded(ctx, setTo(dataPath, "stale")); !errors.Is(err, runtime.ErrLeaseExpired) || value() != "v1" {
		t.Fatalf("Guarded after Expires = %v (want ErrLeaseExpired), value %q", err, value())
	}
}
