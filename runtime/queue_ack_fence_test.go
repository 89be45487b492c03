package runtime_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// An operator deletes consumer A's claim by hand while A works on the item,
// and consumer B claims the item anew under the same claim name. A's Ack
// must not consume the item B now holds: it returns ErrClaimLost and
// deletes nothing; B's Ack then consumes it. (Found by the search's
// reap-ackqueue workload, seed 7075: A's Ack deleted B's claim and the
// item, and both Acks returned nil.)
func TestAckAfterClaimTakenAgainConsumesNothing(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	sa, sb, op := connect(t, srv.Servers()), connect(t, srv.Servers()), connect(t, srv.Servers())
	qa := runtime.NewAckQueue(sa, runtime.At(dir), runtime.JSONCodec[job]())
	qb := runtime.NewAckQueue(sb, runtime.At(dir), runtime.JSONCodec[job]())
	if err := qa.Put(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	da, err := qa.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claims := childrenOf(t, op, dir+"/claims")
	if len(claims) != 1 {
		t.Fatalf("claims = %v, want A's", claims)
	}
	if err := op.Conn().Delete(dir+"/claims/"+claims[0], -1); err != nil { // the operator
		t.Fatal(err)
	}
	db, err := qb.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if db.Node() != da.Node() {
		t.Fatalf("B took %s, want A's item %s", db.Node(), da.Node())
	}
	if err := da.Ack(ctx); !errors.Is(err, runtime.ErrClaimLost) {
		t.Fatalf("A's Ack after its claim was taken again = %v, want ErrClaimLost", err)
	}
	if ok, _, err := op.Conn().Exists(da.Node()); err != nil || !ok {
		t.Fatalf("item after A's Ack: exists %v (%v); want it there, B's", ok, err)
	}
	if err := db.Ack(ctx); err != nil {
		t.Fatalf("B's Ack = %v", err)
	}
	if ok, _, err := op.Conn().Exists(da.Node()); err != nil || ok {
		t.Fatalf("item after B's Ack: exists %v (%v); want it consumed", ok, err)
	}
}
