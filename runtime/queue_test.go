package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// job is the payload of the queue tests: who put it and its number in that
// producer's sequence.
type job struct {
	P int `json:"p"`
	N int `json:"n"`
}

func jobs(p, from, n int) []job {
	out := make([]job, n)
	for i := range out {
		out[i] = job{P: p, N: from + i}
	}
	return out
}

// One producer, one consumer: FIFO across several buckets (size 16), Put
// and PutAll mixed, Len right before and after, and the drained buckets
// removed (only the highest, open one stays).
func TestQueueFIFOAndLen(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(16))

	if n, err := q.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len of a queue never used = %d, %v", n, err)
	}
	for i := 0; i < 20; i++ {
		if err := q.Put(ctx, job{0, i}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := q.PutAll(ctx, jobs(0, 20, 80)); n != 80 || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	if n, err := q.Len(ctx); n != 100 || err != nil {
		t.Fatalf("Len = %d, %v; want 100", n, err)
	}
	if bs := childrenOf(t, s, dir); len(bs) < 4 {
		t.Fatalf("want the items spread over several buckets, have %v", bs)
	}
	// A second consumer handle on another session sees the same order.
	c := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(16))
	for i := 0; i < 50; i++ {
		j, err := c.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if j.N != i {
			t.Fatalf("took %d, want %d", j.N, i)
		}
	}
	got, err := c.TakeN(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	for len(got) < 50 {
		more, err := c.TakeN(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, more...)
	}
	for i, j := range got {
		if j.N != 50+i {
			t.Fatalf("TakeN item %d is %d, want %d", i, j.N, 50+i)
		}
	}
	if n, err := q.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len after draining = %d, %v", n, err)
	}
	var buckets []string
	for _, k := range childrenOf(t, s, dir) {
		if strings.HasPrefix(k, "b-") {
			buckets = append(buckets, k)
		}
	}
	if len(buckets) != 1 {
		t.Fatalf("drained buckets left behind: %v", buckets)
	}
}

// P producers and K consumers, each on its own session, move M items: every
// item is consumed exactly once, and each consumer (alone or with others)
// sees each producer's items in the order they were put.
func TestQueueProducersConsumers(t *testing.T) {
	for _, k := range []int{1, 4} {
		t.Run(fmt.Sprintf("consumers=%d", k), func(t *testing.T) { queueProducersConsumers(t, k) })
	}
}

func queueProducersConsumers(t *testing.T, K int) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const P, perProducer = 4, 500
	const M = P * perProducer

	var produced sync.WaitGroup
	errs := make(chan error, P+K)
	for p := 0; p < P; p++ {
		q := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(100))
		produced.Add(1)
		go func() {
			defer produced.Done()
			for n := 0; n < perProducer; {
				if n%50 == 0 { // a batch now and then
					k, err := q.PutAll(ctx, jobs(p, n, 10))
					if err != nil {
						errs <- err
						return
					}
					n += k
					continue
				}
				if err := q.Put(ctx, job{p, n}); err != nil {
					errs <- err
					return
				}
				n++
			}
		}()
	}

	var mu sync.Mutex
	seen := map[job]int{}
	var total atomic.Int64
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var consumed sync.WaitGroup
	for k := 0; k < K; k++ {
		q := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(100))
		consumed.Add(1)
		go func() {
			defer consumed.Done()
			last := map[int]int{}
			for {
				j, err := q.Take(cctx)
				if err != nil {
					if cctx.Err() == nil {
						errs <- err
					}
					return
				}
				if prev, ok := last[j.P]; ok && j.N <= prev {
					select {
					case errs <- fmt.Errorf("consumer %d: producer %d's item %d after %d", k, j.P, j.N, prev):
					default:
					}
				}
				last[j.P] = j.N
				mu.Lock()
				seen[j]++
				mu.Unlock()
				if total.Add(1) == M {
					stop()
				}
			}
		}()
	}
	produced.Wait()
	consumed.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("did not finish: %d of %d consumed", total.Load(), M)
	}
	for p := 0; p < P; p++ {
		for n := 0; n < perProducer; n++ {
			if c := seen[job{p, n}]; c != 1 {
				t.Errorf("item %d/%d consumed %d times", p, n, c)
			}
		}
	}
	if len(seen) != M {
		t.Errorf("%d distinct items consumed, want %d", len(seen), M)
	}
	if n, err := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]()).Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len after = %d, %v", n, err)
	}
}

