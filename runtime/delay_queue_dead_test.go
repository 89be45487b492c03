package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// takeDue takes one delivery of a delay queue or fails the test.
func takeDue(t *testing.T, ctx context.Context, q *runtime.AckDelayQueue[job]) *runtime.Delivery[job] {
	t.Helper()
	d, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// deadDue lists a delay queue's dead letters or fails the test.
func deadDue(t *testing.T, ctx context.Context, q *runtime.AckDelayQueue[job]) []*runtime.DeadLetter[job] {
	t.Helper()
	ds, err := q.DeadLetters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// A delay queue item released N times (dead_letter_after: N), by two
// consumers on two sessions in turn, has Attempt 1..N and lands in the dead
// letters on the N-th Release, while the item due next is served. Requeued,
// it is back at its original due time (Stats.NextDue, Peek and the next
// Take show it ahead of the item due later), with Attempt 1; an Ack leaves
// no claim, attempts node or dead letter. An item not yet due is never
// taken meanwhile.
func TestDelayQueueDeadLetterReleasedNTimesThenRequeued(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	const n = 3
	qa := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(n))
	sb := connect(t, srv.Servers())
	qb := runtime.NewAckDelayQueue(sb, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(n))
	now := wall(time.Now())
	due1 := now.Add(-2 * time.Hour)
	for _, it := range []struct {
		n   int
		due time.Time
	}{{3, now.Add(time.Hour)}, {2, now.Add(-time.Hour)}, {1, due1}} {
		if err := qa.Put(ctx, job{N: it.n}, it.due); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= n; i++ {
		q := qa
		if i%2 == 0 {
			q = qb
		}
		d := takeDue(t, ctx, q)
		if d.Value.N != 1 || d.Attempt != i {
			t.Fatalf("delivery %d: item %d attempt %d; want item 1 attempt %d", i, d.Value.N, d.Attempt, i)
		}
		if err := d.Release(ctx); err != nil {
			t.Fatalf("Release of delivery %d: %v", i, err)
		}
	}
	dead := deadDue(t, ctx, qb)
	if len(dead) != 1 || dead[0].Value.N != 1 || dead[0].Err != nil || dead[0].Moved.IsZero() {
		t.Fatalf("dead letters after %d releases = %+v; want item 1", n, dead)
	}
	if got, err := qb.Len(ctx); err != nil || got != 2 {
		t.Fatalf("Len = %d, %v; want 2 (items 2 and 3)", got, err)
	}
	d2 := takeDue(t, ctx, qb)
	if d2.Value.N != 2 || d2.Attempt != 1 {
		t.Fatalf("took item %d attempt %d; want item 2 attempt 1", d2.Value.N, d2.Attempt)
	}
	if err := d2.Release(ctx); err != nil {
		t.Fatal(err)
	}

	if err := dead[0].Requeue(ctx); err != nil {
		t.Fatal(err)
	}
	if err := dead[0].Requeue(ctx); !errors.Is(err, runtime.ErrNotHeld) {
		t.Fatalf("second Requeue = %v; want ErrNotHeld", err)
	}
	if ds := deadDue(t, ctx, qa); len(ds) != 0 {
		t.Fatalf("dead letters after Requeue = %d; want none", len(ds))
	}
	st, err := qa.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Len != 3 || !st.NextDue.Equal(ceilMilli(due1)) {
		t.Fatalf("Stats after Requeue: %d items, next due %v; want 3, next due %v (item 1's own due time)", st.Len, st.NextDue, ceilMilli(due1))
	}
	if j, ok, err := qa.Peek(ctx); err != nil || !ok || j.N != 1 {
		t.Fatalf("Peek after Requeue = %+v, %v, %v; want item 1", j, ok, err)
	}
	for _, want := range []int{1, 2} {
		d := takeDue(t, ctx, qa)
		if d.Value.N != want || d.Attempt != want {
			t.Fatalf("took item %d attempt %d; want item %d attempt %d", d.Value.N, d.Attempt, want, want)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := qa.Len(ctx); err != nil || got != 1 {
		t.Fatalf("Len = %d, %v; want 1 (item 3, not due)", got, err)
	}
	for _, sub := range []string{"claims", "attempts", "dead"} {
		if kids := childrenOf(t, sb, dir+"/"+sub); len(kids) != 0 {
			t.Errorf("%s/%s left with %v", dir, sub, kids)
		}
	}
}

// The claim, the move to the dead letters and the Requeue of a delay queue
// item are each one multi whose reply is lost to a cut connection: the
// claim counts once, the move leaves the item in the dead letters only,
// and the Requeue leaves it in the queue only, once, due at its own due
// time.
func TestDelayQueueDeadLetterLostReplies(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	f := newFaulty(t, srv)
	q := runtime.NewAckDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(2))
	obs := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job]())
	due := wall(time.Now().Add(-time.Minute))
	if err := obs.Put(ctx, job{N: 7}, due); err != nil {
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
	dead := deadDue(t, ctx, q)
	if len(dead) != 1 || dead[0].Value.N != 7 {
		t.Fatalf("dead letters = %+v; want item 7 once", dead)
	}
	if err := f.inject(t, ctx, srv, zktest.OpMulti, cut, nil, func() error { return dead[0].Requeue(ctx) }); err != nil {
		t.Fatalf("Requeue whose reply was lost: %v", err)
	}
	st, err := obs.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Len != 1 || !st.NextDue.Equal(ceilMilli(due)) {
		t.Fatalf("Stats after the Requeue: %d items, next due %v; want 1, due %v", st.Len, st.NextDue, ceilMilli(due))
	}
	if ds := deadDue(t, ctx, q); len(ds) != 0 {
		t.Fatalf("dead letters after the Requeue = %d; want none", len(ds))
	}
	d := takeDue(t, ctx, obs)
	if d.Value.N != 7 || d.Attempt != 1 {
		t.Fatalf("requeued item %d attempt %d; want 7, attempt 1", d.Value.N, d.Attempt)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}

// Attempts of a delay queue item count across expired consumers: with
// dead_letter_after: 2, the item two consumers took before their sessions
// expired is moved by the third consumer's Take when it claims it, and that
// Take returns the item due next instead.
func TestDelayQueueDeadLetterAcrossExpiredConsumers(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	opts := []runtime.QueueOption{runtime.WithDeadLetterAfter(2)}
	qc := runtime.NewAckDelayQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[job](), opts...)
	now := wall(time.Now())
	if err := qc.Put(ctx, job{N: 2}, now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := qc.Put(ctx, job{N: 1}, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		f := newFaulty(t, srv)
		q := runtime.NewAckDelayQueue(f.s, runtime.At(dir), runtime.JSONCodec[job](), opts...)
		d := takeDue(t, ctx, q)
		if d.Value.N != 1 || d.Attempt != i {
			t.Fatalf("consumer %d: item %d attempt %d; want item 1 attempt %d", i, d.Value.N, d.Attempt, i)
		}
		f.expire(t, srv)
		<-f.s.Done()
	}
	d := takeDue(t, ctx, qc)
	if d.Value.N != 2 || d.Attempt != 1 {
		t.Fatalf("third consumer: item %d attempt %d; want item 2 attempt 1 (item 1 dead-lettered)", d.Value.N, d.Attempt)
	}
	if dead := deadDue(t, ctx, qc); len(dead) != 1 || dead[0].Value.N != 1 {
		t.Fatalf("dead letters = %+v; want item 1", dead)
	}
}
