package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// An Ack whose multi reached the server and took effect, whose reply was
// lost to a cut connection, and whose session then expired before the
// client could reconnect, cannot know whether it took effect. It must not
// say ErrClaimLost, which promises that nothing changed and that the item
// will be delivered again: here the item is gone, consumed. (Seen in
// TestPartitionQueues: a consumer cut off with its server was told
// ErrClaimLost, and the item was never delivered again.) It reports the
// session's end instead.
func TestAckQueueAckLostReplyThenExpiry(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a := newFaulty(t, srv)
	sb := connect(t, srv.Servers())
	qa := runtime.NewAckQueue(a.s, runtime.At(dir), runtime.JSONCodec[job]())
	qb := runtime.NewAckQueue(sb, runtime.At(dir), runtime.JSONCodec[job]())
	if err := qb.Put(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	da, err := qa.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = a.inject(t, ctx, srv, zktest.OpMulti, cutThenExpire, nil, func() error { return da.Ack(ctx) })
	if n, lerr := qb.Len(ctx); lerr != nil || n != 0 {
		t.Fatalf("Len = %d, %v; want 0: the Ack's multi reached the server", n, lerr)
	}
	if errors.Is(err, runtime.ErrClaimLost) {
		t.Fatalf("Ack whose multi took effect, then the session expired = %v; ErrClaimLost says it changed nothing and the item will be delivered again", err)
	}
	if !errors.Is(err, runtime.ErrSessionExpired) {
		t.Fatalf("Ack = %v; want the session's end, ErrSessionExpired", err)
	}
}