// A consumer takes from its cached listing: taking 1,000 items one by one
// costs a handful of getChildren requests, not one per item (counted by the
// proxy the consumer's session goes through).
func TestQueueNoRelistPerItem(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const M, bucket = 1000, 250
	prod := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(bucket))
	if n, err := prod.PutAll(ctx, jobs(0, 0, M)); n != M || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	p := zktest.NewProxy(t, srv.Addr())
	cons := runtime.NewQueue(connect(t, []string{p.Addr()}), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(bucket))
	lists := func() int64 { return p.Requests(zktest.OpGetChildren) + p.Requests(zktest.OpGetChildren2) }
	before := lists()
	for i := 0; i < M; i++ {
		j, err := cons.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if j.N != i {
			t.Fatalf("took %d, want %d", j.N, i)
		}
	}
	n := lists() - before
	t.Logf("%d getChildren requests for %d items in %d buckets", n, M, M/bucket)
	// Per bucket: the listing that fills the cache, the one that finds it
	// used up, and the queue directory's listing to move on.
	if limit := int64(3*(M/bucket) + 3); n > limit {
		t.Fatalf("%d getChildren requests for %d items: the consumer re-lists (want at most %d)", n, M, limit)
	}
}

// A put whose reply is lost to a connection cut is not repeated: the item is
// in the queue once, even when a consumer takes it before the producer
// finds out whether its put happened.
func TestQueuePutConnectionLossNoDuplicate(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	prod := runtime.NewQueue(connect(t, []string{p.Addr()}), runtime.At(dir), runtime.JSONCodec[job]())
	cons := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if err := prod.Put(ctx, job{0, 0}); err != nil { // directories in place
		t.Fatal(err)
	}
	if j, err := cons.Take(ctx); err != nil || j.N != 0 {
		t.Fatalf("Take = %v, %v", j, err)
	}

	for round := 1; round <= 5; round++ {
		fired := p.CutAfterRequest(zktest.OpMulti)
		taken := make(chan job, 1)
		go func() {
			j, err := cons.Take(ctx)
			if err != nil {
				t.Error(err)
			}
			taken <- j
		}()
		if err := prod.Put(ctx, job{0, round}); err != nil {
			t.Fatalf("round %d: Put across a cut: %v", round, err)
		}
		<-fired
		if j := <-taken; j.N != round {
			t.Fatalf("round %d: took %v", round, j)
		}
		if n, err := cons.Len(ctx); n != 0 || err != nil {
			t.Fatalf("round %d: Len = %d, %v after the one item was taken: duplicated put", round, n, err)
		}
	}
}

// Items that cannot be decoded are reported with their path and left in
// place; the consumer goes on with the next item.
func TestQueueDecodeFailure(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	raw := runtime.NewQueue(s, runtime.At(dir), runtime.BytesCodec())
	q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[job]())
	if err := raw.Put(ctx, []byte("not json")); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, job{0, 7}); err != nil {
		t.Fatal(err)
	}
	_, err := q.Take(ctx)
	if !errors.Is(err, runtime.ErrDecode) || !strings.Contains(err.Error(), dir+"/b-0000000000/item-") {
		t.Fatalf("Take of a bad item = %v; want ErrDecode with the node path", err)
	}
	if j, err := q.Take(ctx); err != nil || j.N != 7 {
		t.Fatalf("next Take = %v, %v", j, err)
	}
	if n, _ := q.Len(ctx); n != 1 {
		t.Fatalf("the bad item should be left in place; Len = %d", n)
	}
	if b, err := raw.Take(ctx); err != nil || string(b) != "not json" {
		t.Fatalf("raw Take = %q, %v", b, err)
	}
}

