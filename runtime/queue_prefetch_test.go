package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// takeInts takes n items from q, failing the test on an error.
func takeInts(t *testing.T, ctx context.Context, q *runtime.Queue[int], n int) []int {
	t.Helper()
	var out []int
	for range n {
		v, err := q.Take(ctx)
		if err != nil {
			t.Fatalf("Take after %v: %v", out, err)
		}
		out = append(out, v)
	}
	return out
}

// putInts puts from..to-1 into q.
func putInts(t *testing.T, ctx context.Context, q *runtime.Queue[int], from, to int) {
	t.Helper()
	for v := from; v < to; v++ {
		if err := q.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
}

// bigItem is item v of 98 bytes: its JSON is read with getData, not
// carried in its node's name.
func bigItem(v int) string { return fmt.Sprintf("%03d%s", v, strings.Repeat("x", 95)) }

// seq returns from..to-1.
func seq(from, to int) []int {
	var out []int
	for v := from; v < to; v++ {
		out = append(out, v)
	}
	return out
}

// A prefetching consumer takes a chunk of items in one go and serves them
// from its buffer, in order: a chunk costs its claim, one read per item and
// one multi; its chunk claims are gone once it took them. When its session is
// closed, the items still buffered go back under their own names: another
// consumer takes them next, in their places.
func TestQueuePrefetchGivesBackOnClose(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	// Items of 100 bytes: read with getData, not carried in their names.
	codec := runtime.JSONCodec[string]()
	item := bigItem
	items := func(from, to int) []string {
		var out []string
		for v := from; v < to; v++ {
			out = append(out, item(v))
		}
		return out
	}
	prod := runtime.NewQueue(admin, runtime.At(dir), codec)
	if _, err := prod.PutAll(ctx, items(0, 40)); err != nil {
		t.Fatal(err)
	}
	take := func(q *runtime.Queue[string], n int) []string {
		var out []string
		for range n {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatalf("Take after %d: %v", len(out), err)
			}
			out = append(out, v)
		}
		return out
	}

	px := zktest.NewProxy(t, srv.Addr())
	cs := connect(t, viaProxy(px))
	cq := runtime.NewQueue(cs, runtime.At(dir), codec, runtime.WithPrefetch(16))
	if got := take(cq, 16); !slices.Equal(got, items(0, 16)) {
		t.Fatalf("prefetching consumer took %v, want items 0 to 15", got)
	}
	px.ResetCounts()
	if got := take(cq, 3); !slices.Equal(got, items(16, 19)) {
		t.Fatalf("prefetching consumer took %v, want items 16 to 18", got)
	}
	c := px.Counts()
	if c.Requests[zktest.OpMulti] != 2 || c.Requests[zktest.OpGetData] != 16 || c.Total() != 18 {
		t.Errorf("3 takes of a chunk: requests %v, want 2 multis (claim, take) and 16 reads", c.Requests)
	}
	if claims := childrenOf(t, admin, dir+"/claims"); len(claims) != 0 {
		t.Errorf("chunk claims left after the take: %v", claims)
	}
	if n, err := prod.Len(ctx); err != nil || n != 8 {
		t.Fatalf("Len = %d, %v; want 8 (32 taken in two chunks)", n, err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := prod.Len(ctx); err != nil || n != 21 {
		t.Fatalf("Len after Close = %d, %v; want 21 (13 given back)", n, err)
	}
	if got := take(prod, 21); !slices.Equal(got, items(19, 40)) {
		t.Fatalf("after the give-back: took %v, want items 19 to 39", got)
	}
}

// A buffered item whose bucket was dropped meanwhile (taken empty by
// another consumer) goes back at the tail.
func TestQueuePrefetchGiveBackToTail(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	opt := runtime.WithBucketSize(4)
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int](), opt)
	putInts(t, ctx, prod, 0, 12)
	cs := connect(t, srv.Servers())
	cq := runtime.NewQueue(cs, runtime.At(dir), runtime.JSONCodec[int](), opt, runtime.WithPrefetch(16))
	if got := takeInts(t, ctx, cq, 1); !slices.Equal(got, []int{0}) {
		t.Fatalf("took %v, want [0]", got)
	}
	other := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int](), opt)
	if got := takeInts(t, ctx, other, 8); !slices.Equal(got, seq(4, 12)) {
		t.Fatalf("other consumer took %v, want %v", got, seq(4, 12))
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if got := takeInts(t, ctx, other, 3); !slices.Equal(got, seq(1, 4)) {
		t.Fatalf("after the give-back: took %v, want %v", got, seq(1, 4))
	}
	if n, err := prod.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0", n, err)
	}
}

