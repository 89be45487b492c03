package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Two processes whose specs give one semaphore different lease counts: the
// second is refused with ErrSpecMismatch before it takes part (it creates
// nothing), and the first keeps working.
func TestSpecGuardSemaphore(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	old := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 3)
	le, err := old.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer := connect(t, srv.Servers())
	_, err = runtime.NewSemaphore(newer, runtime.At(dir), 5).Acquire(ctx)
	if !errors.Is(err, runtime.ErrSpecMismatch) {
		t.Fatalf("Acquire with 5 leases where 3 are recorded = %v, want ErrSpecMismatch", err)
	}
	t.Logf("refused: %v", err)
	for _, sub := range []string{"", "/leases", "/locks"} {
		for _, k := range childrenOf(t, newer, dir+sub) {
			if _, st, err := newer.Conn().Get(dir + sub + "/" + k); err == nil && st.EphemeralOwner == newer.ID() {
				t.Errorf("the refused handle created %s%s/%s", dir, sub, k)
			}
		}
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	le, err = old.Acquire(ctx)
	if err != nil {
		t.Fatalf("the first process after the refusal: %v", err)
	}
	if err := le.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Another handle with the recorded count, on the refused session, works.
	if _, err := runtime.NewSemaphore(newer, runtime.At(dir), 3).Acquire(ctx); err != nil {
		t.Fatalf("a matching handle: %v", err)
	}
}

// The other recorded parameters, by zkgen breaking's rules: a priority
// queue may gain a lowest level but not lose one; delivery, double barrier
// size, lock kind and layout must be equal; a directory without a record
// (an older zkgen, or a peer library) accepts every handle.
func TestSpecGuardRules(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	a, b := connect(t, srv.Servers()), connect(t, srv.Servers())
	codec := runtime.StringCodec()
	mismatch := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, runtime.ErrSpecMismatch) {
			t.Errorf("%s = %v, want ErrSpecMismatch", what, err)
		}
	}
	ok := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s = %v, want nil", what, err)
		}
	}

	pq := runtime.At(testRoot(t))
	ok("Put, 3 levels", runtime.NewPriorityQueue(a, pq, codec, 3).Put(ctx, 0, "x"))
	ok("Put, a lowest level appended", runtime.NewPriorityQueue(b, pq, codec, 4).Put(ctx, 3, "y"))
	mismatch("Put, a level removed", runtime.NewPriorityQueue(connect(t, srv.Servers()), pq, codec, 2).Put(ctx, 0, "z"))
	_, err := runtime.NewPriorityQueue(connect(t, srv.Servers()), pq, codec, 2).Take(ctx)
	mismatch("Take, a level removed", err)
	_, err = runtime.NewAckPriorityQueue(connect(t, srv.Servers()), pq, codec, 3).Take(ctx)
	mismatch("Take, at-least-once on an at-most-once queue", err)

	named := runtime.At(testRoot(t))
	names := func(ns ...string) runtime.QueueOption { return runtime.WithPriorityNames(ns...) }
	ok("Put, urgent > normal > bulk", runtime.NewPriorityQueue(a, named, codec, 3, names("urgent", "normal", "bulk")).Put(ctx, 0, "x"))
	ok("Put, a lowest level appended", runtime.NewPriorityQueue(b, named, codec, 4, names("urgent", "normal", "bulk", "idle")).Put(ctx, 3, "y"))
	mismatch("Put, two levels swapped", runtime.NewPriorityQueue(connect(t, srv.Servers()), named, codec, 3, names("urgent", "bulk", "normal")).Put(ctx, 0, "z"))
	mismatch("Put, a level inserted", runtime.NewPriorityQueue(connect(t, srv.Servers()), named, codec, 4, names("urgent", "high", "normal", "bulk")).Put(ctx, 0, "z"))

	q := runtime.At(testRoot(t))
	ok("Put, at-most-once", runtime.NewQueue(a, q, codec).Put(ctx, "x"))
	mismatch("Put, at-least-once", runtime.NewAckQueue(b, q, codec).Put(ctx, "y"))

	db := runtime.At(testRoot(t))
	enter := make(chan error, 1)
	go func() { enter <- runtime.NewDoubleBarrier(a, db, 2).Enter(ctx) }()
	waitChildren(t, ctx, b, db.String(), 1)
	mismatch("Enter, size 3 where 2 is recorded", runtime.NewDoubleBarrier(b, db, 3).Enter(ctx))
	ok("Enter, size 2", runtime.NewDoubleBarrier(b, db, 2).Enter(ctx))
	ok("the first Enter", <-enter)

	l := runtime.At(testRoot(t))
	ok("Lock", runtime.NewLock(a, l).Lock(ctx))
	mismatch("RWLock on a lock's path", runtime.NewRWLock(b, l).Write().Lock(ctx))
	mismatch("kazoo layout on a curator lock's path", runtime.NewLock(b, l, runtime.WithLayout(runtime.LayoutKazoo)).Lock(ctx))

	legacy := testRoot(t)
	if _, err := a.CreatePersistent(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	le, err := runtime.NewSemaphore(a, runtime.At(legacy), 3).Acquire(ctx)
	ok("a semaphore on a directory without a record", err)
	le2, err := runtime.NewSemaphore(b, runtime.At(legacy), 5).Acquire(ctx)
	ok("another lease count there", err)
	_ = le.Release(ctx)
	_ = le2.Release(ctx)
}

// The guard costs one read per directory and session, never one per
// operation: the second acquire-release cycle of a handle reads no record.
func TestSpecGuardCost(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	f := newFaulty(t, srv)
	m := runtime.NewSemaphore(f.s, runtime.At(dir), 2)
	cycle := func() zktest.Counts {
		f.p.ResetCounts()
		le, err := m.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := le.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return f.p.Counts()
	}
	first, second := cycle(), cycle()
	t.Logf("requests: first cycle %d, second %d", first.Total(), second.Total())
	// Two directories are guarded: the semaphore's and its internal
	// lock's.
	if g1, g2 := first.Requests[zktest.OpGetData], second.Requests[zktest.OpGetData]; g1 != 2 || g2 != 0 {
		t.Errorf("getData: first cycle %d, second %d; want each of the 2 records read once, in the first", g1, g2)
	}
}
