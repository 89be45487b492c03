package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A give-back does not count: with dead_letter_after: 2, an item given
// back again and again, by two sessions in turn, keeps its Attempt and is
// never moved to the dead letters, while a Release counts as before (and
// a give-back after it keeps the count it reached). An item carried in its
// node's data keeps its value. An Ack afterwards leaves nothing behind.
func TestQueueGiveBackDoesNotCount(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	opt := runtime.WithDeadLetterAfter(2)
	sa := connect(t, srv.Servers())
	qa := runtime.NewAckQueue(sa, runtime.At(dir), runtime.JSONCodec[job](), opt)
	qb := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), opt)
	if _, err := qa.PutAll(ctx, []job{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	take := func(q *runtime.AckQueue[job], attempt int) *runtime.Delivery[job] {
		t.Helper()
		d := takeOne(t, ctx, q)
		if d.Value.N != 1 || d.Attempt != attempt {
			t.Fatalf("took item %d attempt %d; want item 1 attempt %d", d.Value.N, d.Attempt, attempt)
		}
		return d
	}
	for i := range 6 {
		q := []*runtime.AckQueue[job]{qa, qb}[i%2]
		if err := take(q, 1).GiveBack(ctx); err != nil {
			t.Fatalf("give-back %d: %v", i+1, err)
		}
	}
	if err := take(qb, 1).Release(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		d := take(qa, 2)
		if err := d.GiveBack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.GiveBack(ctx); !errors.Is(err, runtime.ErrNotHeld) {
			t.Fatalf("give-back of a delivery given back = %v; want ErrNotHeld", err)
		}
	}
	if ds := deadLetters(t, ctx, qa); len(ds) != 0 {
		t.Fatalf("dead letters after give-backs: %d; want none", len(ds))
	}
	for _, d := range []*runtime.Delivery[job]{take(qa, 2), takeOne(t, ctx, qb)} {
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, sub := range []string{"claims", "attempts", "dead"} {
		if kids := childrenOf(t, sa, dir+"/"+sub); len(kids) != 0 {
			t.Errorf("%s/%s left with %v", dir, sub, kids)
		}
	}

	// An item stored in its node's data (too long to ride in its name),
	// and one of a priority queue, whose dead_letter_after is 1.
	long := strings.Repeat("x", 300)
	sq := runtime.NewAckQueue(sa, runtime.At(dir+"/long"), runtime.StringCodec(), opt)
	if err := sq.Put(ctx, long); err != nil {
		t.Fatal(err)
	}
	pq := runtime.NewAckPriorityQueue(sa, runtime.At(dir+"/prio"), runtime.JSONCodec[job](), 2, runtime.WithDeadLetterAfter(1))
	if err := pq.Put(ctx, 1, job{N: 3}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sd, err := sq.Take(ctx)
		if err != nil || sd.Value != long || sd.Attempt != 1 {
			t.Fatalf("long item: %d bytes, attempt %d, %v; want %d bytes, attempt 1", len(sd.Value), sd.Attempt, err, len(long))
		}
		pd, err := pq.Take(ctx)
		if err != nil || pd.Value.N != 3 || pd.Attempt != 1 {
			t.Fatalf("priority item: %+v, %v", pd, err)
		}
		if err := errors.Join(sd.GiveBack(ctx), pd.GiveBack(ctx)); err != nil {
			t.Fatal(err)
		}
	}
}

// The scenario of issue 41: a worker that cannot run jobs for a reason of
// its own (no GPU lease yet) returns GiveBack from Consume's function. With
// dead_letter_after: 3 and 25 healthy jobs, 100 give-backs in a row (each
// retaking the lowest job) dead-letter none of them: once the worker can
// run them, every job runs once and is acked.
func TestConsumeGiveBackDeadLettersNothing(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	q := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(3))
	if _, err := q.PutAll(ctx, jobs(0, 0, 25)); err != nil {
		t.Fatal(err)
	}
	errNoGPU := errors.New("no GPU lease yet")
	cctx, stop := context.WithTimeout(ctx, 20*time.Second) // ample: it takes about 1 s
	calls, ran := 0, map[int]int{}
	err := q.Consume(cctx, func(ctx context.Context, j job) error {
		if calls++; calls <= 100 {
			return runtime.GiveBack(errNoGPU)
		}
		if ran[j.N]++; len(ran) == 25 {
			stop()
		}
		return nil
	}, runtime.WithBackoff(time.Millisecond, time.Millisecond))
	stop()
	if err != nil {
		t.Fatal(err)
	}
	if ds := deadLetters(t, ctx, q); len(ds) != 0 {
		t.Fatalf("%d healthy jobs dead-lettered by give-backs", len(ds))
	}
	for n := range 25 {
		if ran[n] != 1 {
			t.Errorf("job %d ran %d times; want once", n, ran[n])
		}
	}
	if n, err := q.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0", n, err)
	}
}

