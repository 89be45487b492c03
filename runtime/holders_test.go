package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// The session's registry of holders (holders.go) answers a fresh handle's
// questions; it must stay bounded by the tenures the session has, whatever
// the number of parameter values used (a lock per order id): every entry
// goes with its release, Leave or decision.
func TestHoldersGoWithTheirTenures(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	root := testRoot(t)
	s := connect(t, srv.Servers())
	lock := func(i int) *runtime.Lock { return runtime.NewLock(s, runtime.At(root+"/locks").Int("id", i)) }
	const n = 50
	for i := range n {
		if err := lock(i).Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := runtime.HeldResources(s); got != n {
		t.Fatalf("%d resources registered while %d locks are held", got, n)
	}
	for i := range n {
		if err := lock(i).Unlock(ctx); err != nil {
			t.Fatalf("lock %d: Unlock through a new handle: %v", i, err)
		}
	}
	if got := runtime.HeldResources(s); got != 0 {
		t.Fatalf("%d resources registered after every lock was released", got)
	}

	sem := func() *runtime.Semaphore { return runtime.NewSemaphore(s, runtime.At(root+"/sem"), 2) }
	le, err := sem().Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	part := runtime.NewPartitioner(s, runtime.At(root+"/part"), 4, runtime.StringCodec())
	a, err := part.Join(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for range a.Owned() { // read: releases wait for the stream
		}
	}()
	if err := a.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	barrier := func() *runtime.DoubleBarrier { return runtime.NewDoubleBarrier(s, runtime.At(root+"/barrier"), 1) }
	if err := barrier().Enter(ctx); err != nil {
		t.Fatal(err)
	}
	if err := barrier().Leave(ctx); err != nil {
		t.Fatalf("Leave through a new handle: %v", err)
	}
	tx := func() *runtime.TwoPhaseCommit[[]byte] {
		return runtime.NewTwoPhaseCommit(s, runtime.At(root+"/tx"), runtime.BytesCodec(), []runtime.Participant{"p"}, runtime.WithCoordinatorNotify())
	}
	if err := tx().Propose(ctx); err != nil {
		t.Fatal(err)
	}
	if err := tx().Vote(ctx, "p", runtime.Commit); err != nil {
		t.Fatal(err)
	}
	if d, err := tx().Outcome(ctx); d != runtime.Commit || err != nil {
		t.Fatalf("Outcome through a new handle = %v, %v", d, err)
	}
	if got := runtime.HeldResources(s); got != 0 {
		t.Fatalf("%d resources registered after the lease, the membership, the barrier and the transaction ended", got)
	}
}

// Only a handle that has never tried to lock answers for its session: a
// handle that locked and unlocked answers for itself, so a second Unlock
// on it (a deferred one after an early one) is ErrNotHeld and does not
// release what another handle of the session holds. And a new handle's
// Lock is still a new contender: two goroutines of one session exclude
// each other.
func TestFreshHandleOnly(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := runtime.At(testRoot(t))
	s := connect(t, srv.Servers())
	first := runtime.NewLock(s, dir)
	if err := first.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := runtime.NewLock(s, dir).TryLock(ctx); ok || err != nil {
		t.Fatalf("a new handle's TryLock while the session holds the lock = %v, %v", ok, err)
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	second := runtime.NewLock(s, dir)
	if err := second.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("a second Unlock on a handle that unlocked = %v, want ErrNotHeld", err)
	}
	if first.Token() != 0 || first.Held() {
		t.Fatal("a handle that unlocked answers for another handle's tenure")
	}
	if !second.Held() || !runtime.NewLock(s, dir).Held() {
		t.Fatal("the second holder's lock was released by the first handle's second Unlock")
	}
	if tok := runtime.NewLock(s, dir).Token(); tok != second.Token() {
		t.Fatalf("a new handle's Token %d, the holder's %d", tok, second.Token())
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
