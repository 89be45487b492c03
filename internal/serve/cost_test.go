package serve_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// What serve promises about its own cost: its watches grow with instances
// and directories, not with a lock's waiters or a queue's items; and a
// burst of changes to one instance within --settle costs one read of it.
func TestServeCost(t *testing.T) {
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	base := startServe(t, srv.Addr(), "--settle", "5s")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	// one of each: the lock instance and the outbox's bucket exist
	if err := c.OrderLock(1).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Outbox().Put(ctx, coord.Job{Name: "first"}); err != nil {
		t.Fatal(err)
	}
	var before metrics
	awaitMetrics(t, base, func(m metrics) bool {
		before = m
		return m[`zkgen_lock_holders{resource="order_lock",shard="1"}`] == 1 && m[`zkgen_queue_items{resource="outbox"}`] == 1
	})

	// A burst: 10 waiters and 100 items, well within 5 s.
	for range 10 {
		go exampleClient(t, ctx, srv.Servers()).OrderLock(1).Lock(ctx)
	}
	items := make([]coord.Job, 100)
	for i := range items {
		items[i] = coord.Job{Name: fmt.Sprint("item-", i)}
	}
	for _, it := range items {
		if err := c.Outbox().Put(ctx, it); err != nil {
			t.Fatal(err)
		}
	}
	var after metrics
	awaitMetrics(t, base, func(m metrics) bool {
		after = m
		return m[`zkgen_lock_waiters{resource="order_lock",shard="1"}`] == 10 && m[`zkgen_queue_items{resource="outbox"}`] == 101
	})
	if w0, w1 := before["zkgen_serve_watches"], after["zkgen_serve_watches"]; w1 != w0 {
		t.Errorf("serve's watches went from %v to %v with 10 waiters and 100 items", w0, w1)
	}
	// each of the two instances read once per settle window the burst
	// touched: at most two windows each
	if reads := after["zkgen_serve_reads_total"] - before["zkgen_serve_reads_total"]; reads > 4 {
		t.Errorf("the burst cost %v instance reads, want at most 4 (2 instances, 2 settle windows each)", reads)
	}
}