// Consume backs off after its function fails (default 1 s): the failed
// item is not retaken at once, the next one is run meanwhile, and the
// failed one comes back no earlier than 1 s after the failure.
func TestConsumeFailureBacksOff(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	q := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if _, err := q.PutAll(ctx, []job{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	cctx, stop := context.WithCancel(ctx)
	var order []int
	var failed time.Time
	err := q.Consume(cctx, func(ctx context.Context, j job) error {
		order = append(order, j.N)
		switch len(order) {
		case 1:
			failed = time.Now()
			return errors.New("flaky downstream")
		case 3:
			if since := time.Since(failed); since < time.Second {
				t.Errorf("item 1 retaken %v after its failure; want 1 s or more", since)
			}
			stop()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 3 || order[0] != 1 || order[1] != 2 || order[2] != 1 {
		t.Fatalf("runs %v; want [1 2 1]: the failed item backs off", order)
	}
}

// A release with After keeps the item from every consumer, the releasing
// one's included, while its claim stays with the releasing session: they
// take the next items, and Peek shows none. If the releasing session ends
// first, the item is back then, counted; nothing is lost. A short After
// ends by itself: a consumer waiting for the item gets it, no earlier than
// the delay after the release, and closing the releasing session ends it
// at once. A give-back with After keeps the item from others too, and
// does not count even when its session ends during the delay.
func TestQueueReleaseAfterHonouredByOthers(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	fa := newFaulty(t, srv)
	qa := runtime.NewAckQueue(fa.s, runtime.At(dir), runtime.JSONCodec[job]())
	sb := connect(t, srv.Servers())
	qb := runtime.NewAckQueue(sb, runtime.At(dir), runtime.JSONCodec[job]())
	if _, err := qa.PutAll(ctx, jobs(0, 1, 4)); err != nil {
		t.Fatal(err)
	}
	if err := takeOne(t, ctx, qa).Release(ctx, runtime.After(time.Hour)); err != nil {
		t.Fatal(err)
	}
	d := takeOne(t, ctx, qa)
	if err := d.GiveBack(ctx, runtime.After(time.Hour)); err != nil || d.Value.N != 2 {
		t.Fatalf("second take: item %d, give-back %v; want item 2", d.Value.N, err)
	}
	for _, q := range []*runtime.AckQueue[job]{qa, qb} {
		d := takeOne(t, ctx, q)
		if d.Value.N != 3 && d.Value.N != 4 {
			t.Fatalf("took item %d; want 3 or 4 (1 and 2 back off)", d.Value.N)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if j, ok, err := qb.Peek(ctx); ok || err != nil {
		t.Fatalf("Peek = %+v, %v, %v; want nothing: items 1 and 2 back off", j, ok, err)
	}
	if st, err := qb.Stats(ctx); err != nil || st.Len != 2 || st.Claimed != 2 {
		t.Fatalf("Stats = %+v, %v; want 2 items, both claimed", st, err)
	}
	for _, c := range childrenOf(t, sb, dir+"/claims") {
		if !strings.Contains(c, ".item-") {
			continue // a chunk claim (queue_spread.go), of no item
		}
		if _, st, err := sb.Conn().Get(dir + "/claims/" + c); err != nil || st.EphemeralOwner != fa.s.ID() {
			t.Fatalf("claim %s: %v; want the releasing session's", c, err)
		}
	}
	fa.expire(t, srv)
	<-fa.s.Done()
	got := map[int]int{}
	for range 2 {
		d := takeOne(t, ctx, qb)
		got[d.Value.N] = d.Attempt
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got[1] != 2 || got[2] != 1 {
		t.Fatalf("after the releaser's expiry: attempts %v; want item 1 at 2 (released), item 2 at 1 (given back)", got)
	}

	qc := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if err := qc.Put(ctx, job{N: 5}); err != nil {
		t.Fatal(err)
	}
	const delay = 300 * time.Millisecond
	released := time.Now()
	if err := takeOne(t, ctx, qc).Release(ctx, runtime.After(delay)); err != nil {
		t.Fatal(err)
	}
	d = takeOne(t, ctx, qb)
	if since := time.Since(released); since < delay || d.Value.N != 5 || d.Attempt != 2 {
		t.Fatalf("took item %d attempt %d, %v after its release; want item 5 attempt 2, %v or later", d.Value.N, d.Attempt, since, delay)
	}

	// Closing the releasing session gives a held item back at once.
	if err := errors.Join(d.Ack(ctx), qb.Put(ctx, job{N: 6})); err != nil {
		t.Fatal(err)
	}
	sd := connect(t, srv.Servers())
	if err := takeOne(t, ctx, runtime.NewAckQueue(sd, runtime.At(dir), runtime.JSONCodec[job]())).Release(ctx, runtime.After(time.Hour)); err != nil {
		t.Fatal(err)
	}
	sd.Close()
	if d := takeOne(t, ctx, qb); d.Value.N != 6 || d.Attempt != 2 {
		t.Fatalf("after the releaser's Close: item %d attempt %d; want item 6 attempt 2", d.Value.N, d.Attempt)
	}
}

// A give-back whose multi reached the server and whose reply was lost is
// settled, not guessed: after a plain cut the retry finds it done; when
// another consumer claimed the item in the gap, the retry leaves that
// claim alone (the item is not handed out twice); when the session then
// expired, GiveBack says the outcome is unknown and the item comes back
// uncounted, once. A give-back sent after the session's end is
// ErrClaimLost, and the delivery counts.
func TestQueueGiveBackLostReplies(t *testing.T) {
	srv := server(t)
	obsSess := connect(t, srv.Servers())
	for _, tc := range []struct {
		name    string
		kind    fault
		attempt int // of the next delivery
	}{
		{"cut", cut, 1},
		{"cut, claimed meanwhile", cutThenWrite, 1},
		{"cut, then expired", cutThenExpire, 1},
		{"expired before", -1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t, 30*time.Second)
			dir := testRoot(t)
			f := newFaulty(t, srv)
			q := runtime.NewAckQueue(f.s, runtime.At(dir), runtime.JSONCodec[job]())
			obs := runtime.NewAckQueue(obsSess, runtime.At(dir), runtime.JSONCodec[job]())
			if err := obs.Put(ctx, job{N: 7}); err != nil {
				t.Fatal(err)
			}
			d := takeOne(t, ctx, q)
			var other *runtime.Delivery[job]
			var err error
			if tc.kind < 0 {
				f.expire(t, srv)
				<-f.s.Done()
				err = d.GiveBack(ctx)
			} else {
				err = f.inject(t, ctx, srv, zktest.OpMulti, tc.kind, func() { other = takeOne(t, ctx, obs) },
					func() error { return d.GiveBack(ctx) })
			}
			switch {
			case tc.kind == cutThenExpire:
				if errors.Is(err, runtime.ErrClaimLost) || !errors.Is(err, runtime.ErrSessionExpired) {
					t.Fatalf("GiveBack = %v; want the session's expiry, without ErrClaimLost", err)
				}
			case tc.kind < 0:
				if !errors.Is(err, runtime.ErrClaimLost) {
					t.Fatalf("GiveBack = %v; want ErrClaimLost", err)
				}
			case err != nil:
				t.Fatalf("GiveBack = %v", err)
			}
			if other == nil {
				other = takeOne(t, ctx, obs)
			} else if j, ok, err := obs.Peek(ctx); ok || err != nil {
				t.Fatalf("Peek while another consumer holds the item = %+v, %v, %v; want nothing", j, ok, err)
			}
			if other.Value.N != 7 || other.Attempt != tc.attempt {
				t.Fatalf("next delivery: item %d attempt %d; want item 7 attempt %d", other.Value.N, other.Attempt, tc.attempt)
			}
			if err := other.Ack(ctx); err != nil {
				t.Fatalf("Ack by the consumer that holds the item: %v", err)
			}
			if n, err := obs.Len(ctx); err != nil || n != 0 {
				t.Fatalf("Len = %d, %v; want 0", n, err)
			}
		})
	}
}
