package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

var prioItemsFlag = flag.Int("prio.items", 500_000, "TestPriorityQueueManyItems: items put and taken back (24-85 s under -race on 2 shared cores)")

// Many items over 3 priorities, far past what one getChildren reply could
// list (about 50,000 names): three producers fill one priority each with
// PutAll, concurrently, then one consumer drains the queue with TakeN and
// gets every item once, priority 0 first, each priority in the order it
// was put. 500,000 items by default (the figure; -prio.items sets
// another), on a server of its own with a 1 GiB heap.
func TestPriorityQueueManyItems(t *testing.T) {
	srv := server(t)
	total := *prioItemsFlag
	if total > 50_000 {
		// With the shared server's 128 MiB heap, 500,000 items stalled
		// it for seconds (collecting) and the sessions expired.
		srv = zktest.Start(t, zktest.WithHeapMB(1024))
	}
	dir := testRoot(t)
	ctx := testCtx(t, 10*time.Minute)
	const levels = 3
	const chunk = 5000
	began := time.Now()
	var wg sync.WaitGroup
	for p := range levels {
		q := runtime.NewPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int](), levels)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := total/levels + btoi(p < total%levels)
			for k := 0; k < n; k += chunk {
				items := make([]int, 0, chunk)
				for i := k; i < min(n, k+chunk); i++ {
					items = append(items, p*10_000_000+i)
				}
				if _, err := q.PutAll(ctx, runtime.Priority(p), items); err != nil {
					t.Errorf("PutAll at %d: %v", p, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	filled := time.Since(began)
	cons := runtime.NewPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int](), levels)
	st, err := cons.Stats(ctx)
	if err != nil || st.Len != total {
		t.Fatalf("Stats = %+v, %v; want %d items", st, err, total)
	}
	t.Logf("items per priority %v", st.ByPriority)
	began = time.Now()
	next := make([]int, levels) // next item expected of each priority
	for got := 0; got < total; {
		vs, err := cons.TakeN(ctx, 1000)
		if err != nil {
			t.Fatalf("TakeN after %d items: %v", got, err)
		}
		for _, v := range vs {
			p, i := v/10_000_000, v%10_000_000
			for l := range p {
				if next[l] != st.ByPriority[l] {
					t.Fatalf("item %d of priority %d taken while priority %d has %d of %d left", i, p, l, st.ByPriority[l]-next[l], st.ByPriority[l])
				}
			}
			if i != next[p] {
				t.Fatalf("priority %d: item %d taken, want %d", p, i, next[p])
			}
			next[p] = i + 1
		}
		got += len(vs)
	}
	drained := time.Since(began)
	if n, err := cons.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len after the drain = %d, %v", n, err)
	}
	t.Logf("%d items: put in %v (%.0f/s), taken in %v (%.0f/s)", total,
		filled.Round(time.Millisecond), float64(total)/filled.Seconds(), drained.Round(time.Millisecond), float64(total)/drained.Seconds())
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// A directory of the earlier priority layout (every priority in one
// bucket): while it holds items a handle of the levels layout refuses it
// with ErrSpecMismatch, saying why; once the earlier version drained it,
// the first handle takes it over (the empty bucket removed, the layout
// recorded) and the queue works.
func TestPriorityQueueLegacyLayout(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	c := s.Conn()
	rec := `{"zkgen":1,"kind":"priority_queue","levels":3,"delivery":"at_most_once"}`
	for _, p := range []struct{ path, data string }{
		{"/zkgen-test", ""}, {dir, rec}, {dir + "/b-0000000000", ""}, {dir + "/b-0000000000/item-01-0000000000", `"old"`},
	} {
		if _, err := c.Create(p.path, []byte(p.data), 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatal(err)
		}
	}
	q := runtime.NewPriorityQueue(s, runtime.At(dir), runtime.JSONCodec[string](), 3)
	err := q.Put(ctx, 0, "new")
	if !errors.Is(err, runtime.ErrSpecMismatch) || !strings.Contains(err.Error(), "holds 1 items in the single-directory priority queue layout") {
		t.Fatalf("Put into the earlier layout holding an item = %v; want ErrSpecMismatch saying why", err)
	}
	other := runtime.NewPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[string](), 3)
	if _, err := other.Take(ctx); !errors.Is(err, runtime.ErrSpecMismatch) {
		t.Fatalf("Take from the earlier layout holding an item = %v; want ErrSpecMismatch", err)
	}
	// The earlier version's consumer takes the item.
	if err := c.Delete(dir+"/b-0000000000/item-01-0000000000", -1); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, 1, "new"); err != nil {
		t.Fatalf("Put once the earlier layout is drained = %v", err)
	}
	data, _, err := c.Get(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Layout string }
	if err := json.Unmarshal(data, &got); err != nil || got.Layout != "levels" {
		t.Fatalf("record after the takeover = %s", data)
	}
	if kids, _, _ := c.Children(dir); slices.Contains(kids, "b-0000000000") {
		t.Fatalf("the earlier layout's bucket is still there: %v", kids)
	}
	if v, err := other.Take(ctx); err != nil || v != "new" {
		t.Fatalf("Take after the takeover = %q, %v", v, err)
	}
}

