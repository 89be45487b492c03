package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// A consumer whose listing is stale claims an item another consumer has
// acked meanwhile. The claim must not count a delivery of the gone item: an
// attempts node created then is persistent, and if the consumer's session
// ends before it cleans up (TestPartitionQueues saw it: a consumer cut off
// from the majority), the node is left for ever. The claim multi checks
// that the item exists, so it creates nothing for a gone item.
func TestClaimOfGoneItemCreatesNothing(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Connect(ctx, srv.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := NewAckQueue(s, At("/q"), StringCodec())
	if err := q.Put(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	buckets, _, err := s.Conn().Children("/q")
	if err != nil {
		t.Fatal(err)
	}
	var item string
	for _, b := range buckets {
		if !strings.HasPrefix(b, bucketPrefix) {
			continue // marks, claims, attempts: not a bucket
		}
		if kids, _, err := s.Conn().Children("/q/" + b); err == nil && len(kids) == 1 {
			item = "/q/" + b + "/" + kids[0]
		}
	}
	if item == "" {
		t.Fatalf("no item found under /q: %v", buckets)
	}
	d, err := q.Take(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// The stale consumer's claim of the acked item.
	claim := joinPath(joinPath(q.q.dir, claimsDir), q.q.claimName(item))
	ok, _, err := q.q.createClaim(ctx, joinPath(q.q.dir, claimsDir), claim, item)
	if ok || !errors.Is(err, errItemGone) {
		t.Fatalf("claim of a gone item = %v, %v; want false, errItemGone", ok, err)
	}
	for _, p := range []string{claim, q.q.attemptsPath(claim)} {
		if _, _, err := s.Conn().Get(p); !errors.Is(err, zk.ErrNoNode) {
			t.Errorf("%s after claiming a gone item: %v, want no node", p, err)
		}
	}
}
