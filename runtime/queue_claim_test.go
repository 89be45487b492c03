package runtime_test

import (
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
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a := newFaulty(t, srv)
	sb := connect(t, srv.Servers())
	qa := runtime.NewAckQueue(a.s, runtime.At(dir), runtime.JSONCodec[job]())
	qb := runtime.NewAckQueue(sb, runtime.At(dir), runtime.JSONCodec[job]())
	if err := qa.Put(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	da, err := qa.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var db *runtime.Delivery[job]
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
