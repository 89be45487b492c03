package runtime_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// semNodes names the holders of a semaphore state: purpose:lease or
// :lock (a contender for the internal lock, whose node has no
// purpose), in order.
func semNodes(hs []runtime.Holder) []string {
	var out []string
	for _, h := range hs {
		place := "lease"
		if strings.Contains(h.Node, "/locks/") || strings.Contains(h.Node, runtime.KazooSemaphoreLockSuffix+"/") {
			place = "lock"
		}
		out = append(out, h.Owner.Purpose+":"+place)
	}
	return out
}

// semaphoreShows reads the cache's events until instance k shows the
// holders and waiters named (semNodes), then fails unless its state,
// after Sync, is what the semaphore's own Holders reads, field by field.
func semaphoreShows(t *testing.T, ctx context.Context, cache *runtime.SemaphoreCache[string], evs <-chan runtime.CacheEvent[string, runtime.SemaphoreState],
	sem *runtime.Semaphore, holders, waiters []string) {
	t.Helper()
	for st, _ := cache.Get("s"); !slices.Equal(semNodes(st.Holders), holders) || !slices.Equal(semNodes(st.Waiters), waiters); st, _ = cache.Get("s") {
		select {
		case <-evs:
		case <-ctx.Done():
			t.Fatalf("the cache shows holders %v, waiters %v; want %v, %v: %v", semNodes(st.Holders), semNodes(st.Waiters), holders, waiters, ctx.Err())
		}
	}
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := sem.Holders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get("s")
	if got := append(st.Holders, st.Waiters...); !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("the cache shows\n%+v\nHolders reads\n%+v", got, want)
	}
	if st.Size != 1 || st.Free() != 1-len(holders) {
		t.Fatalf("size %d, free %d; want 1, %d", st.Size, st.Free(), 1-len(holders))
	}
}

// acquireIn starts an Acquire of a lease of sem, whose purpose is p, and
// returns the channel of its lease.
func acquireIn(t *testing.T, ctx context.Context, sem *runtime.Semaphore, p string) <-chan *runtime.Lease {
	sem.SetPurpose(p)
	out := make(chan *runtime.Lease, 1)
	go func() {
		le, err := sem.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		out <- le
	}()
	return out
}

// A semaphore's cache shows its lease holders and its waiters, as
// Semaphore.Holders reads them, in either layout: a holder, then an
// acquirer waiting for a release (in Curator's layout with its lease
// node, in kazoo's holding the internal lock) and one waiting for the
// internal lock, then the releases that let them hold in turn
// (docs/locks.md, what the cache mirrors).
func TestSemaphoreCacheHoldersAndWaiters(t *testing.T) {
	srv := server(t)
	w := connect(t, srv.Servers())
	root := testRoot(t)
	for name, layout := range map[string]runtime.Layout{"curator": runtime.LayoutCurator, "kazoo": runtime.LayoutKazoo} {
		t.Run(name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			base := root + "/" + name
			cache, err := runtime.NewSemaphoreCache(runtime.TemplateAt(base).Str("name"), func(p runtime.Params) string { return p.Str(0) }, 1, layout)
			if err != nil {
				t.Fatal(err)
			}
			runKindCache(t, cache.Run, w)
			evs := cache.Events(ctx)
			sems := make([]*runtime.Semaphore, 3)
			for i := range sems {
				sems[i] = runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(base).Str("name", "s"), 1, runtime.WithLayout(layout))
			}
			// An acquirer waiting for a release shows its lease node, or in
			// kazoo's layout its node of the internal lock (which carries
			// no purpose).
			waiting, next := "b:lease", "c:lease"
			if layout == runtime.LayoutKazoo {
				waiting, next = ":lock", ":lock"
			}
			a := <-acquireIn(t, ctx, sems[0], "a")
			semaphoreShows(t, ctx, cache, evs, sems[0], []string{"a:lease"}, nil)
			bc := acquireIn(t, ctx, sems[1], "b")
			semaphoreShows(t, ctx, cache, evs, sems[0], []string{"a:lease"}, []string{waiting})
			cc := acquireIn(t, ctx, sems[2], "c")
			semaphoreShows(t, ctx, cache, evs, sems[0], []string{"a:lease"}, []string{waiting, ":lock"})
			if err := a.Release(ctx); err != nil {
				t.Fatal(err)
			}
			b := <-bc
			semaphoreShows(t, ctx, cache, evs, sems[0], []string{"b:lease"}, []string{next})
			if err := b.Release(ctx); err != nil {
				t.Fatal(err)
			}
			c := <-cc
			semaphoreShows(t, ctx, cache, evs, sems[0], []string{"c:lease"}, nil)
			if err := c.Release(ctx); err != nil {
				t.Fatal(err)
			}
			for _, ok := cache.Get("s"); ok; _, ok = cache.Get("s") {
				<-evs
			}
		})
	}
}
