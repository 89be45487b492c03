package runtime_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// partsOf returns the partitions the cache shows owned by member m.
func partsOf(st runtime.PartitionerState[string], m string) []int {
	var out []int
	for i, k := range st.Owner {
		if k >= 0 && st.Members[k].Value == m {
			out = append(out, i)
		}
	}
	return out
}

// settledOn reports whether the state shows exactly members, in that
// order, sharing every partition in balance (⌊n/M⌋ or ⌈n/M⌉ each): a
// partitioner at rest after a change.
func settledOn(members ...string) func(runtime.PartitionerState[string], bool) bool {
	return func(st runtime.PartitionerState[string], there bool) bool {
		var got []string
		for _, m := range st.Members {
			got = append(got, m.Value)
		}
		if !there || !slices.Equal(got, members) || len(st.Unowned()) > 0 {
			return false
		}
		for _, m := range members {
			if n := len(partsOf(st, m)); n < len(st.Owner)/len(members) || n > (len(st.Owner)+len(members)-1)/len(members) {
				return false
			}
		}
		return true
	}
}

// partitionerShows waits until the cache shows the partitioner settled on
// members, then fails unless what it shows is what the partitioner's own
// Owners reads, and each member's Owned set is the cache's.
func partitionerShows(t *testing.T, ctx context.Context, cache *runtime.PartitionerCache[string, string], evs <-chan runtime.CacheEvent[string, runtime.PartitionerState[string]],
	p *runtime.Partitioner[string], as map[string]*runtime.Assignment[string], sessions map[string]*runtime.Session, owned map[string]*ownedSets, members ...string) {
	t.Helper()
	st := awaitKind(t, ctx, cache, evs, "x", "the partitions shared by "+strings.Join(members, ", "), settledOn(members...))
	want, err := p.Owners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Owners(); !reflect.DeepEqual(got, want) {
		t.Fatalf("the cache shows\n%+v\nOwners reads\n%+v", got, want)
	}
	for k, m := range st.Members {
		if m.Err != nil || m.Session != sessions[m.Value].ID() || m.Node != as[m.Value].Node() || m.Czxid <= 0 || k > 0 && m.Czxid <= st.Members[k-1].Czxid {
			t.Fatalf("member %d: %+v; want node %s of session %#x, created after the member before", k, m, as[m.Value].Node(), sessions[m.Value].ID())
		}
	}
	for _, m := range members {
		owned[m].becomes(t, ctx, partsOf(st, m))
	}
}

// ownedSets follows a member's Owned stream: the newest set it gave.
type ownedSets struct {
	a    *runtime.Assignment[string]
	mu   sync.Mutex
	last []int
	more chan struct{} // closed and replaced at each set
}

// follow reads a's Owned stream until it closes, so that releases never
// wait for its reader.
func follow(a *runtime.Assignment[string]) *ownedSets {
	o := &ownedSets{a: a, more: make(chan struct{})}
	go func() {
		for set := range a.Owned() {
			o.mu.Lock()
			o.last = set
			close(o.more)
			o.more = make(chan struct{})
			o.mu.Unlock()
		}
	}()
	return o
}

// becomes waits until the stream gave want (nil and empty alike).
func (o *ownedSets) becomes(t *testing.T, ctx context.Context, want []int) {
	t.Helper()
	for {
		o.mu.Lock()
		last, more := o.last, o.more
		o.mu.Unlock()
		if slices.Equal(last, want) || len(last) == 0 && len(want) == 0 {
			return
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("member %s owns %v; the cache shows it owns %v", o.a.Member(), last, want)
		}
	}
}

