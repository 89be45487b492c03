package coord_test

import (
	"context"
	"fmt"
	"log"

	"github.com/zkgen/zkgen/generated_example/coord"
)

// The shards partitioner shares 64 partitions among the workers that join
// it; a worker alone owns them all. Read Owned to its end: a partition is
// given up only once its readers have seen the set without it.
func ExampleClient_Shards() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	a, err := c.Shards().Join(ctx, coord.Member{Host: "build-3", Port: 8080})
	if err != nil {
		log.Fatal(err)
	}
	all := make(chan int, 1)
	go func() {
		for owned := range a.Owned() {
			if len(owned) == 64 {
				all <- len(owned)
			}
		}
	}()
	fmt.Println("partitions owned:", <-all)
	if err := a.Leave(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// partitions owned: 64
}

// hits is a shared counter (8 bytes, as Curator's DistributedAtomicLong);
// python_hits is the same in kazoo's 4-byte layout, for Python services.
func ExampleClient_Hits() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	for _, k := range []coord.HitsHandle{c.Hits(), c.PythonHits()} {
		before, err := k.Get(ctx)
		if err != nil {
			log.Fatal(err)
		}
		after, err := k.Add(ctx, 5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("added:", after-before)
	}
	// Output:
	// added: 5
	// added: 5
}

// leases hands out at most 2 leases that outlive their holders' sessions
// (TTL nodes: the server needs zookeeper.extendedTypesEnabled=true).
func ExampleClient_Leases() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	le, err := c.Leases().Acquire(ctx, "worker-1")
	if err != nil {
		log.Fatal(err)
	}
	holders, _ := c.Leases().Holders(ctx)
	fmt.Println("holders:", len(holders), "first:", holders[0].Holder)
	if err := le.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// holders: 1 first: worker-1
}

// python_slots is a semaphore in kazoo's layout, shared with Python
// services' kazoo Semaphore(max_leases=3) on the same path.
func ExampleClient_PythonSlots() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	le, ok, err := c.PythonSlots().TryAcquire(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("got a lease:", ok)
	if ok {
		le.Release(ctx)
	}
	// Output:
	// got a lease: true
}

// Session is the session the Client's handles use: a service writes its own
// znodes on it, beside the recipes', with no second session. A lock held
// through the Client ends with it.
func ExampleClient_Session() {
	ctx := context.Background()
	c, closeSession := client()
	defer closeSession()

	if _, err := c.Session().CreatePersistent(ctx, "/zkgen-example/demo/example-session"); err != nil {
		log.Fatal(err)
	}
	ok, err := c.Session().Exists(ctx, "/zkgen-example/demo/example-session")
	fmt.Println("own znode:", ok, err)
	l := c.OrderLock(9)
	if err := l.Lock(ctx); err != nil {
		log.Fatal(err)
	}
	c.Session().Close()
	<-l.Lost()
	fmt.Println("the lock ended with the session")
	// Output:
	// own znode: true <nil>
	// the lock ended with the session
}
