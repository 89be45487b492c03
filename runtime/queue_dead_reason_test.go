package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// A dead letter keeps why its item died: the error of the Nack that moved
// it, or Consume's function's error, or that its last consumer's session
// ended; a plain Release keeps none. Requeue and Discard remove the reason
// with the dead letter; a reason whose dead letter a zkgen that keeps none
// removed is removed by the next listing.
func TestQueueDeadLetterReasons(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	q := runtime.NewAckQueue(s, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(1))
	if _, err := q.PutAll(ctx, []job{{N: 1}, {N: 2}, {N: 3}, {N: 4}}); err != nil {
		t.Fatal(err)
	}
	// 1: nacked with a reason; 2: released without one.
	if err := takeOne(t, ctx, q).Nack(ctx, errors.New("bad payload: unexpected EOF")); err != nil {
		t.Fatal(err)
	}
	if err := takeOne(t, ctx, q).Release(ctx); err != nil {
		t.Fatal(err)
	}
	// 3: Consume's function fails; the consumer stops after it.
	cctx, cancel := context.WithCancel(ctx)
	err := q.Consume(cctx, func(context.Context, job) error {
		cancel()
		return errors.New("handler: downstream refused")
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	// 4: its consumer's session ends while it holds it; the next take moves it.
	other := connect(t, srv.Servers())
	oq := runtime.NewAckQueue(other, runtime.At(dir), runtime.JSONCodec[job](), runtime.WithDeadLetterAfter(1))
	if d := takeOne(t, ctx, oq); d.Value.N != 4 {
		t.Fatalf("took %d, want 4", d.Value.N)
	}
	other.Close()
	tctx, tcancel := context.WithTimeout(ctx, time.Second)
	if d, err := q.Take(tctx); d != nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("take after the consumer's end: %v, %v (want nothing: item 4 is dead)", d, err)
	}
	tcancel()

	ds := deadLetters(t, ctx, q)
	got := map[int]string{}
	for _, d := range ds {
		got[d.Value.N] = d.Reason
	}
	if len(ds) != 4 || got[1] != "bad payload: unexpected EOF" || got[2] != "" || got[3] != "handler: downstream refused" ||
		!strings.Contains(got[4], "session ended") {
		t.Fatalf("reasons %v", got)
	}
	for _, d := range ds {
		var err error
		switch d.Value.N {
		case 1:
			err = d.Requeue(ctx)
		case 3:
			err = d.Discard(ctx)
		case 4: // as a zkgen that keeps no reasons discards: the node alone
			err = s.Delete(ctx, d.Node())
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	left := deadLetters(t, ctx, q) // also removes item 4's stray reason
	if len(left) != 1 || left[0].Value.N != 2 {
		t.Fatalf("dead letters left %v", left)
	}
	if rs := childrenOf(t, s, dir+"/dead-reasons"); len(rs) != 0 {
		t.Errorf("reason nodes left: %v", rs)
	}
	if d := takeOne(t, ctx, q); d.Value.N != 1 || d.Attempt != 1 {
		t.Fatalf("requeued item: %d attempt %d", d.Value.N, d.Attempt)
	}
}
