package example_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
)

// untilShown reads a cache's events until ok holds, then syncs the
// cache.
func untilShown[K comparable, V any](t *testing.T, ctx context.Context, sync func(context.Context) error,
	evs <-chan runtime.CacheEvent[K, V], what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-evs:
		case <-ctx.Done():
			t.Fatalf("the cache never showed %s", what)
		}
	}
	if err := sync(ctx); err != nil {
		t.Fatal(err)
	}
}

// The generated partitioner cache shows the example's shards shared by
// two members, as Owners reads them: docs/partitioner.md (cache).
func TestGeneratedPartitionerCache(t *testing.T) {
	ctx, cs, _ := clients(t, 3)
	cache, err := cs[2].ShardsCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := cache.Events(ctx)
	for i, host := range []string{"a", "b"} {
		if _, err := cs[i].Shards().Join(ctx, coord.Member{Host: host, Port: i}, runtime.WithRebalanceDelay(0)); err != nil {
			t.Fatal(err)
		}
	}
	// At rest: both members, each owning half of the 64 partitions.
	settled := func(st runtime.PartitionerState[coord.Member]) bool {
		n := map[int]int{}
		for _, k := range st.Owner {
			n[k]++
		}
		return len(st.Members) == 2 && len(st.Owner) == 64 && n[0] == 32 && n[1] == 32
	}
	untilShown(t, ctx, cache.Sync, evs, "the partitions shared by two members", func() bool {
		st, _ := cache.Get(struct{}{})
		return settled(st)
	})
	want, err := cs[2].Shards().Owners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := cache.Get(struct{}{})
	if got := st.Owners(); !reflect.DeepEqual(got, want) || got.Members[0].Host != "a" {
		t.Fatalf("the cache shows\n%+v\nOwners reads\n%+v", got, want)
	}
}

// The generated two-phase commit cache shows a deploy transaction's
// votes and decision, keyed by its id, as Status reads them:
// docs/twopc.md (cache).
func TestGeneratedTwoPCCache(t *testing.T) {
	ctx, cs, _ := clients(t, 2)
	cache, err := cs[1].DeployCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	evs := cache.Events(ctx)
	tx := cs[0].Deploy("v42")
	if err := tx.Propose(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range tx.Participants() {
		if err := tx.Vote(ctx, p, runtime.Commit); err != nil {
			t.Fatal(err)
		}
	}
	if d, err := tx.Outcome(ctx); err != nil || d != runtime.Commit {
		t.Fatalf("outcome %v, %v; want commit", d, err)
	}
	untilShown(t, ctx, cache.Sync, evs, "the commit", func() bool {
		st, _ := cache.Get("v42")
		return st.Decision == runtime.Commit
	})
	want, err := cs[1].Deploy("v42").(*runtime.TwoPhaseCommit[[]byte]).Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := []runtime.Participant{coord.DeployDatabase, coord.DeployCache, coord.DeploySearch}
	st, ok := cache.Get("v42")
	var got []runtime.Participant
	for _, v := range st.Votes {
		got = append(got, v.Participant)
	}
	if !ok || !reflect.DeepEqual(st, want) || !reflect.DeepEqual(got, spec) {
		t.Fatalf("the cache shows (ok %v)\n%+v\nStatus reads\n%+v", ok, st, want)
	}
}
