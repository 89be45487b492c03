package runtime_test

import (
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A put whose reply is lost while ZooKeeper stays unreachable for longer
// than the retry policy's attempts take is resolved once ZooKeeper is back,
// while its session lives: it is not reported uncertain. The policy here
// gives up after two attempts (go-zookeeper fails the requests queued while
// it is disconnected each time it has tried every server, about once a
// second); the outage lasts 4 s, well within the session's life (it gives
// up at 35% of 30 s). Before, the marker lookup
// that resolves the put was bounded by the policy, and the put failed with
// ErrPutUncertain (as takes and puts did in TestQueueEnsembleFailover when
// a quorum took longer than about 9 s to come back).
func TestQueueUncertainPutOutlastsRetryPolicy(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	px := zktest.NewProxy(t, srv.Addr())
	s := shortPolicySession(t, px)
	q := runtime.NewQueue(s, runtime.At(dir), runtime.JSONCodec[int]())
	if err := q.Put(ctx, 0); err != nil { // the queue's nodes exist: the next put is one multi
		t.Fatal(err)
	}
	outageAfter(ctx, px, zktest.OpMulti)
	if err := q.Put(ctx, 1); err != nil {
		t.Fatalf("Put across an outage longer than the retry policy: %v", err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("session ended: %v", err)
	}
	admin := runtime.NewQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int]())
	if n, err := admin.Len(ctx); err != nil || n != 2 {
		t.Fatalf("Len = %d, %v; want 2 (the put applied once)", n, err)
	}
}

// An Ack sent while ZooKeeper is unreachable for longer than the retry
// policy's attempts take succeeds once ZooKeeper is back, while its session
// lives (its doc: connection losses are retried; only the session's end
// makes it fail). Before, it failed after the policy's attempts, leaving
// the item claimed by a live session (TestAckQueueEnsembleFailover, 8 s
// without quorum).
func TestAckOutlastsRetryPolicy(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	dir := testRoot(t)
	px := zktest.NewProxy(t, srv.Addr())
	q := runtime.NewAckQueue(shortPolicySession(t, px), runtime.At(dir), runtime.JSONCodec[int]())
	if err := q.Put(ctx, 7); err != nil {
		t.Fatal(err)
	}
	d, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	px.Reject(true)
	px.CutAll()
	go func() {
		select {
		case <-time.After(4 * time.Second): // the outage's length, not a synchronisation
		case <-ctx.Done():
		}
		px.Reject(false)
	}()
	if err := d.Ack(ctx); err != nil {
		t.Fatalf("Ack across an outage longer than the retry policy: %v", err)
	}
	admin := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), runtime.JSONCodec[int]())
	if n, err := admin.Len(ctx); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0 (acked)", n, err)
	}
}
