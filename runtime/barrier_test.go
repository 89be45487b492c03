package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A barrier holds every waiter while it is up and releases them all when
// it is lowered; Wait on a barrier that is not up returns at once.
func TestBarrier(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t)
	node := testRoot(t) + "/start/run-1"
	ctx := testCtx(t, time.Minute)
	b := runtime.NewBarrier(connect(t, srv.Servers()), runtime.At(node))
	if err := b.Wait(ctx); err != nil {
		t.Fatalf("Wait on a barrier never raised = %v", err)
	}
	if err := b.Raise(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Raise(ctx); err != nil {
		t.Fatalf("Raise twice = %v", err)
	}
	const waiters = 5
	passed := make(chan int, waiters)
	for i := 0; i < waiters; i++ {
		w := runtime.NewBarrier(connect(t, srv.Servers()), runtime.At(node))
		go func() {
			if err := w.Wait(ctx); err != nil {
				t.Error(err)
			}
			passed <- i
		}()
	}
	// Each waiter is parked on its watch: none may have passed.
	waitWatchers(t, srv, node, waiters)
	if len(passed) != 0 {
		t.Fatalf("%d waiters passed a raised barrier", len(passed))
	}
	// A cancelled waiter returns ctx's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := runtime.NewBarrier(connect(t, srv.Servers()), runtime.At(node)).Wait(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Wait = %v", err)
	}
	if err := b.Lower(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < waiters; i++ {
		<-passed
	}
	if err := b.Lower(ctx); err != nil {
		t.Fatalf("Lower twice = %v", err)
	}
}