// At-least-once, with faults: a consumer claims the only item (priority 1)
// and its session expires; another consumer, blocked in Take meanwhile
// (priority 0 empty, priority 1's item claimed), gets it from the claims
// watch. A take whose claim reply is lost to a cut still delivers its item
// once; an urgent item put while a consumer waits is delivered first.
func TestAckPriorityQueueExpiredConsumer(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	codec := runtime.StringCodec()
	prod := runtime.NewAckPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), codec, 3)
	if err := prod.Put(ctx, 1, "normal"); err != nil {
		t.Fatal(err)
	}
	pa := zktest.NewProxy(t, srv.Addr())
	sa := connect(t, viaProxy(pa))
	a := runtime.NewAckPriorityQueue(sa, runtime.At(dir), codec, 3)
	fired := pa.CutAfterRequest(zktest.OpMulti) // the claim's reply is lost (a claim is a multi: claim and attempt count)
	da, err := a.Take(ctx)
	if err != nil || da.Value != "normal" {
		t.Fatalf("Take across a cut claim = %v, %v", da, err)
	}
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatal("the claim's multi was not cut")
	}
	b := runtime.NewAckPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), codec, 3)
	got := make(chan *runtime.Delivery[string], 2)
	errs := make(chan error, 2)
	go func() {
		for range 2 {
			d, err := b.Take(ctx)
			if err != nil {
				errs <- err
				return
			}
			got <- d
		}
	}()
	expireVia(t, srv, pa, sa.ID())
	var d *runtime.Delivery[string]
	select {
	case d = <-got:
	case err := <-errs:
		t.Fatal(err)
	}
	if d.Value != "normal" {
		t.Fatalf("Take after the claimer expired = %q, want the released item", d.Value)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := da.Ack(ctx); !errors.Is(err, runtime.ErrClaimLost) && !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Ack by the expired claimer = %v", err)
	}
	// b waits again, every level empty; an urgent item wakes it.
	if err := prod.Put(ctx, 0, "urgent"); err != nil {
		t.Fatal(err)
	}
	select {
	case d = <-got:
	case err := <-errs:
		t.Fatal(err)
	}
	if d.Value != "urgent" {
		t.Fatalf("Take = %q, want urgent", d.Value)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := prod.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v", n, err)
	}
}

// At-least-once under cuts: two consumers, each through a proxy that cuts
// its connection right after some claims and acks (multis) and listings
// reached the server, take and ack 90 items put beforehand over 3
// priorities. Every item is acked exactly once (cuts end no session, so
// none is delivered twice), and each consumer sees the priorities in order
// and each priority's items in the order they were put.
func TestAckPriorityQueueCuts(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const levels, total = 3, 90
	codec := runtime.JSONCodec[int]()
	prod := runtime.NewAckPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), codec, levels, runtime.WithBucketSize(8))
	for p := range levels {
		var items []int
		for v := p; v < total; v += levels {
			items = append(items, v)
		}
		if _, err := prod.PutAll(ctx, runtime.Priority(p), items); err != nil {
			t.Fatal(err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	acked := map[int]int{}
	var cutters []*opCutter
	var wg sync.WaitGroup
	for c := range 2 {
		px := zktest.NewProxy(t, srv.Addr())
		q := runtime.NewAckPriorityQueue(connect(t, viaProxy(px)), runtime.At(dir), codec, levels, runtime.WithBucketSize(8))
		cut := newOpCutter(px, seed, c, 10, zktest.OpMulti, zktest.OpMulti, zktest.OpGetChildren2)
		cutters = append(cutters, cut)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seen []int
			for {
				cut.before()
				d, err := q.Take(cctx)
				if cctx.Err() != nil {
					break
				}
				if err != nil {
					t.Errorf("consumer %d: Take: %v", c, err)
					return
				}
				if err := d.Ack(ctx); err != nil {
					t.Errorf("consumer %d: Ack(%d): %v", c, d.Value, err)
					return
				}
				seen = append(seen, d.Value)
				mu.Lock()
				acked[d.Value]++
				if len(acked) == total {
					cancel()
				}
				mu.Unlock()
			}
			for i := 1; i < len(seen); i++ {
				a, b := seen[i-1], seen[i]
				if a%levels > b%levels || a%levels == b%levels && a > b {
					t.Errorf("consumer %d took %d after %d (priority %d after %d)", c, b, a, b%levels, a%levels)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d connections cut", countCuts(cutters))
	for v := range total {
		if acked[v] != 1 {
			t.Errorf("item %d acked %d times", v, acked[v])
		}
	}
	if n, err := prod.Len(ctx); err != nil || n != 0 {
		t.Errorf("Len = %d, %v", n, err)
	}
}