// Items already taken into the buffer are handed out even after the
// caller's ctx ended or the session expired: a consumer that takes until
// it gets an error loses none.
func TestQueuePrefetchServesBufferAfterEnd(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
	putInts(t, ctx, prod, 0, 10)
	px := zktest.NewProxy(t, srv.Addr())
	cs := connect(t, viaProxy(px))
	cq := runtime.NewQueue(cs, runtime.At(dir), runtime.JSONCodec[int](), runtime.WithPrefetch(8))
	if got := takeInts(t, ctx, cq, 2); !slices.Equal(got, seq(0, 2)) {
		t.Fatalf("took %v, want [0 1]", got)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if got := takeInts(t, done, cq, 2); !slices.Equal(got, seq(2, 4)) {
		t.Fatalf("with an ended ctx: took %v, want [2 3]", got)
	}
	expireVia(t, srv, px, cs.ID())
	select {
	case <-cs.Done():
	case <-ctx.Done():
		t.Fatal("session did not end")
	}
	got := takeInts(t, ctx, cq, 4)
	if !slices.Equal(got, seq(4, 8)) {
		t.Fatalf("after expiry: took %v, want %v", got, seq(4, 8))
	}
	if _, err := cq.Take(ctx); !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Take with the buffer empty after expiry: %v, want ErrSessionExpired", err)
	}
	if got := takeInts(t, ctx, prod, 2); !slices.Equal(got, seq(8, 10)) {
		t.Fatalf("the rest: %v, want [8 9]", got)
	}
}

// Two prefetching consumers on one backlog skip each other's chunks: every
// item is taken once, and each consumer's items come in order.
func TestQueuePrefetchConsumersShareChunks(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
	const n = 400
	vs := seq(0, n)
	if _, err := prod.PutAll(ctx, vs); err != nil {
		t.Fatal(err)
	}
	got := make([][]int, 3)
	errs := make(chan error, len(got))
	for i := range got {
		q := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int](), runtime.WithPrefetch(16))
		go func() {
			for {
				tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
				v, err := q.Take(tctx)
				cancel()
				switch {
				case err == nil:
					got[i] = append(got[i], v)
					continue
				case !errors.Is(err, context.DeadlineExceeded):
					errs <- err
					return
				}
				// Nothing for this consumer now (its buffer is empty): done
				// once the queue is empty too.
				if left, err := prod.Len(ctx); err != nil || left == 0 {
					errs <- err
					return
				}
			}
		}()
	}
	for range got {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var all []int
	for i, g := range got {
		if !slices.IsSorted(g) {
			t.Errorf("consumer %d took its items out of order: %v", i, g)
		}
		all = append(all, g...)
	}
	slices.Sort(all)
	if !slices.Equal(all, vs) {
		t.Fatalf("took %d items (%v...), want each of %d once", len(all), all[:min(len(all), 20)], n)
	}
	t.Logf("items per consumer: %d, %d, %d", len(got[0]), len(got[1]), len(got[2]))
}

// Peek on a prefetching handle shows the oldest item of its buffer, the
// one its next Take returns.
func TestQueuePrefetchPeek(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	s := connect(t, srv.Servers())
	q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[int](), runtime.WithPrefetch(4))
	putInts(t, ctx, q, 0, 6)
	takeInts(t, ctx, q, 1)
	for want := 1; want < 6; want++ {
		v, ok, err := q.Peek(ctx)
		if err != nil || !ok || v != want {
			t.Fatalf("Peek = %d, %v, %v; want %d", v, ok, err, want)
		}
		if got := takeInts(t, ctx, q, 1); got[0] != want {
			t.Fatalf("Take after Peek = %d, want %d", got[0], want)
		}
	}
}

// A prefetching take cut off at its chunk claim (a multi) or at its reads:
// with the session kept, the take goes on and returns the head; with the
// session expired, it fails, its claim vanishes with the session and
// another consumer gets every item, in order, none lost or repeated.
func TestQueuePrefetchFaults(t *testing.T) {
	srv := server(t)
	for _, c := range []struct {
		name string
		op   int32
		kind fault
	}{
		{"claim/cut", zktest.OpMulti, cut},
		{"claim/expire", zktest.OpMulti, cutThenExpire},
		{"read/cut", zktest.OpGetData, cut},
		{"read/expire", zktest.OpGetData, cutThenExpire},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testCtx(t, time.Minute)
			dir := testRoot(t)
			admin := connect(t, srv.Servers())
			codec := runtime.JSONCodec[string]()
			item := func(v int) string { return fmt.Sprintf("%03d%s", v, strings.Repeat("x", 60)) }
			prod := runtime.NewQueue(admin, runtime.At(dir), codec)
			var all []string
			for v := range 20 {
				all = append(all, item(v))
			}
			if _, err := prod.PutAll(ctx, all); err != nil {
				t.Fatal(err)
			}
			makeDirs(t, admin, dir+"/claims", dir+"/marks")
			f := newFaulty(t, srv)
			q := runtime.NewQueue(f.s, runtime.At(dir), codec, runtime.WithPrefetch(8))
			var got string
			err := f.inject(t, ctx, srv, c.op, c.kind, nil, func() error {
				var err error
				got, err = q.Take(ctx)
				return err
			})
			rest := all
			switch c.kind {
			case cut:
				if err != nil || got != all[0] {
					t.Fatalf("Take = %.3s, %v; want item 000", got, err)
				}
				for _, want := range all[1:8] { // the rest of its chunk, from memory
					if v, err := q.Take(ctx); err != nil || v != want {
						t.Fatalf("Take = %.3s, %v; want %.3s", v, err, want)
					}
				}
				rest = all[8:]
			default:
				if !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("Take = %.3s, %v; want ErrSessionExpired", got, err)
				}
			}
			other := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), codec, runtime.WithPrefetch(8))
			for _, want := range rest {
				if v, err := other.Take(ctx); err != nil || v != want {
					t.Fatalf("other consumer: Take = %.3s, %v; want %.3s", v, err, want)
				}
			}
			if n, err := prod.Len(ctx); err != nil || n != 0 {
				t.Fatalf("Len = %d, %v; want 0", n, err)
			}
		})
	}
}

