package example_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// The generated Client returns a new handle at each call. These tests use
// it the natural way — a tenure taken through c.X(p) in one place, asked
// about or given back through c.X(p) in another — for every kind whose
// handle keeps state: what one call's handle took, the next call's handle
// answers for (docs/spec.md, "Handles made per call"). Where the session
// holds through several handles and a fresh one cannot tell which one is
// meant, it refuses (ErrNotHeld) and changes nothing.

// fenced is a write for Guarded: it creates the node p.
func fenced(p string) *zk.CreateRequest {
	return &zk.CreateRequest{Path: p, Data: []byte("x"), Acl: zk.WorldACL(zk.PermAll)}
}

func TestHandlePerCallLock(t *testing.T) {
	ctx, c, s := clients(t, 2)
	if err := c[0].OrderLock(7).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	// Elsewhere, through new handles.
	if tok := c[0].OrderLock(7).Token(); tok == 0 {
		t.Error("Token through a new handle = 0 while the session holds the lock")
	}
	select {
	case <-c[0].OrderLock(7).Lost():
		t.Error("Lost through a new handle is closed while the session holds the lock")
	default:
	}
	if err := c[0].OrderLock(7).Context().Err(); err != nil {
		t.Errorf("Context through a new handle: %v", err)
	}
	if _, err := c[0].OrderLock(7).Guarded(ctx, fenced("/lock-fenced")); err != nil {
		t.Fatalf("Guarded through a new handle: %v", err)
	}
	if ok, err := c[1].OrderLock(7).TryLock(ctx); ok || err != nil {
		t.Fatalf("another session's TryLock while held = %v, %v", ok, err)
	}
	if err := c[0].OrderLock(7).Unlock(ctx); err != nil {
		t.Fatalf("Unlock through a new handle: %v", err)
	}
	if c[0].OrderLock(7).Token() != 0 {
		t.Error("Token through a new handle after Unlock is not 0")
	}
	other := c[1].OrderLock(7)
	if ok, err := other.TryLock(ctx); !ok || err != nil {
		t.Fatalf("another session's TryLock after the Unlock = %v, %v: the lock was not released", ok, err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s[0].Exists(ctx, "/lock-fenced"); !ok {
		t.Error("the guarded write is missing")
	}
}

func TestHandlePerCallRWLock(t *testing.T) {
	ctx, c, _ := clients(t, 2)
	if err := c[0].TableLock("orders").Write().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if c[0].TableLock("orders").Write().Token() == 0 {
		t.Error("the writer's Token through a new handle = 0")
	}
	if err := c[0].TableLock("orders").Write().Unlock(ctx); err != nil {
		t.Fatalf("the writer's Unlock through a new handle: %v", err)
	}
	if ok, err := c[1].TableLock("orders").Read().TryLock(ctx); !ok || err != nil {
		t.Fatalf("a reader after the writer's Unlock = %v, %v", ok, err)
	}

	// Two readers on one session: a new handle cannot tell which one to
	// release, and says so.
	r1, r2 := c[0].TableLock("items").Read(), c[0].TableLock("items").Read()
	for _, r := range []runtime.LockHandle{r1, r2} {
		if err := r.Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	err := c[0].TableLock("items").Read().Unlock(ctx)
	if !errors.Is(err, runtime.ErrNotHeld) || !strings.Contains(err.Error(), "2 handles") {
		t.Fatalf("Unlock through a new handle with two readers = %v", err)
	}
	if ok, err := c[1].TableLock("items").Write().TryLock(ctx); ok || err != nil {
		t.Fatalf("a writer after the refused Unlock = %v, %v: a reader was released", ok, err)
	}
	if errors.Join(r1.Unlock(ctx), r2.Unlock(ctx)) != nil {
		t.Fatal("the readers' own Unlock failed")
	}
}

func TestHandlePerCallSemaphore(t *testing.T) {
	ctx, c, _ := clients(t, 1)
	if err := c[0].Slots().Lock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c[0].Slots().Lost():
		t.Error("Lost through a new handle is closed while the session holds a lease")
	default:
	}
	if err := c[0].Slots().Unlock(ctx); err != nil {
		t.Fatalf("Unlock through a new handle: %v", err)
	}
	if hs, err := c[0].Slots().Holders(ctx); err != nil || len(hs) != 0 {
		t.Fatalf("holders after the Unlock: %v, %v", hs, err)
	}

	// Two leases on one session: a new handle refuses to pick one.
	a, b := c[0].Slots(), c[0].Slots()
	if errors.Join(a.Lock(ctx), b.Lock(ctx)) != nil {
		t.Fatal("Lock failed")
	}
	if err := c[0].Slots().Unlock(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Unlock through a new handle with two leases = %v", err)
	}
	if hs, _ := c[0].Slots().Holders(ctx); len(hs) != 2 {
		t.Fatalf("%d holders after the refused Unlock, want 2", len(hs))
	}
	if errors.Join(a.Unlock(ctx), b.Unlock(ctx)) != nil {
		t.Fatal("the holders' own Unlock failed")
	}
}

func TestHandlePerCallDoubleBarrier(t *testing.T) {
	ctx, c, _ := clients(t, 3)
	errs := make([]error, len(c))
	var wg sync.WaitGroup
	for i := range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = c[i].Epoch(1).Enter(ctx); errs[i] != nil {
				return
			}
			if c[i].Epoch(1).Node() == "" {
				errs[i] = errors.New("Node through a new handle is empty after Enter")
				return
			}
			errs[i] = c[i].Epoch(1).Leave(ctx)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if c[0].Epoch(1).Node() != "" {
		t.Error("Node through a new handle after Leave is not empty")
	}
}

func TestHandlePerCallTwoPhaseCommit(t *testing.T) {
	ctx, c, _ := clients(t, 2)
	if err := c[0].Deploy("v2").Propose(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range c[1].Deploy("v2").Participants() {
		if err := c[1].Deploy("v2").Join(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := c[1].Deploy("v2").Vote(ctx, p, runtime.Commit); err != nil {
			t.Fatalf("%s: Vote through a new handle after Join: %v", p, err)
		}
	}
	if d, err := c[0].Deploy("v2").Outcome(ctx); d != runtime.Commit || err != nil {
		t.Fatalf("Outcome = %v, %v", d, err)
	}
	if err := c[0].Deploy("v2").Remove(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestHandlePerCallPartitioner(t *testing.T) {
	ctx, c, s := clients(t, 1)
	stayCtx, leave := context.WithCancel(ctx)
	acquired := make(chan int, 64)
	stayed := make(chan error, 1)
	go func() {
		stayed <- c[0].Shards().Stay(stayCtx, coord.Member{Host: "a", Port: 1},
			runtime.WithPartitionHooks(func(i int) { acquired <- i }, nil))
	}()
	for range 64 {
		var i int
		select {
		case i = <-acquired:
		case err := <-stayed:
			t.Fatalf("Stay returned %v", err)
		}
		// A worker started from the hook asks through a new handle.
		if !c[0].Shards().Owns(i) || c[0].Shards().Token(i) == 0 {
			t.Fatalf("partition %d: Owns %v, Token %d through a new handle while the session's member owns it",
				i, c[0].Shards().Owns(i), c[0].Shards().Token(i))
		}
		if _, err := c[0].Shards().Guarded(ctx, i, fenced(fmt.Sprintf("/shard-%d", i))); err != nil {
			t.Fatalf("partition %d: Guarded through a new handle: %v", i, err)
		}
	}
	leave()
	if err := <-stayed; err != nil {
		t.Fatal(err)
	}
	if c[0].Shards().Owns(0) {
		t.Error("Owns(0) through a new handle after Stay returned")
	}
	if _, err := c[0].Shards().Guarded(ctx, 0, fenced("/shard-late")); !errors.Is(err, runtime.ErrPartitionLost) {
		t.Errorf("Guarded after Stay returned = %v, want ErrPartitionLost", err)
	}
	if ok, _ := s[0].Exists(ctx, "/shard-63"); !ok {
		t.Error("the guarded write of partition 63 is missing")
	}
}

// The prefetching queue's buffer is the session's: a Take through a new
// handle serves what the previous one took in its chunk.
func TestHandlePerCallPrefetchQueue(t *testing.T) {
	ctx, c, _ := clients(t, 1)
	for i := range 3 {
		if err := c[0].Jobs().Put(ctx, coord.Job{Name: "j", Attempt: i}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		j, err := c[0].Jobs().Take(ctx)
		if err != nil || j.Attempt != i {
			t.Fatalf("Take %d through a new handle = %+v, %v", i, j, err)
		}
	}
	if n, err := c[0].Jobs().Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
}
