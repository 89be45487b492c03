package inspect

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
	"github.com/zkgen/zkgen/spec"
)

// TestReapVanished: a node listed by reap but deleted before reap's delete
// comes is reported as vanished, not as removed and not silently dropped.
// The hook between listing and deleting makes the race happen every time.
func TestReapVanished(t *testing.T) {
	ctx, root, s, sessions := reapEnv(t, `order_lock: {kind: lock, path: "/locks/orders/{shard:int}"}`, 2)
	a, b := sessions[0], sessions[1]
	var held []*runtime.Lock
	for _, shard := range []string{"7", "8"} {
		l := runtime.NewLock(a, runtime.At(root+"/locks/orders/"+shard))
		if err := l.Lock(ctx); err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	gone := held[0]
	node := func(l *runtime.Lock) string {
		hs, err := l.Holders(ctx)
		if err != nil || len(hs) != 1 {
			t.Fatalf("holders %v, %v", hs, err)
		}
		return hs[0].Node
	}
	goneNode, keptNode := node(held[0]), node(held[1])

	afterList = func(dir string) {
		if dir == root+"/locks/orders/7" {
			afterList = nil // once
			if err := gone.Unlock(ctx); err != nil {
				t.Errorf("unlock: %v", err)
			}
		}
	}
	t.Cleanup(func() { afterList = nil })

	// --path narrows to shard 7: shard 8's node is not touched.
	rs, err := Reap(ctx, b, s, ReapOptions{OlderThan: -time.Minute, Path: root + "/locks/orders/7"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Contender.Node != goneNode || !rs[0].Vanished {
		t.Fatalf("reaped %+v, want %s vanished", rs, goneNode)
	}
	if line := ReapLine("removed", rs[0]); !strings.HasPrefix(line, "vanished "+goneNode+"  order_lock (lock)") ||
		!strings.HasSuffix(line, "(gone before reap deleted it: released, or its session ended)") {
		t.Errorf("line %q", line)
	}
	if ok, err := b.Exists(ctx, keptNode); err != nil || !ok {
		t.Fatalf("shard 8's node, outside --path: exists %v, %v", ok, err)
	}

	// Without a path, shard 8's holder is removed (not vanished).
	rs, err = Reap(ctx, b, s, ReapOptions{OlderThan: -time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Contender.Node != keptNode || rs[0].Vanished {
		t.Fatalf("reaped %+v, want %s removed", rs, keptNode)
	}
	<-held[1].Lost()
}

// TestReapSemaphoreInternalLock: a participant that holds a semaphore's
// internal lock and has created its lease node while it waits for a lease
// is shown by Holders through its lease only; reap removes its internal
// lock node too, as Semaphore.Reap does, so that it cannot block the others.
func TestReapSemaphoreInternalLock(t *testing.T) {
	ctx, root, s, sessions := reapEnv(t, `slots: {kind: semaphore, path: /slots, leases: 1}`, 3)
	dir := runtime.At(root + "/slots")
	if _, err := runtime.NewSemaphore(sessions[0], dir, 1).Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waiting, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := runtime.NewSemaphore(sessions[1], dir, 1).Acquire(waiting)
		done <- err
	}()
	defer func() { stop(); <-done }()
	// Wait, by watches, for the second lease node: the waiter holds the
	// internal lock then.
	for {
		kids, _, ch, err := sessions[2].Conn().ChildrenW(root + "/slots/leases")
		if err == nil && len(kids) == 2 {
			break
		}
		if err != nil {
			if _, _, ch, err = sessions[2].Conn().ExistsW(root + "/slots/leases"); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal("the waiter never created its lease node")
		}
	}
	rs, err := Reap(ctx, sessions[2], s, ReapOptions{OlderThan: -time.Minute, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var leases, locks int
	for _, r := range rs {
		switch {
		case strings.HasPrefix(r.Contender.Node, root+"/slots/leases/"):
			leases++
		case strings.HasPrefix(r.Contender.Node, root+"/slots/locks/"):
			locks++
		}
	}
	if leases != 2 || locks != 1 || len(rs) != 3 {
		t.Fatalf("reap would remove %d lease and %d internal lock nodes of %d, want 2 and 1: %+v", leases, locks, len(rs), rs)
	}
}

func TestUnder(t *testing.T) {
	for _, c := range []struct {
		p, prefix string
		want      bool
	}{
		{"/a/b", "/a", true}, {"/a/b", "/a/", true}, {"/a", "/a", true}, {"/ab", "/a", false},
		{"/a/70", "/a/7", false}, {"/a/7/x", "/a/7", true}, {"/a", "/a/b", false}, {"/a", "/", true},
	} {
		if got := under(c.p, c.prefix); got != c.want {
			t.Errorf("under(%q, %q) = %v", c.p, c.prefix, got)
		}
	}
}

// reapEnv starts a ZooKeeper server and returns a context bounding the test,
// a root of its own, the spec of the one resource declared by decl under
// it, and n sessions; all end with the test.
func reapEnv(t *testing.T, decl string, n int) (context.Context, string, *spec.Spec, []*runtime.Session) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	root := fmt.Sprintf("/zkgen-reap-%d-%s", os.Getpid(), t.Name())
	s := parse(t, "version: 1\npackage: coord\nroot: "+root+"\nresources:\n  "+decl+"\n")
	var sessions []*runtime.Session
	for range n {
		sess, err := runtime.Connect(ctx, srv.Servers())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sess.Close() })
		sessions = append(sessions, sess)
	}
	return ctx, root, s, sessions
}
