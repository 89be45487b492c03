package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime"
)

// claimsOf lists a queue's claims or fails the test.
func claimsOf(t *testing.T, ctx context.Context, list func(context.Context) ([]runtime.Claim, error)) []runtime.Claim {
	t.Helper()
	cs, err := list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// wantClaims checks claims against want: item, session and attempt, in
// order, each with a claim time.
func wantClaims(t *testing.T, got []runtime.Claim, want ...runtime.Claim) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		g, w := got[i], want[i]
		ok = g.Item == w.Item && g.Session == w.Session && g.Attempt == w.Attempt && !g.Since.IsZero()
	}
	if !ok {
		t.Fatalf("claims\n got %+v\nwant %+v", got, want)
	}
}

// Claims lists the items consumers hold now, the longest held first, each
// with its consumer's session and its delivery's Attempt (a release
// counts, a give-back does not); an acked item and a closed session's
// claims are gone from it.
func TestQueueClaims(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	a, b := connect(t, srv.Servers()), connect(t, srv.Servers())
	qa := runtime.NewAckQueue(a, runtime.At(dir), runtime.JSONCodec[job]())
	qb := runtime.NewAckQueue(b, runtime.At(dir), runtime.JSONCodec[job]())
	wantClaims(t, claimsOf(t, ctx, qa.Claims)) // no claims directory yet
	if _, err := qa.PutAll(ctx, []job{{N: 1}, {N: 2}}); err != nil {
		t.Fatal(err)
	}
	d1, d2 := takeOne(t, ctx, qa), takeOne(t, ctx, qb)
	wantClaims(t, claimsOf(t, ctx, qb.Claims),
		runtime.Claim{Item: d1.Node(), Session: a.ID(), Attempt: 1},
		runtime.Claim{Item: d2.Node(), Session: b.ID(), Attempt: 1})

	// Item 1 released and taken again by b (the one item free): its second
	// delivery, claimed after item 2's.
	if err := d1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again := takeOne(t, ctx, qb)
	if again.Node() != d1.Node() {
		t.Fatalf("took %s after the release, want %s", again.Node(), d1.Node())
	}
	wantClaims(t, claimsOf(t, ctx, qa.Claims),
		runtime.Claim{Item: d2.Node(), Session: b.ID(), Attempt: 1},
		runtime.Claim{Item: d1.Node(), Session: b.ID(), Attempt: 2})

	// Item 2 given back and taken by a: still its first delivery.
	if err := d2.GiveBack(ctx); err != nil {
		t.Fatal(err)
	}
	if d := takeOne(t, ctx, qa); d.Node() != d2.Node() {
		t.Fatalf("took %s after the give-back, want %s", d.Node(), d2.Node())
	}
	if err := again.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	wantClaims(t, claimsOf(t, ctx, qb.Claims), runtime.Claim{Item: d2.Node(), Session: a.ID(), Attempt: 1})
	a.Close()
	wantClaims(t, claimsOf(t, ctx, qb.Claims))
}

// A priority queue's Claims lists the claims of every priority.
func TestAckPriorityQueueClaims(t *testing.T) {
	srv := server(t)
	dir := testRoot(t)
	ctx := testCtx(t, time.Minute)
	s := connect(t, srv.Servers())
	q := runtime.NewAckPriorityQueue(s, runtime.At(dir), runtime.StringCodec(), 2)
	if err := q.Put(ctx, 1, "low"); err != nil {
		t.Fatal(err)
	}
	low, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Put(ctx, 0, "high"); err != nil {
		t.Fatal(err)
	}
	high, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantClaims(t, claimsOf(t, ctx, q.Claims),
		runtime.Claim{Item: low.Node(), Session: s.ID(), Attempt: 1},
		runtime.Claim{Item: high.Node(), Session: s.ID(), Attempt: 1})
}