// A Take cancelled while waiting returns ctx's error and leaves nothing
// behind; a Take waiting on an empty queue wakes for a Put.
func TestQueueTakeWaitsAndCancels(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	q := runtime.NewQueue(s, runtime.At(dir), runtime.StringCodec())

	cctx, cancel := context.WithCancel(ctx)
	res := make(chan error, 1)
	go func() { _, err := q.Take(cctx); res <- err }()
	cancel()
	if err := <-res; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Take = %v", err)
	}

	got := make(chan string, 1)
	go func() {
		v, err := q.Take(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- v
	}()
	other := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
	if err := other.Put(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "hello" {
		t.Fatalf("took %q", v)
	}
	waitChildren(t, ctx, s, dir+"/marks", 0)
}

// At-least-once: an item stays claimed until Ack; a consumer killed before
// Ack releases its item to the others, and a waiting consumer wakes for it.
func TestAckQueueKilledConsumerLosesNothing(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const M = 20
	prod := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(8))
	if n, err := prod.PutAll(ctx, jobs(0, 0, M)); n != M || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}

	doomed := connect(t, srv.Servers())
	a := runtime.NewAckQueue(doomed, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(8))
	d, err := a.Take(ctx)
	if err != nil || d.Value.N != 0 {
		t.Fatalf("Take = %v, %v", d, err)
	}

	b := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(8))
	seen := map[int]bool{}
	for i := 1; i < M; i++ {
		d, err := b.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Value.N != i {
			t.Fatalf("took %d, want %d (item 0 is claimed)", d.Value.N, i)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		seen[d.Value.N] = true
	}
	if n, err := b.Len(ctx); n != 1 || err != nil {
		t.Fatalf("Len = %d, %v; the claimed item stays until acked", n, err)
	}
	got := make(chan *runtime.Delivery[job], 1)
	go func() {
		d, err := b.Take(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- d
	}()
	// The consumer holding item 0 dies before acking it.
	doomed.Close()
	d2 := <-got
	if d2 == nil || d2.Value.N != 0 {
		t.Fatalf("after the kill, took %v", d2)
	}
	if err := d2.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d2.Ack(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("second Ack = %v", err)
	}
	if err := d.Ack(ctx); !errors.Is(err, runtime.ErrClaimLost) {
		t.Fatalf("Ack on the dead session = %v; want ErrClaimLost", err)
	}
	if n, err := b.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
}

// At-least-once with several consumers, one of which is killed after taking
// some items without acking them: every item is acked, none is lost.
func TestAckQueueConsumersWithKill(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, 2*time.Minute)
	const M, K = 300, 3
	prod := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(64))
	if n, err := prod.PutAll(ctx, jobs(0, 0, M)); n != M || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	doomed := connect(t, srv.Servers())
	victim := runtime.NewAckQueue(doomed, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(64))
	var unacked []int
	for i := 0; i < 5; i++ {
		d, err := victim.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		unacked = append(unacked, d.Value.N)
	}

	var mu sync.Mutex
	acked := map[int]int{}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for k := 0; k < K; k++ {
		q := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithBucketSize(64))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := q.TakeN(cctx, 7)
				if err != nil {
					if cctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				for _, d := range ds {
					if err := d.Ack(ctx); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					acked[d.Value.N]++
					done := len(acked) == M
					mu.Unlock()
					if done {
						stop()
					}
				}
			}
		}()
	}
	// Kill the victim once the others are at work.
	doomed.Close()
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatalf("did not finish: %d of %d acked (victim held %v)", len(acked), M, unacked)
	}
	for i := 0; i < M; i++ {
		if acked[i] != 1 {
			t.Errorf("item %d acked %d times", i, acked[i])
		}
	}
}

