package example_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/runtimetest"
)

// applyOrder is application code: it depends on coord.API, not on a
// ZooKeeper session, so its unit test needs no server.
func applyOrder(ctx context.Context, c coord.API, shard int, apply func(token int64) error) error {
	l := c.OrderLock(shard)
	if err := l.Lock(ctx); err != nil {
		return err
	}
	defer l.Unlock(context.WithoutCancel(ctx))
	return apply(l.Token())
}

// fakeLock fakes the few lock methods applyOrder uses; the embedded
// interface stands in for the rest (calling them would panic).
type fakeLock struct {
	coord.OrderLockHandle
	locked, unlocked bool
	lockErr          error
}

func (f *fakeLock) Lock(context.Context) error   { f.locked = true; return f.lockErr }
func (f *fakeLock) Unlock(context.Context) error { f.unlocked = true; return nil }
func (f *fakeLock) Token() int64                 { return 42 }

type fakeClient struct {
	coord.API
	lock  *fakeLock
	shard int
}

func (f *fakeClient) OrderLock(shard int) coord.OrderLockHandle { f.shard = shard; return f.lock }

// A user's unit test fakes a generated handle through its interface.
func TestFakeGeneratedHandle(t *testing.T) {
	fc := &fakeClient{lock: &fakeLock{}}
	var token int64
	if err := applyOrder(context.Background(), fc, 7, func(tok int64) error { token = tok; return nil }); err != nil {
		t.Fatal(err)
	}
	if fc.shard != 7 || !fc.lock.locked || !fc.lock.unlocked || token != 42 {
		t.Fatalf("fake saw shard %d locked %v unlocked %v token %d", fc.shard, fc.lock.locked, fc.lock.unlocked, token)
	}
	fc.lock = &fakeLock{lockErr: runtime.ErrSessionExpired}
	if err := applyOrder(context.Background(), fc, 1, nil); !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("lock failure not passed on: %v", err)
	}
}

// withSlot is application code: it runs work under one of the slots
// semaphore's leases, stopping when the lease is lost.
func withSlot(ctx context.Context, c coord.API, work func(ctx context.Context, token int64) error) error {
	le, err := c.Slots().Acquire(ctx)
	if err != nil {
		return err
	}
	defer le.Release(context.WithoutCancel(ctx))
	return work(le.Context(), le.Token())
}

// fakeSlots returns a lease that runtimetest holds for real.
type fakeSlots struct {
	coord.SlotsHandle
	lease *runtime.Lease
}

func (f fakeSlots) Acquire(context.Context) (*runtime.Lease, error) { return f.lease, nil }

type slotsClient struct {
	coord.API
	slots fakeSlots
}

func (c slotsClient) Slots() coord.SlotsHandle { return c.slots }

// A fake handle hands out a real lease (runtimetest): the code under test
// sees its token, stops when it is taken away, and releases it.
func TestFakeHandleReturnsRealLease(t *testing.T) {
	e := runtimetest.New(t)
	lease := e.Lease()
	c := slotsClient{slots: fakeSlots{lease: lease}}
	err := withSlot(context.Background(), c, func(ctx context.Context, token int64) error {
		if token != lease.Token() || token <= 0 {
			t.Errorf("token %d, the lease's %d", token, lease.Token())
		}
		e.Take(lease.Node()) // an operator deletes it mid-work
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, runtime.ErrLockLost) {
		t.Fatalf("work under a taken lease ended with %v, want ErrLockLost", err)
	}
}