// A partitioner's cache shows its members in join order and each
// partition's owner, as Partitioner.Owners reads them and as each member's
// Owned stream tells it: through joins, a leave and the rebalances they
// start, and through the expiry of the cache's session, during which a
// member leaves and another joins (the gap is announced, then the cache
// holds the new state) (docs/partitioner.md, what the cache mirrors).
func TestPartitionerCacheOwners(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	w := connect(t, srv.Servers())
	root := testRoot(t)
	const n = 8
	cache, err := runtime.NewPartitionerCache(runtime.TemplateAt(root).Str("name"), func(p runtime.Params) string { return p.Str(0) }, n, runtime.StringCodec())
	if err != nil {
		t.Fatal(err)
	}
	expire := expireKindCache(t, ctx, srv, cache)
	evs := cache.Events(ctx)
	reader := runtime.NewPartitioner(w, runtime.At(root).Str("name", "x"), n, runtime.StringCodec())
	as := map[string]*runtime.Assignment[string]{}
	sessions := map[string]*runtime.Session{}
	owned := map[string]*ownedSets{}
	joinAs := func(m string) {
		sessions[m] = connect(t, srv.Servers())
		a, err := runtime.NewPartitioner(sessions[m], runtime.At(root).Str("name", "x"), n, runtime.StringCodec()).
			Join(ctx, m, runtime.WithRebalanceDelay(0))
		if err != nil {
			t.Fatal(err)
		}
		as[m], owned[m] = a, follow(a)
	}
	joinAs("a")
	partitionerShows(t, ctx, cache, evs, reader, as, sessions, owned, "a")
	joinAs("b")
	partitionerShows(t, ctx, cache, evs, reader, as, sessions, owned, "a", "b")
	joinAs("c")
	partitionerShows(t, ctx, cache, evs, reader, as, sessions, owned, "a", "b", "c")
	if err := as["a"].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	partitionerShows(t, ctx, cache, evs, reader, as, sessions, owned, "b", "c")

	expire(func() {
		if err := as["b"].Leave(ctx); err != nil {
			t.Fatal(err)
		}
		joinAs("d")
	})
	partitionerShows(t, ctx, cache, evs, reader, as, sessions, owned, "c", "d")
	if err := as["c"].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if err := as["d"].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	awaitKind(t, ctx, cache, evs, "x", "no instance once every member left", func(_ runtime.PartitionerState[string], there bool) bool { return !there })
}

// A partitioner's cache reads the owner nodes as Owners does: an owner
// node names its member, one naming no member held is no owner, and
// children of owners/ that are no partition's (p-8 of 8, p-03, others)
// are left out; Unowned lists the partitions left (docs/partitioner.md,
// what the cache mirrors).
func TestPartitionerCacheReadsOwnerNodes(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	const m1, m2 = "_c_0-member-0000000001", "_c_0-member-0000000002"
	put(t, w, map[string]string{
		root + "/y/members/" + m2: "second", root + "/y/members/" + m1: "first", root + "/y/members/other": "no member",
		root + "/y/owners/p-1": m2, root + "/y/owners/p-2": m1, root + "/y/owners/p-5": "_c_9-member-0000000009",
		root + "/y/owners/p-8": m1, root + "/y/owners/p-03": m1, root + "/y/owners/q-4": m1,
	})
	cache, err := runtime.NewPartitionerCache(runtime.TemplateAt(root).Str("name"), func(p runtime.Params) string { return p.Str(0) }, 8, runtime.StringCodec())
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, cache.Run, s)
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := runtime.NewPartitioner(w, runtime.At(root).Str("name", "y"), 8, runtime.StringCodec()).Owners(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get("y")
	if !ok || !reflect.DeepEqual(st.Owners(), want) || !reflect.DeepEqual(st.Owner, []int{-1, 1, 0, -1, -1, -1, -1, -1}) {
		t.Fatalf("the cache shows (ok %v) %+v; Owners reads %+v; want owners [-1 1 0 -1 ...]", ok, st.Owners(), want)
	}
	if got := st.Unowned(); !slices.Equal(got, []int{0, 3, 4, 5, 6, 7}) {
		t.Fatalf("unowned %v; want [0 3 4 5 6 7]", got)
	}
}
