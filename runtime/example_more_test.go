package runtime_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// LockAll takes several locks (any mix of locks, read or write sides and
// semaphores) all or none, always in path order, so that two callers that
// name them in opposite orders cannot deadlock.
func ExampleLockAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := session()
	defer sess.Close()
	orders := runtime.NewLock(sess, runtime.At(app+"/multi/orders"))
	users := runtime.NewRWLock(sess, runtime.At(app+"/multi/users")).Write()

	g, err := runtime.LockAll(ctx, users, orders) // taken as orders, then users
	if err != nil {
		log.Fatal(err)
	}
	for _, p := range g.Paths() {
		fmt.Println("holding", p[len(app):])
	}
	if err := g.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// holding /multi/orders
	// holding /multi/users
}

// A TTL lease outlives its holder's session: a restarted holder takes it
// back by its holder id, and the server removes it when it is not renewed
// within its TTL. The server must allow TTL nodes
// (zookeeper.extendedTypesEnabled=true; zktest.WithTTLNodes in tests).
func ExampleTTLLeases() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ttlOnce.Do(func() { ttlShared, ttlErr = zktest.StartProcess(zktest.WithTTLNodes(ttlCheckInterval)) })
	if ttlErr != nil {
		log.Fatal(ttlErr)
	}
	connectTTL := func() *runtime.Session {
		s, err := runtime.Connect(ctx, ttlShared.Servers())
		if err != nil {
			log.Fatal(err)
		}
		return s
	}
	dir := runtime.At(app + "/leases")

	first := connectTTL()
	le, err := runtime.NewTTLLeases(first, dir, 2, time.Minute).Acquire(ctx, "worker-1")
	if err != nil {
		log.Fatal(err)
	}
	node := le.Node()
	first.Close() // the process restarts; the lease stays

	again := connectTTL()
	defer again.Close()
	le, err = runtime.NewTTLLeases(again, dir, 2, time.Minute).Acquire(ctx, "worker-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same lease:", le.Node() == node, "held until:", time.Until(le.Expires()) > 50*time.Second)
	if err := le.Renew(ctx); err != nil { // well before Expires, e.g. every TTL/3
		log.Fatal(err)
	}
	if err := le.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// same lease: true held until: true
}

// A partitioner shares N partitions among its members: each member owns
// ⌊N/M⌋ or ⌈N/M⌉ of them, never one owned by two members at once, and a
// join or a leave moves only a few.
func ExamplePartitioner() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sess := session()
	defer sess.Close()
	shards := runtime.NewPartitioner(sess, runtime.At(app+"/shards"), 4, runtime.StringCodec())

	a, err := shards.Join(ctx, "worker-a")
	if err != nil {
		log.Fatal(err)
	}
	// Work on the partitions owned, as the stream says; read it to its
	// end: a member gives a partition up only once its readers have seen
	// the set without it.
	all := make(chan []int, 1)
	go func() {
		for owned := range a.Owned() {
			if len(owned) == 4 { // alone: it owns them all once taken
				all <- owned
			}
		}
	}()
	fmt.Println("worker-a owns", <-all)
	if err := a.Leave(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// worker-a owns [0 1 2 3]
}
