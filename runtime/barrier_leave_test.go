package runtime_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// Leaving a double barrier, a participant that is not the lowest learns
// the lowest's name from the ready node and lists the directory once, after
// the lowest has gone (it used to list it first too: n names in each of n
// Leaves). The lowest still waits for all the others.
func TestDoubleBarrierLeaveListsOnce(t *testing.T) {
	const size = 4
	ctx, dir, obs, fs, ps := doubleBarrierOf(t, size)
	errs := make(chan error, size)
	for _, p := range ps {
		go func() { errs <- p.Enter(ctx) }()
	}
	for range ps {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	seq := func(i int) string { n := ps[i].Node(); return n[len(n)-10:] }
	order := []int{0, 1, 2, 3}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(seq(a), seq(b)) })
	low, others := order[0], order[1:]
	for _, f := range fs {
		f.p.ResetCounts()
	}
	for _, i := range others {
		go func() { errs <- ps[i].Leave(ctx) }()
	}
	waitChildren(t, ctx, obs, dir, 2) // the lowest's node and ready
	if err := ps[low].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for range others {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range others {
		c := fs[i].p.Counts()
		if n := c.Requests[zktest.OpGetChildren2] + c.Requests[zktest.OpGetChildren]; n != 1 {
			t.Errorf("participant %d (not the lowest) listed the directory %d times leaving, want 1", i, n)
		}
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}

// Entering a double barrier, a participant reads the directory's child
// count and lists the children only when the barrier could be complete:
// the first size-1 participants list nothing, the last lists once.
func TestDoubleBarrierEnterListsOnlyWhenComplete(t *testing.T) {
	const size = 4
	ctx, dir, obs, fs, ps := doubleBarrierOf(t, size)
	errs := make(chan error, size)
	// The first three enter one after the other, each once it has read
	// the directory's child count (its second getData: the first is the
	// spec record's check, or the NoNode that makes the first one create
	// the directory) — so the count each reads is below size. Entering
	// them at once left that read to the scheduler: participant 0's came
	// after the fourth's create once in clean-clone CI, saw 4 children and
	// listed, as the last arrivals must.
	for i, p := range ps[:size-1] {
		counted := fs[i].p.RepliesReach(zktest.OpGetData, 2)
		go func() { errs <- p.Enter(ctx) }()
		select {
		case <-counted:
		case <-ctx.Done():
			t.Fatalf("participant %d never read the child count: %v", i, ctx.Err())
		}
	}
	waitChildren(t, ctx, obs, dir, size-1)
	if err := ps[size-1].Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for range size - 1 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range fs {
		c := f.p.Counts()
		want := int64(0)
		if i == size-1 {
			want = 1
		}
		if n := c.Requests[zktest.OpGetChildren2] + c.Requests[zktest.OpGetChildren]; n != want {
			t.Errorf("participant %d listed the directory %d times entering, want %d", i, n, want)
		}
	}
	for _, p := range ps {
		go func() { errs <- p.Leave(ctx) }()
	}
	for range ps {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// doubleBarrierOf starts a double barrier test: size participants on a
// test root, each on a session behind its own proxy, and an observer
// session.
func doubleBarrierOf(t *testing.T, size int) (context.Context, string, *runtime.Session, []faultyClient, []*runtime.DoubleBarrier) {
	t.Helper()
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	fs := make([]faultyClient, size)
	ps := make([]*runtime.DoubleBarrier, size)
	for i := range ps {
		fs[i] = newFaulty(t, srv)
		ps[i] = runtime.NewDoubleBarrier(fs[i].s, runtime.At(dir), size)
	}
	return ctx, dir, obs, fs, ps
}
