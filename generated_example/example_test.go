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

// The committed generated package works against a real ZooKeeper: the typed
// handle locks the path the spec declares, excludes a second contender, and
// hands over on Unlock.
func TestGeneratedOrderLock(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connect := func() *coord.Client {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return coord.New(s)
	}
	a, b := connect(), connect()

	l := a.OrderLock(7)
	if l.Path() != "/zkgen-example/locks/orders/7" {
		t.Fatalf("path %q", l.Path())
	}
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	other := b.OrderLock(7)
	if ok, err := other.TryLock(ctx); ok || err != nil {
		t.Fatalf("second contender TryLock = %v, %v; want false", ok, err)
	}
	// Another shard is another lock.
	if ok, err := b.OrderLock(8).TryLock(ctx); !ok || err != nil {
		t.Fatalf("shard 8 TryLock = %v, %v; want true", ok, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("TryLock after Unlock = %v, %v", ok, err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Unlock twice = %v", err)
	}
}

// The read/write lock and the semaphore of the example, through the
// generated handles.
func TestGeneratedTableLockAndSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sess, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	c := coord.New(sess)

	r1, r2 := c.TableLock("users").Read(), c.TableLock("users").Read()
	for _, r := range []runtime.LockHandle{r1, r2} {
		if err := r.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w := c.TableLock("users").Write()
	if ok, err := w.TryLock(ctx); ok || err != nil {
		t.Fatalf("writer with two readers in = %v, %v", ok, err)
	}
	if _, err := c.TableLock("../etc").Read().TryLock(ctx); !errors.Is(err, runtime.ErrInvalidPath) {
		t.Fatalf("hostile table name: %v", err)
	}
	for _, r := range []runtime.LockHandle{r1, r2} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := w.TryLock(ctx); !ok || err != nil {
		t.Fatalf("writer alone = %v, %v", ok, err)
	}
	w.Unlock(ctx)

	var leases []*runtime.Lease
	for i := 0; i < 3; i++ {
		le, err := c.Slots().Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		leases = append(leases, le)
	}
	hs, err := c.Slots().Holders(ctx)
	if err != nil || len(hs) != 3 {
		t.Fatalf("slots holders %v, %v", hs, err)
	}
	for _, le := range leases {
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
