package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// takeOne takes one delivery or fails the test.
func takeOne(t *testing.T, ctx context.Context, q *runtime.AckQueue[job]) *runtime.Delivery[job] {
	t.Helper()
	d, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deadLetters lists q's dead letters or fails the test.
func deadLetters(t *testing.T, ctx context.Context, q *runtime.AckQueue[job]) []*runtime.DeadLetter[job] {
	t.Helper()
	ds, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// An item released N times (dead_letter_after: N), by two consumers on two
// sessions in turn, has Attempt 1..N and lands in the dead letters on the
// N-th Release; the next item is served meanwhile. Requeued from there it
// comes back once, with Attempt 1, and an Ack leaves nothing behind (no
// claim, no attempts node, no dead letter). A second dead letter is
// discarded; a dead letter requeued or discarded twice says ErrNotHeld.
func TestQueueDeadLetterReleasedNTimesThenRequeued(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const n = 3
	qa := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(n))
	sb := connect(t, srv.Servers())
	qb := runtime.NewAckQueue(sb, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(n))
	if _, err := qa.PutAll(ctx, []job{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		q := qa
		if i%2 == 0 {
			q = qb
		}
		d := takeOne(t, ctx, q)
		if d.Value.N != 1 || d.Attempt != i {
			t.Fatalf("delivery %d: item %d attempt %d; want item 1 attempt %d", i, d.Value.N, d.Attempt, i)
		}
		if err := d.Release(ctx); err != nil {
			t.Fatalf("Release of delivery %d: %v", i, err)
		}
	}
	dead := deadLetters(t, ctx, qb)
	if len(dead) != 1 || dead[0].Value.N != 1 || dead[0].Err != nil || dead[0].Moved.IsZero() {
		t.Fatalf("dead letters after %d releases = %+v; want item 1", n, dead)
	}
	if got, err := qb.Len(ctx); err != nil || got != 1 {
		t.Fatalf("Len = %d, %v; want 1 (item 2 only)", got, err)
	}
	d2 := takeOne(t, ctx, qb)
	if d2.Value.N != 2 || d2.Attempt != 1 {
		t.Fatalf("took item %d attempt %d; want item 2 attempt 1", d2.Value.N, d2.Attempt)
	}

	if err := dead[0].Requeue(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dead[0].Requeue(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("second Requeue = %v; want ErrNotHeld", err)
	}
	if ds := deadLetters(t, ctx, qa); len(ds) != 0 {
		t.Fatalf("dead letters after Requeue = %d; want none", len(ds))
	}
	d := takeOne(t, ctx, qa)
	if d.Value.N != 1 || d.Attempt != 1 {
		t.Fatalf("requeued: took item %d attempt %d; want item 1 attempt 1", d.Value.N, d.Attempt)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}

	// Item 2 goes the same way and is discarded.
	if err := d2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 2; i <= n; i++ {
		d := takeOne(t, ctx, qa)
		if d.Value.N != 2 || d.Attempt != i {
			t.Fatalf("item %d attempt %d; want item 2 attempt %d", d.Value.N, d.Attempt, i)
		}
		if err := d.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dead = deadLetters(t, ctx, qa)
	if len(dead) != 1 || dead[0].Value.N != 2 {
		t.Fatalf("dead letters = %+v; want item 2", dead)
	}
	stale := deadLetters(t, ctx, qb)
	if err := dead[0].Discard(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stale[0].Discard(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Discard of a discarded dead letter = %v; want ErrNotHeld", err)
	}
	if err := stale[0].Requeue(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("Requeue of a discarded dead letter = %v; want ErrNotHeld", err)
	}
	if got, err := qa.Len(ctx); err != nil || got != 0 {
		t.Fatalf("Len = %d, %v; want 0", got, err)
	}
	for _, sub := range []string{"claims", "attempts", "dead"} {
		if kids := childrenOf(t, sb, dir+"/"+sub); len(kids) != 0 {
			t.Errorf("%s/%s left with %v", dir, sub, kids)
		}
	}
}

// Attempts are counted in ZooKeeper across sessions, and a delivery whose
// consumer's session expired before Ack counts: with dead_letter_after: 2,
// the item a consumer took before its session expired is delivered to the
// next consumer with Attempt 2; that one's session expires too, and the
// third consumer's Take moves the item to the dead letters when it claims
// it and returns the next item instead.
func TestQueueDeadLetterAcrossExpiredConsumers(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	opts := []runtime.QueueOption{runtime.WithDeadLetterAfter(2)}
	qc := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), opts...)
	if _, err := qc.PutAll(ctx, []job{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		f := newFaulty(t, srv)
		q := runtime.NewAckQueue(f.s, runtime.At(dir), runtime.JSONCodec[job](), opts...)
		d := takeOne(t, ctx, q)
		if d.Value.N != 1 || d.Attempt != i {
			t.Fatalf("consumer %d: item %d attempt %d; want item 1 attempt %d", i, d.Value.N, d.Attempt, i)
		}
		f.expire(t, srv)
		<-f.s.Done()
	}
	d := takeOne(t, ctx, qc)
	if d.Value.N != 2 || d.Attempt != 1 {
		t.Fatalf("third consumer: item %d attempt %d; want item 2 attempt 1 (item 1 dead-lettered)", d.Value.N, d.Attempt)
	}
	dead := deadLetters(t, ctx, qc)
	if len(dead) != 1 || dead[0].Value.N != 1 {
		t.Fatalf("dead letters = %+v; want item 1", dead)
	}
}

// The claim, the move to the dead letters and the Requeue are each one
// multi whose reply is lost to a cut connection: the claim counts once
// (Attempt 1; then 2, where the cut multi is the first delivery's shape,
// which fails, and the retry goes on to count), the move leaves the item in
// the dead letters only, and the Requeue leaves it in the queue only, once.
func TestQueueDeadLetterLostReplies(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	f := newFaulty(t, srv)
	q := runtime.NewAckQueue(f.s, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(2))
	obs := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if err := obs.Put(ctx, job{N: 7}); err != nil {
		t.Fatal(err)
	}
	// With the directories there, the multi that is cut is the one that
	// succeeds (not one failing for a missing parent).
	makeDirs(t, f.s, dir+"/claims", dir+"/attempts", dir+"/dead")
	for i := 1; i <= 2; i++ {
		var d *runtime.Delivery[job]
		err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() (err error) {
			d, err = q.Take(ctx)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if d.Attempt != i {
			t.Fatalf("claim %d whose reply was lost: Attempt %d, want %d", i, d.Attempt, i)
		}
		if i == 2 {
			// The Release moves it: its multi's reply is lost too.
			if err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() error { return d.Release(ctx) }); err != nil {
				t.Fatalf("Release (move) whose reply was lost: %v", err)
			}
		} else if err := d.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := obs.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len after the move = %d, %v; want 0", n, err)
	}
	dead := deadLetters(t, ctx, q)
	if len(dead) != 1 || dead[0].Value.N != 7 {
		t.Fatalf("dead letters = %+v; want item 7 once", dead)
	}
	if err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() error { return dead[0].Requeue(ctx) }); err != nil {
		t.Fatalf("Requeue whose reply was lost: %v", err)
	}
	if n, err := obs.Len(ctx); err != nil || n != 1 {
		t.Fatalf("Len after the Requeue = %d, %v; want 1", n, err)
	}
	if ds := deadLetters(t, ctx, q); len(ds) != 0 {
		t.Fatalf("dead letters after the Requeue = %d; want none", len(ds))
	}
	d := takeOne(t, ctx, obs)
	if d.Value.N != 7 || d.Attempt != 1 {
		t.Fatalf("requeued item %d attempt %d; want 7, attempt 1", d.Value.N, d.Attempt)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// A priority queue's dead letter is requeued at its own priority.
func TestPriorityQueueDeadLetterRequeuedAtItsPriority(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	q := runtime.NewAckPriorityQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), 3, runtime.WithDeadLetterAfter(1))
	if err := q.Put(ctx, 2, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	d, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Release(ctx); err != nil {
		t.Fatal(err)
	}
	dead, err := q.DeadLetters(ctx)
	if err != nil || len(dead) != 1 {
		t.Fatalf("DeadLetters = %d, %v; want 1", len(dead), err)
	}
	if err := dead[0].Requeue(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Len != 1 || st.ByPriority[2] != 1 {
		t.Fatalf("Stats after Requeue = %+v; want 1 item at priority 2", st)
	}
}

// Peek returns the head without taking it: the items stay (Len), the next
// Take returns the item Peek showed, and at least once Peek skips claimed
// items. An empty queue peeks ok=false at once.
func TestQueuePeek(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	q := runtime.NewQueue(s, runtime.At(dir+"/fifo"), runtime.JSONCodec[job]())
	if _, ok, err := q.Peek(ctx); ok || err != nil {
		t.Fatalf("Peek of a queue never used: ok %v, %v", ok, err)
	}
	if _, err := q.PutAll(ctx, jobs(0, 0, 3)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if j, ok, err := q.Peek(ctx); !ok || err != nil || j.N != 0 {
			t.Fatalf("Peek = %+v, %v, %v; want item 0", j, ok, err)
		}
	}
	if n, err := q.Len(ctx); n != 3 || err != nil {
		t.Fatalf("Len after Peek = %d, %v; want 3", n, err)
	}
	if j, err := q.Take(ctx); err != nil || j.N != 0 {
		t.Fatalf("Take after Peek = %+v, %v; want item 0", j, err)
	}
	if j, ok, err := q.Peek(ctx); !ok || err != nil || j.N != 1 {
		t.Fatalf("Peek = %+v, %v, %v; want item 1", j, ok, err)
	}

	aq := runtime.NewAckQueue(s, runtime.At(dir+"/ack"), runtime.JSONCodec[job]())
	if _, err := aq.PutAll(ctx, jobs(0, 0, 2)); err != nil {
		t.Fatal(err)
	}
	d := takeOne(t, ctx, aq)
	if j, ok, err := aq.Peek(ctx); !ok || err != nil || j.N != 1 {
		t.Fatalf("Peek with item 0 claimed = %+v, %v, %v; want item 1", j, ok, err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}

	pq := runtime.NewPriorityQueue(s, runtime.At(dir+"/prio"), runtime.JSONCodec[job](), 2)
	if err := pq.Put(ctx, 1, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	if err := pq.Put(ctx, 0, job{N: 2}); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := pq.Peek(ctx); !ok || err != nil || j.N != 2 {
		t.Fatalf("priority Peek = %+v, %v, %v; want the urgent item 2", j, ok, err)
	}
}

// TryAcquire on a semaphore whose leases are all held returns false at
// once and leaves no node behind; once a lease is released it takes one.
func TestSemaphoreTryAcquire(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		name        string
		layout      runtime.Layout
		leases, mtx func(dir string) string // where lease and internal lock nodes are
	}{
		{"curator", runtime.LayoutCurator, func(d string) string { return d + "/leases" }, func(d string) string { return d + "/locks" }},
		{"kazoo", runtime.LayoutKazoo, func(d string) string { return d }, func(d string) string { return d + "-__lock__" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := testRoot(t)
			ctx := testCtx(t, time.Minute)
			a := runtime.NewSemaphore(connect(t, srv.Servers()), runtime.At(dir), 1, runtime.WithLayout(tc.layout))
			sb := connect(t, srv.Servers())
			b := runtime.NewSemaphore(sb, runtime.At(dir), 1, runtime.WithLayout(tc.layout))
			la, ok, err := a.TryAcquire(ctx)
			if err != nil || !ok || la == nil {
				t.Fatalf("TryAcquire of a free semaphore = %v, %v, %v", la, ok, err)
			}
			lb, ok, err := b.TryAcquire(ctx)
			if err != nil || ok || lb != nil {
				t.Fatalf("TryAcquire of a full semaphore = %v, %v, %v; want nil, false, nil", lb, ok, err)
			}
			if kids := childrenOf(t, sb, tc.leases(dir)); len(kids) != 1 {
				t.Fatalf("leases after a failed TryAcquire = %v; want only the holder's", kids)
			}
			if kids := childrenOf(t, sb, tc.mtx(dir)); len(kids) != 0 {
				t.Fatalf("internal lock nodes left = %v", kids)
			}
			if err := la.Release(ctx); err != nil {
				t.Fatal(err)
			}
			lb, ok, err = b.TryAcquire(ctx)
			if err != nil || !ok {
				t.Fatalf("TryAcquire after the release = %v, %v, %v", lb, ok, err)
			}
			if err := lb.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A move to the dead letters whose multi took effect, whose reply was lost,
// and whose session then expired cannot know its outcome: Release says so
// with the session's error, not ErrClaimLost (which promises redelivery),
// and the item is in the dead letters once and no longer in the queue.
func TestQueueDeadLetterMoveThenExpiry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	f := newFaulty(t, srv)
	q := runtime.NewAckQueue(f.s, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(1))
	obs := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	if err := obs.Put(ctx, job{N: 9}); err != nil {
		t.Fatal(err)
	}
	makeDirs(t, f.s, dir+"/dead")
	d := takeOne(t, ctx, q)
	err := f.inject(t, ctx, srv, zktest.OpMulti, cutThenExpire, nil, func() error { return d.Release(ctx) })
	if errors.Is(err, runtime.ErrClaimLost) || !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Release (move) that took effect, then the session expired = %v; want ErrSessionExpired without ErrClaimLost", err)
	}
	if n, err := obs.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0", n, err)
	}
	if dead := deadLetters(t, ctx, obs); len(dead) != 1 || dead[0].Value.N != 9 {
		t.Fatalf("dead letters = %+v; want item 9 once", dead)
	}
}
