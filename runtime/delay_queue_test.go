package runtime_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// wall strips t's monotonic reading: a delay queue compares due times with
// the consumer's wall clock, and so do these tests.
func wall(t time.Time) time.Time { return t.Round(0) }

// dueJobs returns n jobs of producer p with due times spread over span from
// base, in a shuffled order, and each job's due time by number.
func dueJobs(p, n int, base time.Time, span time.Duration) ([]job, map[int]time.Time) {
	js := jobs(p, 0, n)
	rand.Shuffle(len(js), func(i, j int) { js[i], js[j] = js[j], js[i] })
	due := make(map[int]time.Time, n)
	for i, j := range js {
		due[j.N] = wall(base.Add(span * time.Duration(i) / time.Duration(n)))
	}
	return js, due
}

// ceilMilli is t rounded up to the millisecond, as a delay queue stores due
// times.
func ceilMilli(t time.Time) time.Time {
	if r := t.Truncate(time.Millisecond); r.Before(t) {
		return r.Add(time.Millisecond)
	}
	return t
}

// Items put in shuffled due order come out earliest due first, none before
// its due time by the consumer's clock; items due in the past come at once,
// before the others. Stats shows the earliest due time.
func TestDelayQueueDueOrderNeverEarly(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	prod := runtime.NewDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	cons := runtime.NewDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())

	const N = 24
	js, due := dueJobs(0, N, time.Now().Add(400*time.Millisecond), 1200*time.Millisecond)
	// Four of them were due an hour ago, in reverse order of their number.
	for i := 0; i < 4; i++ {
		due[i] = wall(time.Now().Add(-time.Hour - time.Duration(i)*time.Minute))
	}
	for _, j := range js {
		if err := prod.Put(ctx, j, due[j.N]); err != nil {
			t.Fatal(err)
		}
	}
	st, err := cons.Stats(ctx)
	if err != nil || st.Len != N {
		t.Fatalf("Stats = %+v, %v; want %d items", st, err, N)
	}
	if want := ceilMilli(due[3]); !st.NextDue.Equal(want) {
		t.Fatalf("Stats.NextDue = %v, want %v", st.NextDue, want)
	}
	if j, ok, err := cons.Peek(ctx); !ok || err != nil || j.N != 3 {
		t.Fatalf("Peek = %v, %v, %v; want item 3, due first", j, ok, err)
	}
	var last time.Time
	for i := 0; i < N; i++ {
		j, err := cons.Take(ctx)
		now := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		d, ok := due[j.N]
		if !ok {
			t.Fatalf("took %v, never put (or twice)", j)
		}
		delete(due, j.N)
		if now.Before(d) {
			t.Fatalf("took item %d at %v, before its due time %v", j.N, now, d)
		}
		if d.Before(last) {
			t.Fatalf("took item %d due %v after one due %v", j.N, d, last)
		}
		last = d
	}
	if n, err := cons.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len = %d, %v after taking everything", n, err)
	}
}

