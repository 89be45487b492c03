package example_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// semaphoreIs syncs the cache and fails unless it shows the lease holders
// of sem with the purposes who, and nothing else, as sem's own Holders
// reads them.
func semaphoreIs(t *testing.T, ctx context.Context, cache *runtime.SemaphoreCache[struct{}], sem coord.SlotsHandle, who ...string) {
	t.Helper()
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := sem.Holders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get(struct{}{})
	hs, ws := purposes(runtime.LockState{Holders: st.Holders, Waiters: st.Waiters})
	if ok != (len(want) > 0) || !equal(hs, who) || len(ws) != 0 || !sameList(append(st.Holders, st.Waiters...), want) {
		t.Fatalf("the cache shows (ok %v) holders %v, waiters %v; want %v, as Holders reads:\n%+v\n%+v", ok, hs, ws, who, st, want)
	}
	if st.Size != 3 || st.Free() != 3-len(who) {
		t.Fatalf("size %d, free %d; want 3, %d", st.Size, st.Free(), 3-len(who))
	}
}

// sameList reports whether a and b hold equal elements (nil and empty
// are the same).
func sameList[T any](a, b []T) bool { return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b) }

// The generated semaphore caches show the lease holders of the example's
// slots (Curator's layout) and python_slots (kazoo's, whose internal
// lock is a sibling directory, so the cache watches their parent) as
// Holders reads them: docs/locks.md (what the cache mirrors).
func TestGeneratedSemaphoreCache(t *testing.T) {
	ctx, cs, _ := clients(t, 3)
	type semCache = *runtime.SemaphoreCache[struct{}]
	for _, r := range []struct {
		name  string
		sem   func(*coord.Client) coord.SlotsHandle
		cache func(*coord.Client) (semCache, error)
	}{
		{"slots", (*coord.Client).Slots, func(c *coord.Client) (semCache, error) { return c.SlotsCache(ctx) }},
		{"python_slots", (*coord.Client).PythonSlots, func(c *coord.Client) (semCache, error) { return c.PythonSlotsCache(ctx) }},
	} {
		t.Run(r.name, func(t *testing.T) {
			watcher := r.sem(cs[2])
			cache, err := r.cache(cs[2])
			if err != nil {
				t.Fatal(err)
			}
			semaphoreIs(t, ctx, cache, watcher)
			var leases []*runtime.Lease
			for i, who := range []string{"a", "b"} {
				sem := r.sem(cs[i])
				sem.SetPurpose(who)
				le, err := sem.Acquire(ctx)
				if err != nil {
					t.Fatal(err)
				}
				leases = append(leases, le)
			}
			semaphoreIs(t, ctx, cache, watcher, "a", "b")
			if err := leases[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			semaphoreIs(t, ctx, cache, watcher, "b")
			if err := leases[1].Release(ctx); err != nil {
				t.Fatal(err)
			}
			semaphoreIs(t, ctx, cache, watcher)
		})
	}
}

// The generated lease cache shows the example's held slots as Holders
// reads them, with each holder's renewal and expiry, until their release:
// docs/leases.md (cache).
func TestGeneratedLeaseCache(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t, zktest.WithTTLNodes(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := runtime.Connect(ctx, srv.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := coord.New(s)
	cache, err := c.LeasesCache(ctx)
	if err != nil {
		t.Fatal(err)
	}
	is := func(holders ...string) {
		t.Helper()
		if err := cache.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		want, err := c.Leases().Holders(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := cache.Get(struct{}{})
		var got []string
		for _, h := range st.Holders {
			got = append(got, h.Holder)
			if !h.Expires.Equal(h.Renewed.Add(5 * time.Second)) {
				t.Fatalf("%s renewed %v expires %v; want 5s later", h.Holder, h.Renewed, h.Expires)
			}
		}
		if !equal(got, holders) || !sameList(st.Holders, want) || st.Free() != 2-len(holders) {
			t.Fatalf("the cache shows %+v; want holders %v, as Holders reads:\n%+v", st, holders, want)
		}
	}
	is()
	a, err := c.Leases().Acquire(ctx, "worker-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Leases().Acquire(ctx, "worker-b")
	if err != nil {
		t.Fatal(err)
	}
	is("worker-a", "worker-b")
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	is("worker-a", "worker-b")
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	is("worker-b")
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	is()
}
