package example_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// LockAll over the example's locks: two clients asking for the same locks
// in opposite orders, over and over, never deadlock, and never hold the set
// at once.
func TestGeneratedLockAllOppositeOrders(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func() *coord.Client {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return coord.New(s)
	}
	inside := make(chan struct{}, 1) // a token: whoever holds the set holds it
	run := func(c *coord.Client, reverse bool) error {
		for range 10 {
			ms := []runtime.Locker{c.OrderLock(1), c.OrderLock(2), c.TableLock("users").Write()}
			if reverse {
				ms[0], ms[2] = ms[2], ms[0]
			}
			g, err := runtime.LockAll(ctx, ms...)
			if err != nil {
				return err
			}
			select {
			case inside <- struct{}{}:
			default:
				t.Error("both clients hold the set")
			}
			<-inside
			if err := g.Unlock(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	a, b := client(), client()
	errs := make(chan error, 2)
	go func() { errs <- run(a, false) }()
	go func() { errs <- run(b, true) }()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// The example's lease outlives its holder's session, is taken back by the
// same holder id on a new session, and, not renewed, ends on the server
// after its TTL — not before the holder's Expires — so another holder gets
// the slot.
func TestGeneratedLeaseOutlivesSession(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t, zktest.WithTTLNodes(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *runtime.Session {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1 := connect()
	le, err := coord.New(s1).Leases().Acquire(ctx, "worker-a")
	if err != nil {
		t.Fatal(err)
	}
	s1.Close()
	obs := connect()
	if ok, _, err := obs.Conn().Exists(le.Node()); !ok || err != nil {
		t.Fatalf("the lease did not outlive its session: %v", err)
	}
	back, err := coord.New(connect()).Leases().Acquire(ctx, "worker-a")
	if err != nil {
		t.Fatal(err)
	}
	if back.Node() != le.Node() {
		t.Fatalf("re-attach took %s, not %s", back.Node(), le.Node())
	}
	// Fill the other slot, then wait for the unrenewed lease to end.
	c := coord.New(connect())
	other, err := c.Leases().Acquire(ctx, "worker-b")
	if err != nil {
		t.Fatal(err)
	}
	third, err := c.Leases().Acquire(ctx, "worker-c") // blocks until the server removes worker-a's node
	if err != nil {
		t.Fatal(err)
	}
	// worker-c got the slot of a lease that was not renewed (worker-a's,
	// or worker-b's, which is not renewed either): never before that
	// lease's end by its holder's clock.
	freed := back
	if third.Node() == other.Node() {
		freed = other
	}
	if now := time.Now(); now.Before(freed.Expires()) {
		t.Fatalf("a third holder got in %v before %s's lease expired", freed.Expires().Sub(now), freed.Holder())
	}
	if err := freed.Renew(ctx); !errors.Is(err, runtime.ErrLeaseExpired) {
		t.Fatalf("Renew of an expired lease = %v", err)
	}
	for _, l := range []*runtime.TTLLease{back, other, third} {
		if l == freed {
			continue
		}
		if err := l.Release(ctx); err != nil && !errors.Is(err, runtime.ErrLeaseExpired) {
			t.Fatal(err)
		}
	}
	// A lease released before its Expires is deleted at once; one released
	// after it (worker-b's may be by now: it was never renewed either) sends
	// nothing — its slot may be another holder's by then — and the server
	// removes its node once the TTL has run out. Either way nothing stays.
	for {
		kids, _, w, err := obs.Conn().ChildrenW("/zkgen-example/leases/workers")
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 0 {
			return
		}
		select {
		case <-w:
		case <-ctx.Done():
			t.Fatalf("orphans: %v", kids)
		}
	}
}