// An undecodable item in a prefetched chunk is left in place and reported
// once the chunk's other items were handed out, not alongside one of them
// (a caller seeing an error would drop the item that came with it).
func TestQueuePrefetchUndecodable(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	s := connect(t, srv.Servers())
	raw := runtime.NewQueue(s, runtime.At(dir), runtime.StringCodec())
	for _, v := range []string{"1", "not json", "2", "3"} {
		if err := raw.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	q := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int](), runtime.WithPrefetch(4))
	for _, want := range []int{1, 2, 3} {
		if v, err := q.Take(ctx); err != nil || v != want {
			t.Fatalf("Take = %d, %v; want %d", v, err, want)
		}
	}
	if _, err := q.Take(ctx); !errors.Is(err, runtime.ErrDecode) {
		t.Fatalf("Take after the good items = %v, want ErrDecode", err)
	}
	if n, err := raw.Len(ctx); err != nil || n != 1 {
		t.Fatalf("Len = %d, %v; want 1 (the undecodable item, left in place)", n, err)
	}
}

// A take whose multi the server applied, and whose session then ended
// before the reply came (the client heard nothing and gave the session up),
// must not say "nothing taken": the item is gone. It returns
// ErrTakeUncertain (TestSoak lost an item this way, seed
// 1795424341818267186: the take said ErrSessionExpired alone).
func TestQueueTakeSessionEndsUnderMulti(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[string]())
	if err := prod.Put(ctx, strings.Repeat("x", 100)); err != nil {
		t.Fatal(err)
	}
	makeDirs(t, admin, dir+"/marks")
	px := zktest.NewProxy(t, srv.Addr())
	s := connect(t, viaProxy(px), runtime.WithSessionTimeout(3*time.Second))
	q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[string]())
	held := px.HoldRepliesAfterRequest(zktest.OpMulti)
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	_, err := q.Take(tctx)
	select {
	case <-held:
	default:
		t.Fatalf("Take returned (%v) before its multi was held", err)
	}
	if !errors.Is(err, runtime.ErrTakeUncertain) || !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Take = %v; want ErrTakeUncertain wrapping ErrSessionExpired", err)
	}
	if n, err := prod.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0 (the server applied the take)", n, err)
	}
}

// A chunk claim whose create reached the server but whose reply was lost,
// retried after another consumer took one of the chunk's items, is found
// gone and given up: the claim the lost attempt made must go too, or the
// chunk's other items stay busy for the session's lifetime, skipped by every
// consumer, the claimant too (TestQueuePrefetchHistoryLinearizable/bag,
// seed 1795425945643955534, stalled with items left). The proxy holds the
// reconnection until the item is taken, so the retry finds it gone.
func TestQueuePrefetchLostClaimReleased(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	item := bigItem
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[string]())
	if _, err := prod.PutAll(ctx, []string{item(0), item(1), item(2), item(3)}); err != nil {
		t.Fatal(err)
	}
	makeDirs(t, admin, dir+"/claims", dir+"/marks")
	var bucket string
	for _, k := range childrenOf(t, admin, dir) {
		if k != "claims" && k != "marks" {
			bucket = dir + "/" + k
		}
	}
	names := childrenOf(t, admin, bucket)
	slices.Sort(names)
	if len(names) != 4 {
		t.Fatalf("bucket %s holds %v; want 4 items", bucket, names)
	}

	px := zktest.NewProxy(t, srv.Addr())
	cs := connect(t, viaProxy(px))
	cq := runtime.NewQueue(cs, runtime.At(dir), runtime.JSONCodec[string](), runtime.WithPrefetch(4))
	px.Pause(true) // the reconnection after the cut waits
	cut := px.CutAfterRequest(zktest.OpMulti)
	type result struct {
		v   string
		err error
	}
	got := make(chan result, 1)
	go func() {
		v, err := cq.Take(ctx)
		got <- result{v, err}
	}()
	select {
	case <-cut:
	case r := <-got:
		t.Fatalf("Take returned (%.3s, %v) before its claim was cut", r.v, r.err)
	}
	if claims := childrenOf(t, admin, dir+"/claims"); len(claims) != 1 {
		t.Fatalf("claims after the cut claim: %v; want the consumer's one", claims)
	}
	if err := admin.Conn().Delete(bucket+"/"+names[0], -1); err != nil {
		t.Fatal(err)
	}
	px.Pause(false)
	r := <-got
	if r.err != nil || r.v != item(1) {
		t.Fatalf("Take = %.3s, %v; want item 001", r.v, r.err)
	}
	if rest := []string{takeValue(t, ctx, cq), takeValue(t, ctx, cq)}; !slices.Equal(rest, []string{item(2), item(3)}) {
		t.Fatalf("next takes: %.3s; want items 002, 003", rest)
	}
	if claims := childrenOf(t, admin, dir+"/claims"); len(claims) != 0 {
		t.Errorf("claims left after the chunk was taken: %v", claims)
	}
}