// Priority order across priorities, FIFO within one, and a newly put urgent
// item overtakes older bulk items a consumer has already listed.
func TestPriorityQueueOrder(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const urgent, normal, bulk runtime.Priority = 0, 1, 2
	prod := runtime.NewPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), 3)
	for i := 0; i < 10; i++ {
		for _, p := range []runtime.Priority{bulk, normal, urgent} {
			if err := prod.Put(ctx, p, job{int(p), i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := prod.Put(ctx, 3, job{}); !errors.Is(err, runtime.ErrPriorityRange) {
		t.Fatalf("Put at priority 3 of 3 = %v", err)
	}
	cs := connect(t, srv.Servers())
	cons := runtime.NewPriorityQueue(cs, runtime.At(dir), runtime.JSONCodec[job](), 3)
	var got []job
	for i := 0; i < 20; i++ {
		j, err := cons.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, j)
	}
	for i, j := range got {
		if want := (job{i / 10, i % 10}); j != want {
			t.Fatalf("item %d is %v, want %v (all: %v)", i, j, want, got)
		}
	}
	// The consumer's cached listing now holds bulk items 0..9.
	if j, err := cons.Take(ctx); err != nil || j != (job{2, 0}) {
		t.Fatalf("Take = %v, %v", j, err)
	}
	if err := prod.Put(ctx, urgent, job{0, 99}); err != nil {
		t.Fatal(err)
	}
	// A read on the consumer's session after the put returns only after
	// the child-watch event (ZooKeeper orders them), so the event is there.
	if _, err := cs.Conn().Sync(dir); err != nil {
		t.Fatal(err)
	}
	if j, err := cons.Take(ctx); err != nil || j != (job{0, 99}) {
		t.Fatalf("Take after an urgent put = %v, %v; want the urgent item first", j, err)
	}
	rest, err := cons.TakeN(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ns []int
	for _, j := range rest {
		ns = append(ns, j.N)
	}
	if !slices.Equal(ns, []int{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		t.Fatalf("rest = %v", rest)
	}
}

// At-least-once priority queue: claimed items are skipped by others.
func TestAckPriorityQueue(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	q := runtime.NewAckPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec(), 2)
	if _, err := q.PutAll(ctx, 1, []string{"b1", "b2"}); err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, 0, "a1"); err != nil {
		t.Fatal(err)
	}
	d, err := q.Take(ctx)
	if err != nil || d.Value != "a1" {
		t.Fatalf("Take = %v, %v", d, err)
	}
	other := runtime.NewAckPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec(), 2)
	d2, err := other.Take(ctx)
	if err != nil || d2.Value != "b1" {
		t.Fatalf("other Take = %v, %v", d2, err)
	}
	if err := d.Release(ctx); err != nil {
		t.Fatal(err)
	}
	d3, err := q.Take(ctx)
	if err != nil || d3.Value != "a1" {
		t.Fatalf("Take after release = %v, %v", d3, err)
	}
	for _, d := range []*runtime.Delivery[string]{d2, d3} {
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := q.Len(ctx); n != 1 {
		t.Fatalf("Len = %d", n)
	}
}

var _ = zk.ErrNoNode

// A take whose multi reply is lost to a connection cut still delivers the
// item: the take's marker shows the multi happened, so the item is neither
// lost nor taken twice.
func TestQueueTakeConnectionLoss(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	prod := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if _, err := prod.PutAll(ctx, jobs(0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	p := zktest.NewProxy(t, srv.Addr())
	cons := runtime.NewQueue(connect(t, []string{p.Addr()}), runtime.At(dir), runtime.JSONCodec[job]())
	for i := 0; i < 3; i++ {
		fired := p.CutAfterRequest(zktest.OpMulti)
		j, err := cons.Take(ctx)
		if err != nil || j.N != i {
			t.Fatalf("Take across a cut = %v, %v; want item %d", j, err, i)
		}
		<-fired
	}
	if n, err := prod.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
}

// A put cancelled before it is sent puts nothing; a priority outside the
// queue's range is refused before anything is sent.
func TestQueuePutCancelled(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	q := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := q.Put(cctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Put = %v", err)
	}
	if n, err := q.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
}

// When the session ends while a put's reply is lost, the put's outcome
// cannot be known: Put says so with ErrPutUncertain instead of guessing
// (here the items did land, and are in the queue once).
func TestQueuePutUncertainOnExpiry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	p := zktest.NewProxy(t, srv.Addr())
	ps := connect(t, []string{p.Addr()})
	prod := runtime.NewQueue(ps, runtime.At(dir), runtime.StringCodec())
	if err := prod.Put(ctx, "setup"); err != nil {
		t.Fatal(err)
	}
	creds, ok := p.Session(ps.ID())
	if !ok {
		t.Fatal("proxy did not see the session")
	}
	p.Reject(true) // no reconnecting once cut
	fired := p.CutAfterRequest(zktest.OpMulti)
	res := make(chan error, 1)
	go func() { res <- prod.Put(ctx, "in flight") }()
	<-fired
	zktest.ExpireSession(t, srv.Servers(), creds.ID, creds.Passwd)
	if err := <-res; !errors.Is(err, runtime.ErrPutUncertain) {
		t.Fatalf("Put across an expiry = %v; want ErrPutUncertain", err)
	}
	q := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
	if n, err := q.Len(ctx); n != 2 || err != nil {
		t.Fatalf("Len = %d, %v; want 2", n, err)
	}
}

// Small items ride in their names, large ones in their data, and both kinds
// mixed in one queue are delivered exactly once, in order to a lone consumer
// and without loss to concurrent ones (at-most-once and at-least-once).
func TestQueueInlineAndLargeItems(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	obs := connect(t, srv.Servers())
	item := func(i int) string {
		if i%3 == 0 {
			return fmt.Sprintf("%04d", i) + strings.Repeat("x", 200+i) // stored in the node's data
		}
		return fmt.Sprintf("%04d", i) // carried in the name
	}
	const N = 60
	for _, ack := range []bool{false, true} {
		dir := testRoot(t)
		// The producer uses the consumers' delivery mode: the directory
		// records it, and a handle of the other mode is refused.
		var put interface {
			Put(context.Context, string) error
		} = runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
		if ack {
			put = runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.StringCodec())
		}
		for i := 0; i < N; i++ {
			if err := put.Put(ctx, item(i)); err != nil {
				t.Fatal(err)
			}
		}
		inline, stored := 0, 0
		for _, b := range childrenOf(t, obs, dir) {
			if !strings.HasPrefix(b, "b-") {
				continue
			}
			for _, k := range childrenOf(t, obs, dir+"/"+b) {
				data, _, err := obs.Conn().Get(dir + "/" + b + "/" + k)
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(k, "item-.") {
					inline++
					if len(data) != 0 {
						t.Errorf("inline item %s has data too (%d bytes)", k, len(data))
					}
				} else {
					stored++
				}
			}
		}
		if inline != N-N/3 || stored != N/3 {
			t.Fatalf("%d inline and %d stored items, want %d and %d", inline, stored, N-N/3, N/3)
		}
		var mu sync.Mutex
		seen := map[string]int{}
		taken := 0
		cctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for c := 0; c < 2; c++ {
			s := connect(t, srv.Servers())
			q := runtime.NewQueue(s, runtime.At(dir), runtime.StringCodec())
			aq := runtime.NewAckQueue(s, runtime.At(dir), runtime.StringCodec())
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var v string
					var err error
					if ack {
						var d *runtime.Delivery[string]
						if d, err = aq.Take(cctx); err == nil {
							v, err = d.Value, d.Ack(ctx)
						}
					} else {
						v, err = q.Take(cctx)
					}
					if err != nil {
						if cctx.Err() == nil {
							t.Error(err)
							stop()
						}
						return // or all taken, by this consumer or the other
					}
					mu.Lock()
					seen[v]++
					if taken++; taken == N {
						stop()
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		stop()
		for i := 0; i < N; i++ {
			if seen[item(i)] != 1 {
				t.Errorf("ack=%v: item %d delivered %d times", ack, i, seen[item(i)])
			}
		}
		// A lone consumer gets them in order.
		for i := 0; i < N; i++ {
			if err := put.Put(ctx, item(i)); err != nil {
				t.Fatal(err)
			}
		}
		ls := connect(t, srv.Servers())
		lone := runtime.NewQueue(ls, runtime.At(dir), runtime.StringCodec())
		alone := runtime.NewAckQueue(ls, runtime.At(dir), runtime.StringCodec())
		for i := 0; i < N; i++ {
			var v string
			var err error
			if ack {
				var d *runtime.Delivery[string]
				if d, err = alone.Take(ctx); err == nil {
					v, err = d.Value, d.Ack(ctx)
				}
			} else {
				v, err = lone.Take(ctx)
			}
			if err != nil || v != item(i) {
				t.Fatalf("ack=%v: lone Take %d = %.10q, %v; want %.10q", ack, i, v, err, item(i))
			}
		}
	}
}
