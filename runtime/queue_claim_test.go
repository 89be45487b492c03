package runtime_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// A Release whose delete reached the server but whose reply was lost is
// retried after the reconnection. Meanwhile another consumer may have
// claimed the item again, under the same claim name: the retry must not
// delete that claim, or a third consumer gets the item while the second,
// alive, holds it (seen in TestSoak, seed 1795393159586285507: "delivered to
// w3.1 while w4.1, whose session is alive, holds it").
func TestAckQueueReleaseRetryKeepsOthersClaim(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	srv, dir, a, sb, qb, da := claimedByA(t, ctx)
	var db *runtime.Delivery[job]
	var err error
	err = a.inject(t, ctx, srv, zktest.OpDelete, cutThenWrite, func() {
		// A's claim is gone on the server and A does not know it yet:
		// B claims the item under the same name.
		if db, err = qb.Take(ctx); err != nil {
			t.Fatal(err)
		}
	}, func() error { return da.Release(ctx) })
	if err != nil {
		t.Fatalf("Release after a lost reply = %v", err)
	}
	claims := childrenOf(t, sb, dir+"/claims")
	if len(claims) != 1 {
		t.Fatalf("claims = %v, want B's only: A's retried Release deleted B's claim", claims)
	}
	_, st, err := sb.Conn().Get(dir + "/claims/" + claims[0])
	if err != nil || st.EphemeralOwner != sb.ID() {
		t.Fatalf("claim %s: %v, owner 0x%x; want B's session 0x%x", claims[0], err, st.EphemeralOwner, sb.ID())
	}
	if err := db.Ack(ctx); err != nil {
		t.Fatalf("B's Ack = %v", err)
	}
}

// An operator may delete a claim by hand to free the item of a stuck
// consumer; the stuck consumer's Ack then returns ErrClaimLost, also when
// it is retried after a connection loss (docs/queues.md). Here A's Ack is
// lost before it reaches the server, and while A reconnects the item is
// freed, taken by B and acked: A's retry finds the item gone, which its
// own lost attempt did not do. Found by the search's reap-ackqueue
// workload (seed 135108343): A's Ack returned nil, the item acked twice.
func TestAckQueueAckRetryAfterHandFreedItemAcked(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	_, dir, a, sb, qb, da := claimedByA(t, ctx)
	a.p.Pause(true) // hold A's reconnection
	fired := a.p.CutBeforeRequest(zktest.OpMulti)
	got := make(chan error, 1)
	go func() { got <- da.Ack(ctx) }()
	select {
	case <-fired:
	case <-ctx.Done():
		t.Fatal("A's Ack never reached the proxy")
	}
	for _, c := range childrenOf(t, sb, dir+"/claims") { // the operator frees the item
		if err := sb.Conn().Delete(dir+"/claims/"+c, -1); err != nil {
			t.Fatal(err)
		}
	}
	db, err := qb.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ack(ctx); err != nil {
		t.Fatalf("B's Ack = %v", err)
	}
	a.p.Pause(false)
	if err := <-got; !errors.Is(err, runtime.ErrClaimLost) {
		t.Fatalf("A's Ack after B acked the item = %v, want ErrClaimLost", err)
	}
}

// claimedByA sets up an item claimed by consumer A, whose session runs
// through a faulty proxy, beside a plain consumer B: the server, the
// queue's path, A, B's session and queue handle, and A's delivery.
func claimedByA(t *testing.T, ctx context.Context) (*zktest.Server, string, faultyClient, *runtime.Session, *runtime.AckQueue[job], *runtime.Delivery[job]) {
	t.Helper()
	srv := server(t)
	dir := testRoot(t)
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
	return srv, dir, a, sb, qb, da
}

// An Ack's marker lingers only until the handle's next Ack or a moment
// later (docs/queues.md): a handle that acks and then idles keeps no node
// under <dir>/marks while its session lives.
func TestAckQueueIdleHandleKeepsNoAckMarker(t *testing.T) {
	ctx := testCtx(t, time.Minute)
	_, dir, a, sb, _, da := claimedByA(t, ctx)
	if err := da.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	waitChildren(t, ctx, sb, dir+"/marks", 0)
	if err := a.s.Err(); err != nil {
		t.Fatalf("A's session ended (%v): its markers went with it, proving nothing", err)
	}
}
