package example_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The example's shards partitioner through the generated handle: two
// members own 32 partitions each, Owners agrees with their Owned streams,
// and when one leaves the other owns all 64; the last to leave leaves no
// member or owner node behind.
func TestGeneratedShards(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := func() (*runtime.Session, *coord.Client) {
		s, err := runtime.Connect(ctx, srv.Servers(), runtime.WithSessionTimeout(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, coord.New(s)
	}
	as, a := client()
	_, b := client()
	if n := a.Shards().Partitions(); n != 64 {
		t.Fatalf("Partitions = %d", n)
	}
	ma, err := a.Shards().Join(ctx, coord.Member{Host: "a", Port: 1})
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Shards().Join(ctx, coord.Member{Host: "b", Port: 2})
	if err != nil {
		t.Fatal(err)
	}
	// until returns once the stream delivers a set of n partitions.
	until := func(ch <-chan []int, n int) {
		t.Helper()
		for {
			select {
			case set, ok := <-ch:
				if !ok {
					t.Fatal("Owned closed")
				}
				if len(set) == n {
					return
				}
			case <-ctx.Done():
				t.Fatalf("never owned %d partitions", n)
			}
		}
	}
	oa, ob := ma.Owned(), mb.Owned()
	until(oa, 32)
	until(ob, 32)
	go func() {
		for range ob { // read on until the stream closes: releases wait for it
		}
	}()
	owners, err := a.Shards().Owners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	count := map[int]int{}
	for _, k := range owners.Owner {
		count[k]++
	}
	if len(owners.Members) != 2 || owners.Members[0].Host != "a" || count[0] != 32 || count[1] != 32 {
		t.Fatalf("Owners = %+v", owners)
	}
	if err := mb.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	until(oa, 64)
	go func() {
		for range oa {
		}
	}()
	if err := ma.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"/members", "/owners"} {
		kids, err := as.Children(ctx, a.Shards().Path()+dir)
		if err != nil || len(kids) != 0 {
			t.Fatalf("%s: %v, %v", dir, kids, err)
		}
	}
}