// waitRequests blocks until proxy p has forwarded n requests of op (fails
// the test if it never does). The
// proxy's count is the only view of that, so it is polled with a deadline.
func waitRequests(t *testing.T, p *zktest.Proxy, op int32, n int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.Requests(op) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("the proxy saw %d requests of op %d, want %d", p.Requests(op), op, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A consumer waiting for an item due in an hour wakes when an item due now
// arrives, and takes it (the test's deadline is a minute: waiting for the
// timer fails it); a Take cancelled while waiting returns ctx's error and
// leaves nothing behind, at most once and at least once.
func TestDelayQueueEarlierArrivalWakes(t *testing.T) {
	for _, ack := range []bool{false, true} {
		t.Run(map[bool]string{false: "at_most_once", true: "at_least_once"}[ack], func(t *testing.T) {
			srv := server(t)
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			p := zktest.NewProxy(t, srv.Addr())
			cs := connect(t, []string{p.Addr()})
			take := func(ctx context.Context, cs *runtime.Session) (string, error) {
				if ack {
					d, err := runtime.NewAckDelayQueue(cs, runtime.At(dir), runtime.StringCodec()).Take(ctx)
					if err != nil {
						return "", err
					}
					return d.Value, d.Ack(ctx)
				}
				return runtime.NewDelayQueue(cs, runtime.At(dir), runtime.StringCodec()).Take(ctx)
			}
			ps := connect(t, srv.Servers())
			var prod interface {
				Put(context.Context, string, time.Time) error
				Len(context.Context) (int, error)
			} = runtime.NewDelayQueue(ps, runtime.At(dir), runtime.StringCodec())
			if ack {
				prod = runtime.NewAckDelayQueue(ps, runtime.At(dir), runtime.StringCodec())
			}
			if err := prod.Put(ctx, "later", time.Now().Add(time.Hour)); err != nil {
				t.Fatal(err)
			}

			// Cancelled while waiting for the hour to pass.
			cctx, cancel := context.WithCancel(ctx)
			res := make(chan error, 1)
			lists := p.Requests(zktest.OpGetChildren2)
			go func() { _, err := take(cctx, cs); res <- err }()
			waitRequests(t, p, zktest.OpGetChildren2, lists+2)
			cancel()
			if err := <-res; !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled Take = %v", err)
			}

			// Waiting again, on another session (the handles of one session
			// share what their consumer learnt, so a Take on cs would list
			// nothing new): it lists the queue directory, then its bucket
			// with a watch (two getChildren requests); that listing and its
			// watch are in place once a sync of the consumer's session
			// returns (a session's requests are served in order). Then an
			// earlier item arrives.
			cs2 := connect(t, []string{p.Addr()})
			lists = p.Requests(zktest.OpGetChildren2)
			got := make(chan string, 1)
			go func() {
				v, err := take(ctx, cs2)
				if err != nil {
					t.Error(err)
				}
				got <- v
			}()
			waitRequests(t, p, zktest.OpGetChildren2, lists+2)
			if _, err := cs2.Conn().Sync(dir); err != nil {
				t.Fatal(err)
			}
			if err := prod.Put(ctx, "now", time.Now()); err != nil {
				t.Fatal(err)
			}
			if v := <-got; v != "now" {
				t.Fatalf("took %q, want the item due now", v)
			}
			if n, err := prod.Len(ctx); n != 1 || err != nil {
				t.Fatalf("Len = %d, %v; the item due in an hour stays", n, err)
			}
			waitChildren(t, ctx, cs, dir+"/marks", 0)
			if kids := childrenOf(t, cs, dir+"/claims"); len(kids) != 0 {
				t.Fatalf("claims left behind: %v", kids)
			}
		})
	}
}

// Several producers and consumers, at most once and at least once: every
// item is delivered exactly once (acked once), none before its due time.
func TestDelayQueueProducersConsumers(t *testing.T) {
	for _, ack := range []bool{false, true} {
		t.Run(map[bool]string{false: "at_most_once", true: "at_least_once"}[ack], func(t *testing.T) {
			srv := server(t)
			dir := testRoot(t)
			ctx := testCtx(t, 2*time.Minute)
			const P, C, N = 2, 3, 60
			base := time.Now().Add(200 * time.Millisecond)
			var mu sync.Mutex
			due := map[job]time.Time{}
			var wg sync.WaitGroup
			for p := 0; p < P; p++ {
				js, d := dueJobs(p, N, base, time.Second)
				for n, at := range d {
					due[job{p, n}] = at
				}
				s := connect(t, srv.Servers())
				put := runtime.NewDelayQueue(s, runtime.At(dir), runtime.JSONCodec[job]()).Put
				if ack {
					put = runtime.NewAckDelayQueue(s, runtime.At(dir), runtime.JSONCodec[job]()).Put
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for _, j := range js {
						if err := put(ctx, j, d[j.N]); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait() // due is read-only from here
			seen := map[job]int{}
			left := P * N
			cctx, stop := context.WithCancel(ctx)
			defer stop()
			for c := 0; c < C; c++ {
				s := connect(t, srv.Servers())
				aq := runtime.NewAckDelayQueue(s, runtime.At(dir), runtime.JSONCodec[job]())
				q := runtime.NewDelayQueue(s, runtime.At(dir), runtime.JSONCodec[job]())
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						var j job
						var err error
						if ack {
							var d *runtime.Delivery[job]
							if d, err = aq.Take(cctx); err == nil {
								j, err = d.Value, d.Ack(cctx)
							}
						} else {
							j, err = q.Take(cctx)
						}
						now := time.Now()
						if errors.Is(err, context.Canceled) {
							return
						}
						if err != nil {
							t.Error(err)
							return
						}
						if now.Before(due[j]) {
							t.Errorf("took %v at %v, before its due time %v", j, now, due[j])
						}
						mu.Lock()
						seen[j]++
						left--
						if left == 0 {
							stop()
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			for j := range due {
				if seen[j] != 1 {
					t.Errorf("item %v delivered %d times", j, seen[j])
				}
			}
		})
	}
}

// putDueInOrder puts jobs 0..n-1 due a millisecond apart from first.
func putDueInOrder(t *testing.T, ctx context.Context, put func(context.Context, job, time.Time) error, n int, first time.Time) {
	t.Helper()
	for i := 0; i < n; i++ {
		if err := put(ctx, job{0, i}, first.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
}

// The fault matrix of the delay queue: a put or a take whose reply is lost
// to a cut connection is neither lost nor repeated (at most once and at
// least once), a consumer whose session expires while it holds a claim
// gives its item to another consumer, and one that expires while waiting
// for a due time loses nothing.
func TestDelayQueueFaults(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 2*time.Minute)
	past := time.Now().Add(-time.Minute)

	t.Run("put_cut", func(t *testing.T) {
		dir := testRoot(t)
		f := newFaulty(t, srv)
		prod := runtime.NewDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job]())
		cons := runtime.NewDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
		if err := prod.Put(ctx, job{0, 0}, past); err != nil { // directories in place
			t.Fatal(err)
		}
		for i := 1; i <= 3; i++ {
			err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() error {
				return prod.Put(ctx, job{0, i}, past.Add(time.Duration(i)*time.Millisecond))
			})
			if err != nil {
				t.Fatalf("Put %d across a cut: %v", i, err)
			}
			if n, err := cons.Len(ctx); n != i+1 || err != nil {
				t.Fatalf("Len = %d, %v after %d puts", n, err, i+1)
			}
		}
		for i := 0; i <= 3; i++ {
			if j, err := cons.Take(ctx); err != nil || j.N != i {
				t.Fatalf("Take = %v, %v; want item %d", j, err, i)
			}
		}
	})

	t.Run("take_cut", func(t *testing.T) {
		dir := testRoot(t)
		prod := runtime.NewDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
		putDueInOrder(t, ctx, prod.Put, 3, past)
		f := newFaulty(t, srv)
		cons := runtime.NewDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job]())
		for i := 0; i < 3; i++ {
			var j job
			err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() (err error) {
				j, err = cons.Take(ctx)
				return err
			})
			if err != nil || j.N != i {
				t.Fatalf("Take across a cut = %v, %v; want item %d", j, err, i)
			}
			if n, err := prod.Len(ctx); n != 2-i || err != nil {
				t.Fatalf("Len = %d, %v after %d takes", n, err, i+1)
			}
		}
	})

	t.Run("claim_cut", func(t *testing.T) {
		dir := testRoot(t)
		prod := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
		putDueInOrder(t, ctx, prod.Put, 3, past)
		f := newFaulty(t, srv)
		cons := runtime.NewAckDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job]())
		for i := 0; i < 3; i++ {
			var d *runtime.Delivery[job]
			err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() (err error) {
				d, err = cons.Take(ctx)
				return err
			})
			if err != nil || d.Value.N != i {
				t.Fatalf("Take across a cut of its claim = %v, %v; want item %d", d, err, i)
			}
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := prod.Len(ctx); n != 2-i || err != nil {
				t.Fatalf("Len = %d, %v after %d acks", n, err, i+1)
			}
		}
	})

	t.Run("claimer_expired", func(t *testing.T) {
		dir := testRoot(t)
		prod := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
		if err := prod.Put(ctx, job{0, 0}, past); err != nil {
			t.Fatal(err)
		}
		f := newFaulty(t, srv)
		d, err := runtime.NewAckDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job]()).Take(ctx)
		if err != nil || d.Value.N != 0 {
			t.Fatalf("Take = %v, %v", d, err)
		}
		other := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
		got := make(chan *runtime.Delivery[job], 1)
		go func() {
			d, err := other.Take(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- d
		}()
		f.expire(t, srv)
		d2 := <-got
		if d2 == nil || d2.Value.N != 0 {
			t.Fatalf("after the claimer expired, took %v", d2)
		}
		if err := d2.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		// Once the client knows its session ended, its Ack is not sent and
		// says the claim is lost. (An Ack sent before it knows gets the
		// session's error, the outcome unknown to it: see Delivery.Ack.)
		select {
		case <-f.s.Done():
		case <-ctx.Done():
			t.Fatal("the expired session never learnt it ended")
		}
		if err := d.Ack(ctx); !errors.Is(err, runtime.ErrClaimLost) {
			t.Fatalf("Ack on the expired session = %v; want ErrClaimLost", err)
		}
		if n, err := prod.Len(ctx); n != 0 || err != nil {
			t.Fatalf("Len = %d, %v", n, err)
		}
	})

	t.Run("waiter_expired", func(t *testing.T) {
		dir := testRoot(t)
		prod := runtime.NewDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
		if err := prod.Put(ctx, job{0, 0}, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		f := newFaulty(t, srv)
		res := make(chan error, 1)
		lists := f.p.Requests(zktest.OpGetChildren2)
		go func() {
			_, err := runtime.NewDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job]()).Take(ctx)
			res <- err
		}()
		waitRequests(t, f.p, zktest.OpGetChildren2, lists+2)
		f.expire(t, srv)
		if err := <-res; !errors.Is(err, runtime.ErrSessionExpired) {
			t.Fatalf("Take of an expired consumer = %v; want ErrSessionExpired", err)
		}
		if n, err := prod.Len(ctx); n != 1 || err != nil {
			t.Fatalf("Len = %d, %v; the item waits for its due time", n, err)
		}
	})
}