// takeValue takes one item from q, failing the test on an error.
func takeValue[T any](t *testing.T, ctx context.Context, q *runtime.Queue[T]) T {
	t.Helper()
	v, err := q.Take(ctx)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return v
}

// The prefetch buffer is the session's: a Take on a handle made for it
// alone (as a generated Client's c.Jobs().Take does) serves what an
// earlier such handle prefetched, in order, so nothing is stranded in a
// handle nobody calls again; and Close gives back what no handle served.
func TestQueuePrefetchBufferIsTheSessions(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[int]())
	if _, err := prod.PutAll(ctx, seq(0, 8)); err != nil {
		t.Fatal(err)
	}
	s := connect(t, srv.Servers())
	handle := func() *runtime.Queue[int] {
		return runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[int](), runtime.WithPrefetch(16))
	}
	for want := range 5 {
		v, err := handle().Take(ctx)
		if err != nil || v != want {
			t.Fatalf("take %d on a new handle: %v, %v; want %d", want, v, err, want)
		}
	}
	if n, err := prod.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len after the first take prefetched all: %d, %v; want 0", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := takeInts(t, ctx, prod, 3); !slices.Equal(got, seq(5, 8)) {
		t.Fatalf("after Close: %v, want the 3 unserved items [5 6 7] back", got)
	}
}

// A Take whose ctx ends while its chunk claim's multi is on its way has
// not learnt the multi's outcome: the server may still apply it (here it
// does). The claim must then be released, as after a lost reply: left, it
// keeps the chunk's items from every prefetching consumer for the
// session's lifetime, and the session lives on. The proxy delays every
// frame by a second, so the multi is on its way when the test, seeing it
// sent, cancels the Take; the other consumer starts once the server has
// answered the multi.
func TestQueuePrefetchClaimCtxEndedInFlightReleased(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	admin := connect(t, srv.Servers())
	item := bigItem
	prod := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[string]())
	if _, err := prod.PutAll(ctx, []string{item(0), item(1), item(2), item(3)}); err != nil {
		t.Fatal(err)
	}
	makeDirs(t, admin, dir+"/claims", dir+"/marks") // the claim's first attempt takes effect

	px := zktest.NewProxy(t, srv.Addr())
	cs := connect(t, viaProxy(px), runtime.WithSessionTimeout(10*time.Second))
	id := cs.ID()
	cq := runtime.NewQueue(cs, runtime.At(dir), runtime.JSONCodec[string](), runtime.WithPrefetch(4))
	px.Delay(time.Second)
	tctx, cancel := context.WithCancel(ctx)
	sent := px.RequestsReach(zktest.OpMulti, 1)
	go func() {
		select {
		case <-sent:
			cancel()
		case <-tctx.Done():
		}
	}()
	_, err := cq.Take(tctx)
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Take cancelled with its chunk claim on its way = %v; want context.Canceled", err)
	}
	select {
	case <-px.RepliesReach(zktest.OpMulti, 1): // the claim is made
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	// Another prefetching consumer takes the chunk once the claim is
	// released.
	other := runtime.NewQueue(admin, runtime.At(dir), runtime.JSONCodec[string](), runtime.WithPrefetch(4))
	if v := takeValue(t, ctx, other); v != item(0) {
		t.Fatalf("the other consumer took %.3s; want item 000", v)
	}
	if cs.Err() != nil || cs.ID() != id {
		t.Fatalf("the first consumer's session ended (%v): its claim went with it, which proves nothing", cs.Err())
	}
}
