package runtime_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A queue holding 500,000 items keeps working: a flat directory of that many
// children could not even be listed (one getChildren reply is capped by
// jute.maxbuffer, about 1 MB), the bucketed queue walks buckets of
// DefaultBucketSize. Every item is put (PutAll: multis of up to 1,000
// creates), counted by Len, and taken back (TakeN: reads pipelined, one multi
// of deletes per batch) in exactly the order it was put. On its own
// standalone server with a bigger heap.
func TestQueue500k(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t, zktest.WithHeapMB(1024))
	ctx := testCtx(t, 10*time.Minute)
	const M = 500_000
	dir := "/scale/queue"
	prod := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
	items := make([]string, M)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	start := time.Now()
	if n, err := prod.PutAll(ctx, items); n != M || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	putDur := time.Since(start)
	if n, err := prod.Len(ctx); n != M || err != nil {
		t.Fatalf("Len = %d, %v; want %d", n, err, M)
	}
	s := connect(t, srv.Servers())
	if bs := childrenOf(t, s, dir); len(bs) < M/runtime.DefaultBucketSize {
		t.Fatalf("%d children of the queue directory, want the items in >= %d buckets", len(bs), M/runtime.DefaultBucketSize)
	}

	start = time.Now()
	cons := runtime.NewQueue(s, runtime.At(dir), runtime.StringCodec())
	next, checked := 0, false
	for next < M {
		got, err := cons.TakeN(ctx, 1000)
		if err != nil {
			t.Fatalf("after %d items: %v", next, err)
		}
		for _, v := range got {
			if v != items[next] {
				t.Fatalf("item %d is %q, want %q", next, v, items[next])
			}
			next++
		}
		if next >= M/2 && !checked {
			checked = true
			if n, err := cons.Len(ctx); n != M-next || err != nil {
				t.Fatalf("Len half way = %d, %v; want %d", n, err, M-next)
			}
		}
	}
	takeDur := time.Since(start)
	if n, err := cons.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len after = %d, %v", n, err)
	}
	t.Logf("500,000 items: put in %v, taken in order in %v", putDur.Round(time.Millisecond), takeDur.Round(time.Millisecond))
}
