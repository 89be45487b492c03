package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A consumer stalled between taking the last item of a sealed bucket and
// dropping that bucket re-creates the bucket's successor after other
// consumers have drained and deleted it: an empty open bucket below the
// live ones, where every new consumer then waits for ever.
func TestQueueLaggingConsumerRecreatesBucket(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, time.Minute)
	p := runtime.At(testRoot(t)).Lit("q")
	px := zktest.NewProxy(t, srv.Addr())
	a := runtime.NewQueue(connect(t, viaProxy(px)), p, runtime.StringCodec(), runtime.WithBucketSize(1))
	b := runtime.NewQueue(connect(t, srv.Servers()), p, runtime.StringCodec(), runtime.WithBucketSize(1))
	if err := b.Put(ctx, "x1"); err != nil { // b-0 sealed with x1, b-1 open
		t.Fatal(err)
	}
	// a's take multi reaches the server, then a is cut off and held.
	px.Pause(true)
	fired := px.CutAfterRequest(zktest.OpMulti)
	got := make(chan error, 1)
	go func() { _, err := a.Take(ctx); got <- err }()
	<-fired
	// Meanwhile b drains b-0 and b-1.
	if err := b.Put(ctx, "x2"); err != nil { // b-1 sealed with x2, b-2 open
		t.Fatal(err)
	}
	if v, err := b.Take(ctx); err != nil || v != "x2" {
		t.Fatalf("b took %q, %v", v, err)
	}
	obs := connect(t, srv.Servers())

	px.Pause(false)
	if err := <-got; err != nil {
		t.Fatalf("a's take: %v", err)
	}

	if err := b.Put(ctx, "x3"); err != nil {
		t.Fatal(err)
	}
	c := runtime.NewQueue(connect(t, srv.Servers()), p, runtime.StringCodec(), runtime.WithBucketSize(1))
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	v, err := c.Take(tctx)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a fresh consumer cannot take x3: buckets %v", childrenOf(t, obs, p.String()))
	}
	if err != nil || v != "x3" {
		t.Fatalf("c took %q, %v", v, err)
	}
}
