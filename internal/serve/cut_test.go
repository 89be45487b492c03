package serve_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// --max-instances bounds the series of a parameterised resource: serve
// follows the first instances (in inspect's order) and counts the rest in
// zkgen_serve_instances_cut and /api/state's instances_cut; an instance
// that goes makes room for a cut one.
func TestServeCutsInstances(t *testing.T) {
	srv := zktest.Start(t)
	provision(t, srv.Addr())
	base := startServe(t, srv.Addr(), "--max-instances", "2")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exampleClient(t, ctx, srv.Servers())
	locks := make([]coord.OrderLockHandle, 3)
	for i := range locks {
		locks[i] = c.OrderLock(i)
		if err := locks[i].Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	awaitMetrics(t, base, func(m metrics) bool {
		return m[`zkgen_serve_instances{resource="order_lock"}`] == 2 && m[`zkgen_serve_instances_cut{resource="order_lock"}`] == 1 &&
			m.count(`zkgen_lock_holders{resource="order_lock"`) == 2 && m[`zkgen_lock_holders{resource="order_lock",shard="2"}`] == 0
	})
	awaitField(t, base, "the cut in the state", "order_lock", "#", 2)
	// shard 0 goes (its lock node and, once empty, its directory): shard 2 is followed
	if err := locks[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Session().Delete(ctx, "/zkgen-example/locks/orders/0"); err != nil {
		t.Fatal(err)
	}
	awaitMetrics(t, base, func(m metrics) bool {
		return m[`zkgen_serve_instances_cut{resource="order_lock"}`] == 0 && m[`zkgen_lock_holders{resource="order_lock",shard="2"}`] == 1
	})
}
