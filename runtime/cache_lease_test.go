package runtime_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// leasesShow syncs the cache and fails unless instance "x" shows what
// the leases' own Holders reads, field by field, with n holders.
func leasesShow(t *testing.T, ctx context.Context, cache *runtime.TTLLeaseCache[string], m *runtime.TTLLeases, n int) runtime.TTLLeaseState {
	t.Helper()
	if err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	want, err := m.Holders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := cache.Get("x")
	if ok != (n > 0) || len(st.Holders) != n || !reflect.DeepEqual(st.Holders, want) {
		t.Fatalf("the cache shows (ok %v)\n%+v\nHolders reads\n%+v\nwant %d holders", ok, st.Holders, want, n)
	}
	if ok && (st.Size != 3 || st.TTL != time.Minute || st.Free() != 3-n) {
		t.Fatalf("size %d, ttl %v, free %d; want 3, 1m, %d", st.Size, st.TTL, st.Free(), 3-n)
	}
	return st
}

// A lease's cache shows its held slots as TTLLeases.Holders reads them:
// the holder of each slot in slot order, renewed at the slot's mtime
// (after a Renew, the renewal's), expiring a TTL later; children that are
// not slots are left out (docs/leases.md, what the cache mirrors).
func TestTTLLeaseCacheHolders(t *testing.T) {
	srv := ttlServer(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	put(t, w, map[string]string{root + "/l/x/slot-7": "{\"holder\":\"beyond\"}", root + "/l/x/other": "y"})
	cache, err := runtime.NewTTLLeaseCache(runtime.TemplateAt(root+"/l").Str("name"), func(p runtime.Params) string { return p.Str(0) }, 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, cache.Run, s)
	m := runtime.NewTTLLeases(w, runtime.At(root+"/l").Str("name", "x"), 3, time.Minute)
	leasesShow(t, ctx, cache, m, 0)
	var held []*runtime.TTLLease
	for i, h := range []string{"one", "two"} {
		l, err := m.Acquire(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		if st := leasesShow(t, ctx, cache, m, i+1); st.Holders[i].Holder != h {
			t.Fatalf("slot %d held by %q; want %q", i, st.Holders[i].Holder, h)
		}
	}
	before := leasesShow(t, ctx, cache, m, 2).Holders[0].Renewed
	for {
		if err := held[0].Renew(ctx); err != nil {
			t.Fatal(err)
		}
		if st := leasesShow(t, ctx, cache, m, 2); st.Holders[0].Renewed.After(before) {
			break // the renewal's mtime is a later millisecond
		}
	}
	if err := held[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if st := leasesShow(t, ctx, cache, m, 1); st.Holders[0].Holder != "two" {
		t.Fatalf("after one's release: %+v; want two's slot", st.Holders)
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	leasesShow(t, ctx, cache, m, 0)
}
