package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// queueStateOf syncs a queue cache and returns instance k's state.
func queueStateOf[K comparable](t *testing.T, ctx context.Context, c *runtime.QueueCache[K], k K) (runtime.QueueState, bool) {
	t.Helper()
	if err := c.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return c.Get(k)
}

// A queue's cache counts the items across its buckets, claimed ones
// included and claims not, and its next item is the one a consumer is
// handed next, bucket after bucket (docs/queues.md, what the cache
// mirrors).
func TestQueueCacheDepthAcrossBuckets(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	cache, err := runtime.NewQueueCache(runtime.TemplateAt(root+"/q").Str("name"), func(p runtime.Params) string { return p.Str(0) })
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, cache.Run, s)
	q := runtime.NewAckQueue(w, runtime.At(root+"/q").Str("name", "a"), runtime.StringCodec(), runtime.WithBucketSize(2))
	const n = 5 // three buckets
	for i := range n {
		if err := q.Put(ctx, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		st, ok := queueStateOf(t, ctx, cache, "a")
		if !ok || st.Len != n-i || st.ByPriority != nil || !st.Oldest.Equal(st.Next.Created) {
			t.Fatalf("before take %d: %+v (ok %v); want %d items, the next one the oldest", i, st, ok, n-i)
		}
		d, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Node() != st.Next.Node {
			t.Fatalf("take %d got %s; the cache's next was %s", i, d.Node(), st.Next.Node)
		}
		if st, _ := queueStateOf(t, ctx, cache, "a"); st.Len != n-i {
			t.Fatalf("take %d claimed, not acked: %d items; want %d (claimed ones count, claims do not)", i, st.Len, n-i)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if st, ok := queueStateOf(t, ctx, cache, "a"); ok {
		t.Fatalf("empty queue is there: %+v", st)
	}
}

// A priority queue's cache counts per priority, its next item is the most
// urgent, its oldest the first created; a delay queue's next item is the
// one due first.
func TestQueueCachePriorityAndDelay(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	key := func(p runtime.Params) string { return p.Str(0) }
	prio, err := runtime.NewPriorityQueueCache(runtime.TemplateAt(root+"/p").Str("name"), key, 3)
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, prio.Run, s)
	pq := runtime.NewPriorityQueue(w, runtime.At(root+"/p").Str("name", "x"), runtime.StringCodec(), 3)
	if err := pq.Put(ctx, 2, "bulk"); err != nil {
		t.Fatal(err)
	}
	if err := pq.Put(ctx, 0, "urgent"); err != nil {
		t.Fatal(err)
	}
	st, ok := queueStateOf(t, ctx, prio, "x")
	if !ok || st.Len != 2 || fmt.Sprint(st.ByPriority) != "[1 0 1]" || st.Next.Priority != 0 || st.Oldest.After(st.Next.Created) {
		t.Fatalf("priority queue: %+v (ok %v); want 2 items [1 0 1], the urgent one next", st, ok)
	}
	if v, err := pq.Take(ctx); err != nil || v != "urgent" {
		t.Fatalf("take: %q, %v", v, err)
	}
	if st, _ := queueStateOf(t, ctx, prio, "x"); st.Len != 1 || st.Next.Priority != 2 {
		t.Fatalf("after the urgent one: %+v; want the bulk one next", st)
	}

	delay, err := runtime.NewQueueCache(runtime.TemplateAt(root+"/d").Str("name"), key)
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, delay.Run, s)
	dq := runtime.NewDelayQueue(w, runtime.At(root+"/d").Str("name", "y"), runtime.StringCodec())
	late, early := time.Now().Add(time.Hour).Truncate(time.Millisecond), time.Now().Add(30*time.Minute).Truncate(time.Millisecond)
	if err := dq.Put(ctx, "late", late); err != nil {
		t.Fatal(err)
	}
	if err := dq.Put(ctx, "early", early); err != nil {
		t.Fatal(err)
	}
	if st, ok := queueStateOf(t, ctx, delay, "y"); !ok || st.Len != 2 || !st.Next.Due.Equal(early) || st.Oldest.After(st.Next.Created) {
		t.Fatalf("delay queue: %+v (ok %v); want 2 items, next due %v, none older than the oldest", st, ok, early)
	}
}

// In one-shot mode (ZooKeeper 3.5) a queue's cache follows puts and takes
// too: its reads set the items' watches.
func TestQueueCacheOneShot(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	s, w := connect(t, srv.Servers()), connect(t, srv.Servers())
	root := testRoot(t)
	cache, err := runtime.NewQueueCache(runtime.TemplateAt(root+"/q").Str("name"), func(p runtime.Params) string { return p.Str(0) },
		runtime.WithOneShotWatches())
	if err != nil {
		t.Fatal(err)
	}
	runKindCache(t, cache.Run, s)
	q := runtime.NewQueue(w, runtime.At(root+"/q").Str("name", "a"), runtime.StringCodec(), runtime.WithBucketSize(2))
	for i := range 3 {
		if err := q.Put(ctx, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		if st, _ := queueStateOf(t, ctx, cache, "a"); st.Len != i+1 {
			t.Fatalf("after put %d: %+v; want %d items", i, st, i+1)
		}
	}
	for i := range 3 {
		if _, err := q.Take(ctx); err != nil {
			t.Fatal(err)
		}
		if st, _ := queueStateOf(t, ctx, cache, "a"); st.Len != 2-i {
			t.Fatalf("after take %d: %+v; want %d items", i, st, 2-i)
		}
	}
	if m := cache.Mode(); m != runtime.CacheOneShot {
		t.Fatalf("mode %v", m)
	}
}