func fourLetter(t *testing.T, srv *zktest.Server, cmd string) string {
	t.Helper()
	out, err := zktest.FourLetter(srv.Addr(), cmd, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A double barrier of 5: nobody passes Enter before the fifth arrives,
// nobody passes Leave before all have left, and the directory is left
// empty.
func TestDoubleBarrier(t *testing.T) {
	srv := server(t)
	srv.RequireLocal(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const size = 5
	obs := connect(t, srv.Servers())
	ps := make([]*runtime.DoubleBarrier, size)
	for i := range ps {
		ps[i] = runtime.NewDoubleBarrier(connect(t, srv.Servers()), runtime.At(dir), size)
	}
	entered := make(chan int, size)
	for i := 0; i < size-1; i++ {
		go func() {
			if err := ps[i].Enter(ctx); err != nil {
				t.Error(err)
			}
			entered <- i
		}()
	}
	// Four participant nodes: the four are inside Enter, waiting.
	waitChildren(t, ctx, obs, dir, size-1)
	if len(entered) != 0 {
		t.Fatalf("%d passed Enter with %d of %d participants", len(entered), size-1, size)
	}
	if err := ps[size-1].Enter(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < size-1; i++ {
		<-entered
	}
	if err := ps[0].Enter(ctx); !errors.Is(err, runtime.ErrAlreadyHeld) {
		t.Fatalf("Enter twice = %v", err)
	}

	var nodes []string
	for _, p := range ps {
		nodes = append(nodes, p.Node())
	}
	slices.SortFunc(nodes, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) }) // by sequence
	if nodes[size-1] != ps[size-1].Node() {
		t.Fatalf("the last to enter should hold the highest node: %v", nodes)
	}
	// The first four leave; the fifth (the highest node: it arrived last)
	// has not. What remains: ready, the lowest node (its owner waits for
	// the highest) and the fifth's node.
	left := make(chan int, size)
	for i := 0; i < size-1; i++ {
		go func() {
			if err := ps[i].Leave(ctx); err != nil {
				t.Error(err)
			}
			left <- i
		}()
	}
	waitChildren(t, ctx, obs, dir, 3)
	// The seed's scheme: the lowest node's owner watches the highest node,
	// the three others watch the lowest, so the last one leaving wakes
	// one process (the lowest's owner), and the lowest leaving wakes the rest.
	lowest, highest := nodes[0], nodes[size-1]
	waitWatchers(t, srv, highest, 1)
	waitWatchers(t, srv, lowest, size-2)
	if w := parseWchp(fourLetter(t, srv, "wchp")); len(w[highest]) != 1 || len(w[lowest]) != size-2 {
		t.Fatalf("watchers: highest %v, lowest %v", w[highest], w[lowest])
	}
	if len(left) != 0 {
		t.Fatalf("%d passed Leave before the last participant left", len(left))
	}
	if err := ps[size-1].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < size-1; i++ {
		<-left
	}
	if err := ps[0].Leave(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Leave twice = %v", err)
	}
	if kids := childrenOf(t, obs, dir); len(kids) != 0 {
		t.Fatalf("left behind: %v", kids)
	}
}

// A participant that dies after Enter does not block the others' Leave,
// whether it held the lowest node or not.
func TestDoubleBarrierCrashedParticipant(t *testing.T) {
	srv := server(t)
	for _, victim := range []int{0, 2} {
		t.Run([]string{"lowest", "middle"}[victim/2], func(t *testing.T) {
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			const size = 5
			obs := connect(t, srv.Servers())
			sessions := make([]*runtime.Session, size)
			ps := make([]*runtime.DoubleBarrier, size)
			for i := range ps {
				sessions[i] = connect(t, srv.Servers())
				ps[i] = runtime.NewDoubleBarrier(sessions[i], runtime.At(dir), size)
			}
			// Enter one by one so node order is participant order. The last
			// one's node comes last anyway, and "ready" follows it at once,
			// so a count of exactly size may never be seen: do not wait
			// for it (its Enter returning is the wait).
			entered := make(chan error, size)
			for i := range ps {
				go func() { entered <- ps[i].Enter(ctx) }()
				if i < size-1 {
					waitChildren(t, ctx, obs, dir, i+1)
				}
			}
			for range ps {
				if err := <-entered; err != nil {
					t.Fatal(err)
				}
			}
			sessions[victim].Close()
			left := make(chan error, size)
			for i := range ps {
				if i != victim {
					go func() { left <- ps[i].Leave(ctx) }()
				}
			}
			for i := 0; i < size-1; i++ {
				if err := <-left; err != nil {
					t.Fatal(err)
				}
			}
			if kids := childrenOf(t, obs, dir); len(kids) != 0 {
				t.Fatalf("left behind: %v", kids)
			}
		})
	}
}

// Enter cancelled while waiting for the others removes its node (the only
// child of dir here).
func TestDoubleBarrierEnterCancel(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	d := runtime.NewDoubleBarrier(s, runtime.At(dir), 3)
	cctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { res <- d.Enter(cctx) }()
	waitChildren(t, ctx, s, dir, 1)
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Enter = %v", err)
	}
	// The node may have been created just as Enter was cancelled; then it
	// is removed in the background, right after Enter returned: it goes
	// (or the test's deadline fails it).
	waitChildren(t, ctx, s, dir, 0)
}

// Leave with a ctx that ended before the call still leaves: its node is
// deleted (the participant has left, it only does not wait for the
// others) and ctx's error is returned. Twenty times: before, the handle's
// mutex and the ended ctx were a random pick, and about half the Leaves
// returned at once, the node kept.
func TestDoubleBarrierLeaveEndedCtxDeletesNode(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	ended, cancel := context.WithCancel(ctx)
	cancel()
	for i := range 20 {
		dir := fmt.Sprintf("%s/%d", testRoot(t), i)
		d := runtime.NewDoubleBarrier(s, runtime.At(dir), 2)
		o := runtime.NewDoubleBarrier(connect(t, srv.Servers()), runtime.At(dir), 2)
		both := make(chan error, 1)
		go func() { both <- o.Enter(ctx) }()
		if err := d.Enter(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-both; err != nil {
			t.Fatal(err)
		}
		if err := d.Leave(ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("Leave with an ended ctx = %v, want context.Canceled", err)
		}
		waitChildren(t, ctx, s, dir, 2) // o's node and "ready": d's is gone
	}
}