// What a take of a due item costs on the wire, counted by the proxy the
// consumer's session goes through: its listing (its own delete fires the
// listing's watch, so the next take lists again), the item's read and one
// multi — at most 3 requests and 1 notification per item.
func TestDelayQueueRequestsPerTake(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const M = 200
	prod := runtime.NewDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if n, err := prod.PutAll(ctx, jobs(0, 0, M), time.Now().Add(-time.Minute)); n != M || err != nil {
		t.Fatalf("PutAll = %d, %v", n, err)
	}
	p := zktest.NewProxy(t, srv.Addr())
	cons := runtime.NewDelayQueue(connect(t, []string{p.Addr()}), runtime.At(dir), runtime.JSONCodec[job]())
	if j, err := cons.Take(ctx); err != nil || j.N != 0 { // first take: spec record, directory
		t.Fatalf("Take = %v, %v", j, err)
	}
	p.ResetCounts()
	for i := 1; i < M; i++ {
		if j, err := cons.Take(ctx); err != nil || j.N != i {
			t.Fatalf("Take = %v, %v; want item %d", j, err, i)
		}
	}
	c := p.Counts()
	per := float64(c.Total()) / (M - 1)
	t.Logf("%d takes: %d requests (%.2f per take: %v), %d notifications", M-1, c.Total(), per, c.Requests, c.Notifications)
	if per > 3 || c.Notifications > M-1 {
		t.Fatalf("%.2f requests per take and %d notifications for %d takes; want at most 3 per take and 1 per take", per, c.Notifications, M-1)
	}
}

