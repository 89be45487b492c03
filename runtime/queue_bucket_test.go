package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// An at-least-once consumer that moved past a sealed bucket whose items
// were claimed by another consumer tries to drop that bucket later. If the
// other consumer has dropped that bucket and its successor meanwhile, the
// late drop must not create the successor again: a re-created bucket is
// open and empty, below the one producers put into, and consumers that walk
// from the lowest bucket (as they do after a claim vanishes) would wait on
// it forever.
func TestAckQueueLateBucketDrop(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 30*time.Second)
	dir := testRoot(t)
	opt := runtime.WithBucketSize(1)
	codec := runtime.JSONCodec[int]()
	p := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), codec, opt)
	a := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), codec, opt)
	b := runtime.NewAckQueue(connect(t, srv.Servers()), runtime.At(dir), codec, opt)
	check := connect(t, srv.Servers())

	// b-0: [1], b-1: [2], both sealed; b-2 open.
	for v := 1; v <= 2; v++ {
		if err := p.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	db, err := b.Take(ctx) // claims 1 in b-0
	if err != nil || db.Value != 1 {
		t.Fatalf("b: Take = %v, %v; want 1", db, err)
	}
	da, err := a.Take(ctx) // skips 1 (claimed), leaves b-0 to drop later, takes 2
	if err != nil || da.Value != 2 {
		t.Fatalf("a: Take = %v, %v; want 2", da, err)
	}
	for _, d := range []*runtime.Delivery[int]{db, da} {
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// b walks on: it drops b-0 and b-1 and waits on b-2.
	bctx, cancel := context.WithCancel(ctx)
	bdone := make(chan error, 1)
	go func() {
		_, err := b.Take(bctx)
		bdone <- err
	}()
	waitChildren(t, ctx, check, dir, 4) // b-0000000002, claims, attempts, marks
	cancel()
	if err := <-bdone; !errors.Is(err, context.Canceled) {
		t.Fatalf("b: Take = %v, want context.Canceled", err)
	}

	// a drops b-0 late; the next item must still reach it.
	if err := p.Put(ctx, 3); err != nil {
		t.Fatal(err)
	}
	d, err := a.Take(ctx)
	if err != nil {
		for _, k := range childrenOf(t, check, dir) {
			data, _, _ := check.Conn().Get(dir + "/" + k)
			t.Logf("%s data=%q children=%v", k, data, childrenOf(t, check, dir+"/"+k))
		}
		t.Fatalf("a: Take: %v (waiting on a re-created bucket?)", err)
	}
	if d.Value != 3 {
		t.Fatalf("a: Take = %d, want 3", d.Value)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
}
