package serve_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// What serve promises about its own cost: its watches grow with instances
// and directories, not with a lock's waiters or a queue's items; and a
// burst of changes to one instance within --settle costs one read of it.
func TestServeCost(t *testing.T) {
	const settle = 5 * time.Second
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	// One of each, before serve starts: its first pass finds the lock
	// instance and the outbox's bucket, and nothing changes until the
	// burst, so no watch it set has fired when the baseline is taken.
	// (Sampled during that first pass, the baseline lacked the watches
	// the pass had not set yet: 30 of 39 on a loaded machine.)
	if err := c.OrderLock(1).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Outbox().Put(ctx, coord.Job{Name: "first"}); err != nil {
		t.Fatal(err)
	}
	base := startServe(t, srv.Addr(), "--settle", settle.String())
	var before metrics
	awaitMetrics(t, base, func(m metrics) bool {
		before = m
		// up: the first pass is over, every watch is set
		return m["zkgen_serve_zookeeper_up"] == 1 &&
			m[`zkgen_lock_holders{resource="order_lock",shard="1"}`] == 1 && m[`zkgen_queue_items{resource="outbox"}`] == 1
	})

	// A burst: 10 waiters and 100 items.
	start := time.Now()
	for range 10 {
		go exampleClient(t, ctx, srv.Servers()).OrderLock(1).Lock(ctx)
	}
	for i := range 100 {
		if err := c.Outbox().Put(ctx, coord.Job{Name: fmt.Sprint("item-", i)}); err != nil {
			t.Fatal(err)
		}
	}
	awaitChildren(t, ctx, c.Session().Conn(), "/zkgen-example/locks/orders/1", 11)
	took := time.Since(start)
	var after metrics
	awaitMetrics(t, base, func(m metrics) bool {
		after = m
		return m[`zkgen_lock_waiters{resource="order_lock",shard="1"}`] == 10 && m[`zkgen_queue_items{resource="outbox"}`] == 101
	})
	t.Logf("burst took %v; serve before: %v; after: %v", took.Round(time.Millisecond), serveOwn(before), serveOwn(after))
	if w0, w1 := before["zkgen_serve_watches"], after["zkgen_serve_watches"]; w1 != w0 {
		t.Errorf("serve's watches went from %v to %v with 10 waiters and 100 items", w0, w1)
	}
	// Each instance is read once per settle window the burst touched. A
	// burst of length d touches ceil(d/settle) windows, and one more
	// when a change lands between a window's re-armed watch and its read
	// (on an idle machine the burst fits one window: at most 4 reads).
	windows := int(math.Ceil(float64(took)/float64(settle))) + 1
	if reads := after["zkgen_serve_reads_total"] - before["zkgen_serve_reads_total"]; reads > float64(2*windows) {
		t.Errorf("the burst (%v) cost %v instance reads, want at most %d (2 instances, %d settle windows each)", took, reads, 2*windows, windows)
	}
}

// awaitChildren waits until path has n children.
func awaitChildren(t *testing.T, ctx context.Context, conn *zk.Conn, path string, n int) {
	t.Helper()
	for {
		kids, _, ch, err := conn.ChildrenW(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) >= n {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s has %d children, want %d: %v", path, len(kids), n, ctx.Err())
		}
	}
}

// serveOwn is serve's metrics about itself, for the test's log.
func serveOwn(m metrics) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "zkgen_serve_") && !strings.HasPrefix(k, "zkgen_serve_instances") {
			out[k] = v
		}
	}
	return out
}

// TestServeWatchesDoNotGrowWithInstances: the watches ZooKeeper holds
// (its own count, mntr's zk_watch_count) are as many with 1,000 held
// instances of order_lock as with 10 while serve follows them — its
// cache's one persistent watch on the spec's root, not watches per
// instance (wchc would not do: ZooKeeper 3.8 lists only data watches
// there) — and a release among the 1,000 still shows.
func TestServeWatchesDoNotGrowWithInstances(t *testing.T) {
	const few, many = 10, 1000
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	held := holdLocks(ctx, t, c, 0, few)
	idle := serverWatches(t, srv.Addr())
	base := startServe(t, srv.Addr(), "--max-instances", fmt.Sprint(many))
	wFew := watchesWith(t, base, srv.Addr(), few)
	held = append(held, holdLocks(ctx, t, c, few, many)...)
	wMany := watchesWith(t, base, srv.Addr(), many)
	t.Logf("zk_watch_count: %d without serve; with serve following %d held locks %d, %d held locks %d", idle, few, wFew, many, wMany)
	if wMany > wFew {
		t.Errorf("ZooKeeper holds %d watches with serve following %d held locks, %d with %d: they grow with the instances", wMany, many, wFew, few)
	}
	start := time.Now()
	if err := held[many/2].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	released := fmt.Sprintf(`zkgen_lock_holders{resource="order_lock",shard="%d"}`, many/2)
	awaitMetrics(t, base, func(m metrics) bool { return m[released] == 0 })
	t.Logf("a release among %d held locks showed in serve's metrics after %v", many, time.Since(start).Round(time.Millisecond))
}

// watchesWith waits until serve shows n held instances of order_lock,
// then returns the watches ZooKeeper holds.
func watchesWith(t *testing.T, base, addr string, n int) int {
	t.Helper()
	awaitMetrics(t, base, func(m metrics) bool {
		held := 0
		for k, v := range m {
			if strings.HasPrefix(k, `zkgen_lock_holders{resource="order_lock",`) && v == 1 {
				held++
			}
		}
		return m["zkgen_serve_zookeeper_up"] == 1 && held == n
	})
	var st apiState
	awaitState(t, base, func(s apiState) bool { st = s; return s.Up })
	w := serverWatches(t, addr)
	t.Logf("%d held locks: zk_watch_count %d (serve's cache mode %q)", n, w, st.Cache.Mode)
	return w
}

// serverWatches returns ZooKeeper's zk_watch_count (mntr).
func serverWatches(t *testing.T, addr string) int {
	t.Helper()
	mntr, err := zktest.FourLetter(addr, "mntr", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return watchCount(t, mntr)
}