// At least once: a released item is delivered again in its due turn, before
// items due later, to this consumer or another; an acked one is gone.
func TestAckDelayQueueRelease(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	b := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	putDueInOrder(t, ctx, a.Put, 3, time.Now().Add(-time.Minute))
	for _, q := range []*runtime.AckDelayQueue[job]{a, b} {
		d, err := q.Take(ctx)
		if err != nil || d.Value.N != 0 {
			t.Fatalf("Take = %v, %v; want item 0", d, err)
		}
		if err := d.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		d, err := b.Take(ctx)
		if err != nil || d.Value.N != i {
			t.Fatalf("Take = %v, %v; want item %d", d, err, i)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := a.Len(ctx); n != 0 || err != nil {
		t.Fatalf("Len = %d, %v", n, err)
	}
}

// A FIFO queue handle on a delay queue's directory is refused (the spec
// record says delay_queue), rather than taking items before they are due.
func TestDelayQueueKindGuarded(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	if err := runtime.NewDelayQueue(s, runtime.At(dir), runtime.StringCodec()).Put(ctx, "later", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	other := connect(t, srv.Servers()) // a session checks a directory's record once
	if _, err := runtime.NewQueue(other, runtime.At(dir), runtime.StringCodec()).Take(ctx); !errors.Is(err, runtime.ErrSpecMismatch) {
		t.Fatalf("FIFO Take on a delay queue = %v; want ErrSpecMismatch", err)
	}
}
